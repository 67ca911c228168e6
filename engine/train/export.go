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

// Writer returns a GGUF writer with the model under llama.cpp's gpt2 keys
// and tensor names (output tied to token_embd), and the tokenizer.
func (m *Model) Writer(name string, v *tokenizer.Vocab) (*gguf.Writer, error) {
	c, l := m.C, m.L
	E, F := c.Embd, c.FFN
	w := gguf.NewWriter()
	w.MustSet("general.architecture", "gpt2")
	w.MustSet("general.name", name)
	w.MustSet("general.file_type", uint32(0))
	w.MustSet("gpt2.context_length", uint32(c.Ctx))
	w.MustSet("gpt2.embedding_length", uint32(E))
	w.MustSet("gpt2.block_count", uint32(c.Layers))
	w.MustSet("gpt2.feed_forward_length", uint32(F))
	w.MustSet("gpt2.attention.head_count", uint32(c.Heads))
	w.MustSet("gpt2.attention.layer_norm_epsilon", float32(lnEps))
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
	var err error
	add := func(name string, off int, dims ...uint64) {
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		if err == nil {
			err = w.AddF32(name, quant.F32, dims, m.W[off:off+n])
		}
	}
	add("token_embd.weight", l.wte, uint64(E), uint64(c.Vocab))
	add("position_embd.weight", l.wpe, uint64(E), uint64(c.Ctx))
	for i, o := range l.layers {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", o.ln1g, uint64(E))
		add(p+"attn_norm.bias", o.ln1b, uint64(E))
		add(p+"attn_qkv.weight", o.wqkv, uint64(E), uint64(3*E))
		add(p+"attn_qkv.bias", o.bqkv, uint64(3*E))
		add(p+"attn_output.weight", o.wo, uint64(E), uint64(E))
		add(p+"attn_output.bias", o.bo, uint64(E))
		add(p+"ffn_norm.weight", o.ln2g, uint64(E))
		add(p+"ffn_norm.bias", o.ln2b, uint64(E))
		add(p+"ffn_up.weight", o.wup, uint64(E), uint64(F))
		add(p+"ffn_up.bias", o.bup, uint64(F))
		add(p+"ffn_down.weight", o.wdown, uint64(F), uint64(E))
		add(p+"ffn_down.bias", o.bdown, uint64(E))
	}
	add("output_norm.weight", l.lnfg, uint64(E))
	add("output_norm.bias", l.lnfb, uint64(E))
	return w, err
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
	for _, v := range m.W {
		if math.IsNaN(float64(v)) {
			return 0, fmt.Errorf("%s: NaN parameters", path)
		}
	}
	opt.Step = int(hdr[6])
	return hdr[7], nil
}
