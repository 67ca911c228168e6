//go:build cgo

package vulkan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	vk "github.com/vulkan-go/vulkan"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/kv"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Loaded is a model on a Vulkan device: weights uploaded once and the
// activation buffers of a forward pass, shared by every Runner made from
// it. A Runner holds only its KV cache (on the device) and its logits, so
// making one uploads no weights. A whole pass is recorded into one command
// buffer and the logits are read back at the end; when hooks listen, the
// pass is split at the stage boundaries and each watched stage's tensors
// are read back, so observers see the numbers the GPU computed. Passes of
// one Loaded's runners take turns.
type Loaded struct {
	mu      sync.Mutex
	own     bool // close the device with the model
	closed  bool
	f       *fwd
	runners map[*Runner]bool // open runners: Close frees their caches before the device goes
}

// fwd is the shared part of a Loaded model: weights, activations and the
// descriptor sets of the dispatches that do not touch a KV cache. cur is
// the Runner whose pass is being recorded.
type fwd struct {
	d     *Device
	m     *model.Model
	cfg   *model.Config
	ctx   int // the most KV-cache positions a Runner may hold
	batch int
	cur   *Runner

	w        map[*model.Tensor]*wbuf
	vec      map[*model.Tensor]*buffer
	ids      *buffer // token ids, then position ids
	x, xn    *buffer
	xr       *buffer // a product's input rounded to 8 bits (RoundX), as the CPU rounds it
	qkv      *buffer
	q, k, v  *buffer
	scores   *buffer
	scores2  *buffer // a copy of the scores before softmax, for hooks
	att, o   *buffer
	ffA      *buffer
	ffB      *buffer
	ffUp     *buffer // a fused gate-up product (phi3), 2×FFN a row; nil otherwise
	ropeF    *buffer // RoPE frequency factors; params when the model has none
	gate     *buffer // pre-activation copy, for hooks
	last     *buffer
	logits   *buffer
	posIDs   *buffer
	params   *buffer // the fused path's position (uint32)
	editV    *buffer // the current pass's intervention vectors, end to end
	editOff  []int   // where each edit's vector starts in editV
	posBytes [4]byte // what params is written from, kept so a step allocates nothing
	// logitsHost receives a decode step's logits inside its recorded
	// command buffer when logits is not mapped (a discrete GPU), so a step
	// is one submission, not a second for the readback
	logitsHost *buffer
	fused      bool // passes without hooks take the fused path
	unfused    bool // a test's switch: every pass unfused
	// dispatches is how many dispatches the last pass recorded or replayed
	dispatches int
	sets       map[site]vk.DescriptorSet
	idBytes    []byte
	h          *hooks.Hooks
	iv         *intervene.Set // the current pass's edits, or nil
}

// Runner is one sequence's state on a Loaded model: its KV cache (device
// buffers per layer), the position reached and the logits read back. A
// Runner is not safe for concurrent use; the runners of one Loaded may be
// used from different goroutines.
type Runner struct {
	l      *Loaded
	own    bool // NewOwnedRunner made l for this runner alone
	ctx    int  // KV-cache positions
	pos    int
	kc, vc []*buffer
	sets   map[site]vk.DescriptorSet // the dispatches that read or write kc, vc
	host   []float32                 // logits read back
	rec    *recorded                 // the fused decode step, recorded on first use
	edits  *intervene.Set            // applied to every pass (SetEdits); nil: none
}

// wbuf is a weight matrix on the device: rows from row0 of buffer b (one
// buffer holds a layer's Q, K and V end to end, and its gate and up, so
// the fused path reads each group as one matrix).
type wbuf struct {
	b    *buffer
	typ  string
	row0 int
}

// supported are the ways a model may differ from llama (model.Features)
// that the Vulkan passes compute; Load refuses a model with any other.
var supported = map[string]bool{"learned-positions": true, "layernorm": true, "fused-qkv": true, "qkv-bias": true,
	"head-size": true, "neox-rope": true, "gelu": true, "tied-output": true, "rope-factors": true,
	"embed-scale": true, "qk-norm": true, "rope-scaling": true, "sliding-window": true, "local-rope": true, "attn-scale": true,
	"attn-softcap": true, "post-norms": true, "geglu": true, "fused-gate-up": true, "final-softcap": true, "logit-bias": true}

// Load uploads m's weights to d and allocates the activations of a pass
// for runners of at most ctxLen positions (0: the model's, at most 2048).

func Load(d *Device, m *model.Model, ctxLen int) (*Loaded, error) {
	c := m.Config
	if ctxLen <= 0 {
		ctxLen = min(c.ContextLen, 2048)
	}
	if m.Spec.PosEmbd && ctxLen > c.ContextLen {
		return nil, fmt.Errorf("context %d exceeds the model's %d learned positions", ctxLen, c.ContextLen)
	}
	for _, ft := range m.Features() {
		if !supported[ft.Key] {
			return nil, fmt.Errorf("this %s model has %s, which the Vulkan backend does not compute yet", c.Arch, ft.Name)
		}
	}
	f := &fwd{d: d, m: m, cfg: c, ctx: ctxLen, batch: min(128, ctxLen), w: map[*model.Tensor]*wbuf{}, vec: map[*model.Tensor]*buffer{}, sets: map[site]vk.DescriptorSet{}}
	l := &Loaded{f: f}
	if err := f.alloc(); err != nil {
		f.free()
		return nil, err
	}
	f.fused = f.canFuse()
	return l, nil
}

func (r *fwd) alloc() (err error) {
	c, W, B, d := r.cfg, r.m.Weights, r.batch, r.d
	nb := func(floats int) *buffer {
		if err != nil {
			return nil
		}
		var b *buffer
		b, err = d.NewBuffer(4 * floats)
		return b
	}
	QD, KVD, E, F := c.QDim(), c.KVDim(), c.Embd, c.FFN
	r.ids, r.posIDs = nb(B), nb(B)
	r.x, r.xn = nb(B*E), nb(B*E)
	r.xr = nb(B * max(E, QD, F))
	r.qkv = nb(B * (QD + 2*KVD))
	r.q, r.k, r.v = nb(B*QD), nb(B*KVD), nb(B*KVD)
	r.scores, r.scores2 = nb(B*c.Heads*r.ctx), nb(B*c.Heads*r.ctx)
	r.att, r.o = nb(B*QD), nb(B*E)
	r.ffA, r.ffB, r.gate = nb(B*F), nb(B*F), nb(B*F)
	if r.m.Spec.FFN == model.SwiGLUFused {
		r.ffUp = nb(B * 2 * F)
	}
	r.last = nb(E)
	r.logits = nb(B * c.Vocab)
	r.params = nb(4)
	r.editV = nb(intervene.MaxEdits * max(E, QD))
	if err == nil && r.logits.ptr == nil {
		r.logitsHost, err = d.newHostBuffer(4 * c.Vocab)
	}
	if err != nil {
		return err
	}
	// upload puts matrices in one buffer end to end (the caller checked
	// they share a type and a row length).
	upload := func(ts ...*model.Tensor) error {
		var datas [][]byte
		size := 0
		typ := shaderType(ts[0].Type)
		for _, t := range ts {
			data := t.Data
			if typ == "" { // other types are decoded to F32 once, at upload
				f := make([]float32, t.Rows()*t.Cols())
				if err := quant.Dequantize(t.Type, t.Data, f); err != nil {
					return err
				}
				data = f32bytes(f)
			}
			datas = append(datas, data)
			size += len(data)
		}
		if typ == "" {
			typ = "f32"
		}
		b, err := d.NewBuffer(size)
		if err != nil {
			return fmt.Errorf("vulkan: upload %s: %w", ts[0].Name, err)
		}
		off, row := 0, 0
		for i, t := range ts {
			r.w[t] = &wbuf{b, typ, row}
			if err := d.write(b, off, datas[i]); err != nil {
				return err
			}
			off, row = off+len(datas[i]), row+t.Rows()
		}
		return nil
	}
	// uploadGroup uploads ts together when they can share a buffer, else
	// one by one (nil and already uploaded tensors skipped).
	uploadGroup := func(ts ...*model.Tensor) error {
		together := true
		for _, t := range ts {
			together = together && t != nil && r.w[t] == nil && shaderType(t.Type) == shaderType(ts[0].Type) && t.Cols() == ts[0].Cols()
		}
		if together {
			return upload(ts...)
		}
		for _, t := range ts {
			if t != nil && r.w[t] == nil {
				if err := upload(t); err != nil {
					return err
				}
			}
		}
		return nil
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
		return d.writeF32(b, 0, f)
	}
	for _, t := range []*model.Tensor{W.TokEmbd, W.PosEmbd, W.OutputMatrix()} {
		if err := uploadGroup(t); err != nil {
			return err
		}
	}
	for _, t := range []*model.Tensor{W.OutNorm, W.OutNormB, W.OutputB} {
		if err := vector(t); err != nil {
			return err
		}
	}
	r.ropeF = r.params
	if t := W.RopeFactors(c, r.ctx); t != nil {
		if err := vector(t); err != nil {
			return err
		}
		r.ropeF = r.vec[t]
	}
	for i := range W.Layers {
		L := &W.Layers[i]
		for _, ts := range [][]*model.Tensor{{L.Q, L.K, L.V}, {L.QKV}, {L.Out}, {L.Gate, L.Up}, {L.Down}} {
			if err := uploadGroup(ts...); err != nil {
				return err
			}
		}
		for _, t := range []*model.Tensor{L.AttnNorm, L.AttnNormB, L.FFNNorm, L.FFNNormB, L.QB, L.KB, L.VB, L.QKVB, L.OutB, L.GateB, L.UpB, L.DownB,
			L.QNorm, L.KNorm, L.PostNorm, L.FFNPost} {
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

// kvSites are the dispatches that read or write a Runner's KV cache; their
// descriptor sets belong to the Runner.
var kvSites = map[string]bool{"kv k": true, "kv v": true, "scores": true, "attn out": true, "qkv post": true, "attn fused": true}

// set returns the cached descriptor set for a dispatch site.
func (r *fwd) set(key site, bufs ...*buffer) vk.DescriptorSet {
	sets := r.sets
	if kvSites[key.name] {
		sets = r.cur.sets
	}
	if s, ok := sets[key]; ok {
		return s
	}
	s, err := r.d.newSet(bufs...)
	if err != nil {
		panic(err) // pools grow on demand; only device loss ends here
	}
	sets[key] = s
	return s
}

// free releases the weights and activations.
func (r *fwd) free() {
	freed := map[*buffer]bool{}
	for _, b := range r.w {
		if !freed[b.b] {
			b.b.free()
			freed[b.b] = true
		}
	}
	for _, b := range r.vec {
		b.free()
	}
	for _, b := range []*buffer{r.ids, r.posIDs, r.x, r.xn, r.xr, r.qkv, r.q, r.k, r.v, r.scores, r.scores2, r.att, r.o, r.ffA, r.ffB, r.ffUp, r.gate, r.last, r.logits, r.params, r.editV, r.logitsHost} {
		b.free()
	}
}

// Close frees the device buffers, every open runner's cache included (and
// the device when Load's caller gave it up with Own). Runners made from l
// answer model.ErrClosed after.
func (l *Loaded) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for r := range l.runners {
		r.free()
	}
	l.runners = nil
	l.f.free()
	if l.own {
		l.f.d.Close()
	}
}

// Own makes l close its device when it is closed.
func (l *Loaded) Own() { l.own = true }

// device is the device l runs on.
func (l *Loaded) device() *Device { return l.f.d }

// model is the model l was loaded from.
func (l *Loaded) model() *model.Model { return l.f.m }

// Context is the most positions one of its runners may hold.
func (l *Loaded) Context() int { return l.f.ctx }

// NewRunner makes a runner with an empty KV cache of ctx positions (0: the
// Loaded's context) on the device.
func (l *Loaded) NewRunner(ctx int) (*Runner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, model.ErrClosed
	}
	f := l.f
	if ctx <= 0 {
		ctx = f.ctx
	}
	if ctx > f.ctx {
		return nil, fmt.Errorf("context %d exceeds the %d positions this model was loaded for", ctx, f.ctx)
	}
	r := &Runner{l: l, ctx: ctx, sets: map[site]vk.DescriptorSet{}}
	KVD := f.cfg.KVDim()
	for range f.cfg.Layers {
		k, err := f.d.NewBuffer(4 * ctx * KVD)
		if err != nil {
			r.free()
			return nil, err
		}
		r.kc = append(r.kc, k)
		v, err := f.d.NewBuffer(4 * ctx * KVD)
		if err != nil {
			r.free()
			return nil, err
		}
		r.vc = append(r.vc, v)
	}
	if l.runners == nil {
		l.runners = map[*Runner]bool{}
	}
	l.runners[r] = true
	return r, nil
}

// free releases the runner's cache and descriptor sets (l.mu held).
func (r *Runner) free() {
	for _, b := range append(r.kc, r.vc...) {
		b.free()
	}
	r.kc, r.vc = nil, nil
	r.rec.free()
	r.rec = nil
	sets := make([]vk.DescriptorSet, 0, len(r.sets))
	for _, s := range r.sets {
		sets = append(sets, s)
	}
	r.l.f.d.freeSets(sets...)
	r.sets = map[site]vk.DescriptorSet{}
}

// Close frees the runner's KV cache (and its Loaded model when
// NewOwnedRunner made it).
func (r *Runner) Close() {
	func() {
		r.l.mu.Lock()
		defer r.l.mu.Unlock()
		if !r.l.closed && r.l.runners[r] {
			delete(r.l.runners, r)
			r.free()
		}
	}()
	if r.own {
		r.l.Close()
	}
}

// loaded is the shared model this runner computes on.
func (r *Runner) loaded() *Loaded { return r.l }

// device is the device this runner uses.
func (r *Runner) device() *Device { return r.l.f.d }

// Pos, Capacity and Reset implement engine.Backend.
func (r *Runner) Pos() int      { return r.pos }
func (r *Runner) Capacity() int { return r.ctx }
func (r *Runner) Reset()        { r.pos = 0 }

// Truncate forgets positions from n on (rolling back tokens).
func (r *Runner) Truncate(n int) { r.pos = max(0, min(r.pos, n)) }

// CopyStateFrom makes r continue from where src is: the first src.Pos()
// rows of every layer's keys and values are copied on the device.
func (r *Runner) CopyStateFrom(src *Runner) error {
	if src.l != r.l {
		return errors.New("copy state: runners of different loaded models")
	}
	if src.pos > r.ctx {
		return fmt.Errorf("copy state: %d positions do not fit a cache of %d", src.pos, r.ctx)
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return model.ErrClosed
	}
	if src.pos > 0 {
		c, err := l.f.d.Begin()
		if err != nil {
			return err
		}
		n := 4 * src.pos * l.f.cfg.KVDim()
		for i := range r.kc {
			c.copy(src.kc[i], r.kc[i], 0, 0, n)
			c.copy(src.vc[i], r.vc[i], 0, 0, n)
		}
		if err := c.submit(); err != nil {
			return err
		}
	}
	r.pos = src.pos
	return nil
}

// Fork makes a runner on the same Loaded model that continues from where
// r is, with its own copy of the KV cache.
func (r *Runner) Fork() (*Runner, error) {
	f, err := r.l.NewRunner(r.ctx)
	if err != nil {
		return nil, err
	}
	if err := f.CopyStateFrom(r); err != nil {
		f.Close()
		return nil, err
	}
	f.edits = r.edits
	return f, nil
}

// SetEdits makes set (checked against the model; nil or empty: none) the
// edits of every later pass of r until the next SetEdits.
func (r *Runner) SetEdits(set *intervene.Set) error {
	set, err := set.Checked(r.l.f.cfg.EditShape())
	if err == nil {
		r.edits = set
	}
	return err
}

// Forward implements engine.Backend, with the runner's edits (SetEdits).
// Hooks in ctx are called while the pass holds the Loaded model, so they
// must not run passes themselves.
func (r *Runner) Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, model.ErrClosed
	}
	f := l.f
	f.cur = r
	defer func() { f.cur = nil }()
	return f.forward(ctx, tokens, all)
}

func (r *fwd) forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	cur := r.cur
	if len(tokens) == 0 {
		return nil, errors.New("forward: no tokens")
	}
	if cur.pos+len(tokens) > cur.ctx {
		return nil, fmt.Errorf("forward: %d tokens at position %d: %w (%d positions)", len(tokens), cur.pos, kv.ErrContextFull, cur.ctx)
	}
	for i, id := range tokens {
		if id < 0 || int(id) >= r.cfg.Vocab {
			return nil, fmt.Errorf("forward: token %d (at %d) is outside the vocabulary of %d", id, i, r.cfg.Vocab)
		}
	}
	r.h, r.iv = hooks.From(ctx), cur.edits
	defer func() { r.h, r.iv = nil, nil }()
	if err := r.uploadEdits(); err != nil {
		return nil, err
	}
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
		if cap(cur.host) < rows*V {
			cur.host = make([]float32, rows*V)
		}
		host := cur.host[:rows*V]
		pass := r.pass
		// the fused path for decode steps and short chunks; a longer chunk's
		// products go through the tiled shader on the unfused path
		if r.fused && r.h == nil && r.iv == nil && !r.unfused && len(chunk) < tiledMinVectors {
			pass = r.passFused
		}
		if err := pass(chunk, all, host); err != nil {
			return nil, err
		}
		if all {
			copy(out[start*V:], host)
		}
	}
	if all {
		return out, nil
	}
	return cur.host[:V], nil
}

// newRunner loads m on d for one runner alone; closing the runner frees
// the model's buffers but leaves d open.
func newRunner(d *Device, m *model.Model, ctxLen int) (*Runner, error) {
	l, err := Load(d, m, ctxLen)
	if err != nil {
		return nil, err
	}
	r, err := l.NewRunner(0)
	if err != nil {
		l.Close()
		return nil, err
	}
	r.own = true
	return r, nil
}

// newOwnedRunner is NewRunner for a device the runner then owns: closing
// the runner closes the model and d.
func newOwnedRunner(d *Device, m *model.Model, ctxLen int) (*Runner, error) {
	r, err := newRunner(d, m, ctxLen)
	if err != nil {
		return nil, err
	}
	r.l.Own()
	return r, nil
}
