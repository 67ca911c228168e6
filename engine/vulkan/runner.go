//go:build cgo

package vulkan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	vk "github.com/vulkan-go/vulkan"

	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Runner computes forward passes of one model on a Vulkan device: weights
// uploaded once, activations and the KV cache resident on the device, a
// whole pass recorded into one command buffer and the logits read back at
// the end. When hooks listen, the pass is split at the stage boundaries and
// each watched stage's tensors are read back, so observers see the
// numbers the GPU computed.
type Runner struct {
	d     *Device
	own   bool // close the device with the runner
	m     *model.Model
	cfg   *model.Config
	ctx   int // KV-cache positions
	batch int
	pos   int

	w       map[*model.Tensor]*wbuf
	vec     map[*model.Tensor]*Buffer
	ids     *Buffer // token ids, then position ids
	x, xn   *Buffer
	qkv     *Buffer
	q, k, v *Buffer
	scores  *Buffer
	scores2 *Buffer // a copy of the scores before softmax, for hooks
	att, o  *Buffer
	ffA     *Buffer
	ffB     *Buffer
	gate    *Buffer // pre-activation copy, for hooks
	last    *Buffer
	logits  *Buffer
	kc, vc  []*Buffer
	posIDs  *Buffer
	sets    map[site]vk.DescriptorSet
	host    []float32 // logits read back
	idBytes []byte
	h       *hooks.Hooks
}

type wbuf struct {
	b   *Buffer
	typ string
}

// NewRunner uploads m's weights to d and allocates activations and a KV
// cache of ctxLen positions (0: the model's, at most 2048).
func NewRunner(d *Device, m *model.Model, ctxLen int) (*Runner, error) {
	c := m.Config
	if ctxLen <= 0 {
		ctxLen = min(c.ContextLen, 2048)
	}
	if m.Spec.PosEmbd && ctxLen > c.ContextLen {
		return nil, fmt.Errorf("context %d exceeds the model's %d learned positions", ctxLen, c.ContextLen)
	}
	r := &Runner{d: d, m: m, cfg: c, ctx: ctxLen, batch: min(128, ctxLen), w: map[*model.Tensor]*wbuf{}, vec: map[*model.Tensor]*Buffer{}, sets: map[site]vk.DescriptorSet{}}
	if err := r.alloc(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Runner) alloc() (err error) {
	c, W, B, d := r.cfg, r.m.Weights, r.batch, r.d
	nb := func(floats int) *Buffer {
		if err != nil {
			return nil
		}
		var b *Buffer
		b, err = d.NewBuffer(4 * floats)
		return b
	}
	QD, KVD, E, F := c.QDim(), c.KVDim(), c.Embd, c.FFN
	r.ids, r.posIDs = nb(B), nb(B)
	r.x, r.xn = nb(B*E), nb(B*E)
	r.qkv = nb(B * (QD + 2*KVD))
	r.q, r.k, r.v = nb(B*QD), nb(B*KVD), nb(B*KVD)
	r.scores, r.scores2 = nb(B*c.Heads*r.ctx), nb(B*c.Heads*r.ctx)
	r.att, r.o = nb(B*QD), nb(B*E)
	r.ffA, r.ffB, r.gate = nb(B*F), nb(B*F), nb(B*F)
	r.last = nb(E)
	r.logits = nb(B * c.Vocab)
	for l := 0; l < c.Layers; l++ {
		r.kc, r.vc = append(r.kc, nb(r.ctx*KVD)), append(r.vc, nb(r.ctx*KVD))
	}
	if err != nil {
		return err
	}
	upload := func(t *model.Tensor) error {
		if t == nil || r.w[t] != nil {
			return nil
		}
		typ, data := ShaderType(t.Type), t.Data
		if typ == "" { // other types are decoded to F32 once, at upload
			f := make([]float32, t.Rows()*t.Cols())
			if err := quant.Dequantize(t.Type, t.Data, f); err != nil {
				return err
			}
			data, typ = f32bytes(f), "f32"
		}
		b, err := d.NewBuffer(len(data))
		if err != nil {
			return fmt.Errorf("vulkan: upload %s: %w", t.Name, err)
		}
		r.w[t] = &wbuf{b, typ}
		return d.Write(b, 0, data)
	}
	vector := func(t *model.Tensor) error {
		if t == nil || r.vec[t] != nil {
			return nil
		}
		f := make([]float32, t.Rows()*t.Cols())
		if err := quant.Dequantize(t.Type, t.Data, f); err != nil {
			return err
		}
		b, err := d.NewBuffer(4 * len(f))
		if err != nil {
			return err
		}
		r.vec[t] = b
		return d.WriteF32(b, 0, f)
	}
	for _, t := range []*model.Tensor{W.TokEmbd, W.PosEmbd, W.OutputMatrix()} {
		if err := upload(t); err != nil {
			return err
		}
	}
	for _, t := range []*model.Tensor{W.OutNorm, W.OutNormB} {
		if err := vector(t); err != nil {
			return err
		}
	}
	for i := range W.Layers {
		L := &W.Layers[i]
		for _, t := range []*model.Tensor{L.Q, L.K, L.V, L.QKV, L.Out, L.Gate, L.Up, L.Down} {
			if err := upload(t); err != nil {
				return err
			}
		}
		for _, t := range []*model.Tensor{L.AttnNorm, L.AttnNormB, L.FFNNorm, L.FFNNormB, L.QB, L.KB, L.VB, L.QKVB, L.OutB, L.GateB, L.UpB, L.DownB} {
			if err := vector(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func f32bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// site names a dispatch in the pass; each has one descriptor set.
type site struct {
	layer int
	name  string
}

// set returns the cached descriptor set for a dispatch site.
func (r *Runner) set(key site, bufs ...*Buffer) vk.DescriptorSet {
	if s, ok := r.sets[key]; ok {
		return s
	}
	s, err := r.d.NewSet(bufs...)
	if err != nil {
		panic(err) // pools grow on demand; only device loss ends here
	}
	r.sets[key] = s
	return s
}

// Close frees the device buffers (and the device when the runner owns it).
func (r *Runner) Close() {
	for _, b := range r.w {
		b.b.Free()
	}
	for _, b := range r.vec {
		b.Free()
	}
	for _, b := range append([]*Buffer{r.ids, r.posIDs, r.x, r.xn, r.qkv, r.q, r.k, r.v, r.scores, r.scores2, r.att, r.o, r.ffA, r.ffB, r.gate, r.last, r.logits}, append(r.kc, r.vc...)...) {
		b.Free()
	}
	if r.own {
		r.d.Close()
	}
}

// Device is the device this runner uses.
func (r *Runner) Device() *Device { return r.d }

// Pos, Capacity and Reset implement engine.Backend.
func (r *Runner) Pos() int      { return r.pos }
func (r *Runner) Capacity() int { return r.ctx }
func (r *Runner) Reset()        { r.pos = 0 }

// ErrContextFull is returned when a pass would exceed the cache.
var ErrContextFull = errors.New("context is full")

// Forward implements engine.Backend.
func (r *Runner) Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("forward: no tokens")
	}
	if r.pos+len(tokens) > r.ctx {
		return nil, fmt.Errorf("forward: %d tokens at position %d: %w (%d positions)", len(tokens), r.pos, ErrContextFull, r.ctx)
	}
	for i, id := range tokens {
		if id < 0 || int(id) >= r.cfg.Vocab {
			return nil, fmt.Errorf("forward: token %d (at %d) is outside the vocabulary of %d", id, i, r.cfg.Vocab)
		}
	}
	r.h = hooks.From(ctx)
	defer func() { r.h = nil }()
	V := r.cfg.Vocab
	var out []float32
	if all {
		out = make([]float32, len(tokens)*V)
	}
	for start := 0; start < len(tokens); start += r.batch {
		chunk := tokens[start:min(len(tokens), start+r.batch)]
		rows := 1
		if all {
			rows = len(chunk)
		}
		if cap(r.host) < rows*V {
			r.host = make([]float32, rows*V)
		}
		host := r.host[:rows*V]
		if err := r.pass(chunk, all, host); err != nil {
			return nil, err
		}
		if all {
			copy(out[start*V:], host)
		}
	}
	if all {
		return out, nil
	}
	return r.host[:V], nil
}

// NewOwnedRunner is NewRunner for a device the runner then owns and
// closes.
func NewOwnedRunner(d *Device, m *model.Model, ctxLen int) (*Runner, error) {
	r, err := NewRunner(d, m, ctxLen)
	if err != nil {
		return nil, err
	}
	r.own = true
	return r, nil
}
