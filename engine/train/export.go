package train

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

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
	return w, m.addTensors(w)
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

// tensorFunc is called with each parameter tensor's llama.cpp name, its
// offset in Model.W and its GGUF dimensions (innermost first).
type tensorFunc func(name string, off int, dims ...uint64)

// numel is the number of values of a tensor of these dimensions.
func numel(dims []uint64) int {
	n := 1
	for _, d := range dims {
		n *= int(d)
	}
	return n
}

// tensors calls f for every parameter tensor of the model's family, in
// file order.
func (m *Model) tensors(f tensorFunc) {
	if m.C.arch() == Qwen3 {
		m.qwen3Tensors(f)
		return
	}
	m.gpt2Tensors(f)
}

func (m *Model) gpt2Tensors(add tensorFunc) {
	c, l := m.C, m.L
	E, F := uint64(c.Embd), uint64(c.FFN)
	add("token_embd.weight", l.wte, E, uint64(c.Vocab))
	add("position_embd.weight", l.wpe, E, uint64(c.Ctx))
	for i, o := range l.layers {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", o.ln1g, E)
		add(p+"attn_norm.bias", o.ln1b, E)
		add(p+"attn_qkv.weight", o.wqkv, E, 3*E)
		add(p+"attn_qkv.bias", o.bqkv, 3*E)
		add(p+"attn_output.weight", o.wo, E, E)
		add(p+"attn_output.bias", o.bo, E)
		add(p+"ffn_norm.weight", o.ln2g, E)
		add(p+"ffn_norm.bias", o.ln2b, E)
		add(p+"ffn_up.weight", o.wup, E, F)
		add(p+"ffn_up.bias", o.bup, F)
		add(p+"ffn_down.weight", o.wdown, F, E)
		add(p+"ffn_down.bias", o.bdown, E)
	}
	add("output_norm.weight", l.lnfg, E)
	add("output_norm.bias", l.lnfb, E)
}

// qwen3Tensors names the fused Q/K/V rows as llama.cpp's separate
// attn_q, attn_k and attn_v.
func (m *Model) qwen3Tensors(add tensorFunc) {
	c, l := m.C, m.L
	E, F, D := uint64(c.Embd), uint64(c.FFN), uint64(c.Embd/c.Heads)
	add("token_embd.weight", l.wte, E, uint64(c.Vocab))
	for i, o := range l.layers {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", o.ln1g, E)
		add(p+"attn_q.weight", o.wqkv, E, E)
		add(p+"attn_k.weight", o.wqkv+int(E*E), E, E)
		add(p+"attn_v.weight", o.wqkv+int(2*E*E), E, E)
		add(p+"attn_q_norm.weight", o.qn, D)
		add(p+"attn_k_norm.weight", o.kn, D)
		add(p+"attn_output.weight", o.wo, E, E)
		add(p+"ffn_norm.weight", o.ln2g, E)
		add(p+"ffn_gate.weight", o.wgate, E, F)
		add(p+"ffn_up.weight", o.wup, E, F)
		add(p+"ffn_down.weight", o.wdown, F, E)
	}
	add("output_norm.weight", l.lnfg, E)
}

// addTensors adds every parameter tensor to w as F32.
func (m *Model) addTensors(w *gguf.Writer) error {
	var err error
	m.tensors(func(name string, off int, dims ...uint64) {
		if err == nil {
			err = w.AddF32(name, quant.F32, dims, m.W[off:off+numel(dims)])
		}
	})
	return err
}

// Init sets every parameter from f, a model of this family and shape in
// F32 (one that Writer wrote, for example), so that training continues
// from it. It names the first tensor that is missing, of another type or
// of another shape.
func (m *Model) Init(f *gguf.File) error {
	var err error
	m.tensors(func(name string, off int, dims ...uint64) {
		if err != nil {
			return
		}
		t, ok := f.Tensor(name)
		switch {
		case !ok:
			err = fmt.Errorf("tensor %s: missing (this model is %s)", name, m.C)
		case t.Type != quant.F32:
			err = fmt.Errorf("tensor %s: type %s, want F32", name, t.Type)
		case !slices.Equal(t.Dims, dims):
			err = fmt.Errorf("tensor %s: dimensions %v, want %v (this model is %s)", name, t.Dims, dims, m.C)
		default:
			data := f.TensorData(t)
			for i := range m.W[off : off+numel(dims)] {
				m.W[off+i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		}
	})
	return err
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
