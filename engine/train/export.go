package train

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
	"stepthrough/engine/tokenizer"
)

// Writer returns a GGUF writer with the model under llama.cpp's keys and
// tensor names for its family (output tied to token_embd), and the
// tokenizer.
func (m *Model) Writer(name string, v *tokenizer.Vocab) (*gguf.Writer, error) {
	c := m.C
	a := c.arch()
	w := gguf.NewWriter()
	w.MustSet("general.architecture", a)
	w.MustSet("general.name", name)
	w.MustSet("general.file_type", uint32(0))
	w.MustSet(a+".context_length", uint32(c.Ctx))
	w.MustSet(a+".embedding_length", uint32(c.Embd))
	w.MustSet(a+".block_count", uint32(c.Layers))
	w.MustSet(a+".feed_forward_length", uint32(c.FFN))
	w.MustSet(a+".attention.head_count", uint32(c.Heads))
	if a == Qwen3 {
		D := c.Embd / c.Heads
		w.MustSet(a+".attention.head_count_kv", uint32(c.Heads))
		w.MustSet(a+".attention.key_length", uint32(D))
		w.MustSet(a+".attention.value_length", uint32(D))
		w.MustSet(a+".attention.layer_norm_rms_epsilon", float32(qwenRMSEps))
		w.MustSet(a+".rope.dimension_count", uint32(D))
		w.MustSet(a+".rope.freq_base", float32(qwenRopeBase))
	} else {
		w.MustSet(a+".attention.layer_norm_epsilon", float32(lnEps))
	}
	writeVocab(w, v)
	if a == Qwen3 {
		return w, m.addQwen3Tensors(w)
	}
	return w, m.addGPT2Tensors(w)
}

// writeVocab stores the byte-level BPE tokenizer.
func writeVocab(w *gguf.Writer, v *tokenizer.Vocab) {
	w.MustSet("tokenizer.ggml.model", "gpt2")
	pre := v.Pre
	if pre == "" {
		pre = "gpt-2"
	}
	w.MustSet("tokenizer.ggml.pre", pre)
	w.MustSet("tokenizer.ggml.tokens", v.Tokens)
	types := make([]int32, len(v.Types))
	for i, t := range v.Types {
		types[i] = int32(t)
	}
	w.MustSet("tokenizer.ggml.token_type", types)
	w.MustSet("tokenizer.ggml.merges", v.Merges)
	if v.BOS >= 0 {
		w.MustSet("tokenizer.ggml.bos_token_id", uint32(v.BOS))
		w.MustSet("tokenizer.ggml.eos_token_id", uint32(v.EOS))
		w.MustSet("tokenizer.ggml.add_bos_token", v.AddBOS)
	}
	if v.EOT >= 0 {
		w.MustSet("tokenizer.ggml.eot_token_id", uint32(v.EOT))
	}
	if v.ChatTemplate != "" {
		w.MustSet("tokenizer.chat_template", v.ChatTemplate)
	}
}

// tensorAdder adds F32 tensors from the model's parameters, keeping the
// first error.
type tensorAdder struct {
	w   *gguf.Writer
	m   *Model
	err error
}

func (t *tensorAdder) add(name string, off int, dims ...uint64) {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	if t.err == nil {
		t.err = t.w.AddF32(name, quant.F32, dims, t.m.W[off:off+n])
	}
}

func (m *Model) addGPT2Tensors(w *gguf.Writer) error {
	c, l := m.C, m.L
	E, F := uint64(c.Embd), uint64(c.FFN)
	t := &tensorAdder{w: w, m: m}
	t.add("token_embd.weight", l.wte, E, uint64(c.Vocab))
	t.add("position_embd.weight", l.wpe, E, uint64(c.Ctx))
	for i, o := range l.layers {
		p := fmt.Sprintf("blk.%d.", i)
		t.add(p+"attn_norm.weight", o.ln1g, E)
		t.add(p+"attn_norm.bias", o.ln1b, E)
		t.add(p+"attn_qkv.weight", o.wqkv, E, 3*E)
		t.add(p+"attn_qkv.bias", o.bqkv, 3*E)
		t.add(p+"attn_output.weight", o.wo, E, E)
		t.add(p+"attn_output.bias", o.bo, E)
		t.add(p+"ffn_norm.weight", o.ln2g, E)
		t.add(p+"ffn_norm.bias", o.ln2b, E)
		t.add(p+"ffn_up.weight", o.wup, E, F)
		t.add(p+"ffn_up.bias", o.bup, F)
		t.add(p+"ffn_down.weight", o.wdown, F, E)
		t.add(p+"ffn_down.bias", o.bdown, E)
	}
	t.add("output_norm.weight", l.lnfg, E)
	t.add("output_norm.bias", l.lnfb, E)
	return t.err
}

// addQwen3Tensors writes the fused Q/K/V rows as llama.cpp's separate
// attn_q, attn_k and attn_v.
func (m *Model) addQwen3Tensors(w *gguf.Writer) error {
	c, l := m.C, m.L
	E, F, D := uint64(c.Embd), uint64(c.FFN), uint64(c.Embd/c.Heads)
	t := &tensorAdder{w: w, m: m}
	t.add("token_embd.weight", l.wte, E, uint64(c.Vocab))
	for i, o := range l.layers {
		p := fmt.Sprintf("blk.%d.", i)
		t.add(p+"attn_norm.weight", o.ln1g, E)
		t.add(p+"attn_q.weight", o.wqkv, E, E)
		t.add(p+"attn_k.weight", o.wqkv+int(E*E), E, E)
		t.add(p+"attn_v.weight", o.wqkv+int(2*E*E), E, E)
		t.add(p+"attn_q_norm.weight", o.qn, D)
		t.add(p+"attn_k_norm.weight", o.kn, D)
		t.add(p+"attn_output.weight", o.wo, E, E)
		t.add(p+"ffn_norm.weight", o.ln2g, E)
		t.add(p+"ffn_gate.weight", o.wgate, E, F)
		t.add(p+"ffn_up.weight", o.wup, E, F)
		t.add(p+"ffn_down.weight", o.wdown, F, E)
	}
	t.add("output_norm.weight", l.lnfg, E)
	return t.err
}

const ckptMagic = "STCKPT01"

// SaveCheckpoint writes parameters, optimizer state and the step.
func SaveCheckpoint(path string, m *Model, opt *AdamW, seed uint64) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	hdr := []uint64{uint64(m.C.Vocab), uint64(m.C.Ctx), uint64(m.C.Embd), uint64(m.C.Layers), uint64(m.C.Heads), uint64(m.C.FFN), uint64(opt.Step), seed}
	io.WriteString(f, ckptMagic)
	binary.Write(f, binary.LittleEndian, hdr)
	for _, v := range [][]float32{m.W, opt.M, opt.V} {
		if err := binary.Write(f, binary.LittleEndian, v); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// LoadCheckpoint restores what SaveCheckpoint wrote into m and opt, which
// must have the same shape.
func LoadCheckpoint(path string, m *Model, opt *AdamW) (seed uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != ckptMagic {
		return 0, fmt.Errorf("%s: not a checkpoint", path)
	}
	hdr := make([]uint64, 8)
	if err := binary.Read(f, binary.LittleEndian, hdr); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	c := m.C
	if hdr[0] != uint64(c.Vocab) || hdr[1] != uint64(c.Ctx) || hdr[2] != uint64(c.Embd) || hdr[3] != uint64(c.Layers) || hdr[4] != uint64(c.Heads) || hdr[5] != uint64(c.FFN) {
		return 0, fmt.Errorf("%s: checkpoint of another model shape", path)
	}
	for _, v := range [][]float32{m.W, opt.M, opt.V} {
		if err := binary.Read(f, binary.LittleEndian, v); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return 0, fmt.Errorf("%s: checkpoint of another model family (longer than this model's state)", path)
	}
	for _, v := range m.W {
		if math.IsNaN(float64(v)) {
			return 0, fmt.Errorf("%s: NaN parameters", path)
		}
	}
	opt.Step = int(hdr[6])
	return hdr[7], nil
}
