package cli

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/sample"
	"stepthrough/engine/speculative"
	"stepthrough/engine/trace"
	"stepthrough/spec"
)

func runTokenize(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "tokenize", "--model PATH --text TEXT [--no-bos] [--pieces]")
	path := fs.String("model", "", "GGUF model `file`")
	text := fs.String("text", "", "text to tokenize (special-token text is not parsed)")
	noBOS := fs.Bool("no-bos", false, "do not add BOS even if the model asks for it")
	pieces := fs.Bool("pieces", false, "print one token per line: id, bytes, byte span, vocabulary piece")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	vf, err := model.LoadVocab(*path) // tokenizing needs no weights
	if err != nil {
		return err
	}
	defer vf.Close()
	tk := vf.Tokenizer
	toks := tk.Encode(*text, !*noBOS)
	w := bufio.NewWriter(env.Stdout)
	defer w.Flush()
	if !*pieces {
		ids := make([]string, len(toks))
		for i, t := range toks {
			ids[i] = strconv.Itoa(int(t.ID))
		}
		fmt.Fprintln(w, strings.Join(ids, " "))
		return nil
	}
	for _, t := range toks {
		note := ""
		if t.Added {
			note = "\tadded"
		}
		fmt.Fprintf(w, "%d\t%s\t%d:%d\t%q%s\n", t.ID, strconv.Quote(string(tk.Bytes(t.ID))), t.Start, t.End, tk.Piece(t.ID), note)
	}
	return nil
}

func runLogits(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "logits", "--model PATH --prompt TEXT (--out FILE | --lens) [--ablate L4H5] [--steer-layer L --steer-toward TEXT --steer-away TEXT] [--patch L3@5 --patch-from TEXT]")
	path := fs.String("model", "", "GGUF model `file`")
	prompt := fs.String("prompt", "", "prompt text (BOS added when the model asks for it)")
	out := fs.String("out", "", "output `file`: little-endian float32 [prompt tokens][vocab]")
	lens := fs.Bool("lens", false, "print the logit lens as JSON: every layer's top tokens at every position, and the final prediction's rank there")
	ef := addEditFlags(fs)
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	backend := backendFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	if !*lens {
		if err := required("out", *out); err != nil {
			return err
		}
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	ids := m.Tokenizer.EncodeIDs(*prompt, true)
	if len(ids) == 0 {
		return fmt.Errorf("the prompt has no tokens")
	}
	edits, err := ef.read(m)
	if err != nil {
		return err
	}
	s, err := newSession(env, m, engine.Options{Threads: *threads, Backend: *backend})
	if err != nil {
		return err
	}
	defer s.Close()
	if edits, err = ef.edited(ctx, s, edits, len(ids)); err != nil {
		return err
	}
	var lh lensHook
	if *lens {
		ctx = hooks.WithHooks(ctx, lh.hooks())
	}
	logits, err := s.EvalAll(ctx, ids)
	if err != nil {
		return err
	}
	if *lens {
		if len(lh.rows) == 0 {
			return fmt.Errorf("--lens: the %s backend computed no lens", s.Backend().Name)
		}
		return lh.write(env.Stdout, m, ids, edits.String())
	}
	buf := make([]byte, 4*len(logits))
	for i, v := range logits {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(*out, buf, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, joinIDs(ids))
	return nil
}

// backendFlag registers --backend.
func backendFlag(fs *flag.FlagSet) *string {
	return fs.String("backend", "auto", "auto (a GPU through Vulkan if present, else the CPU), cpu, or vulkan (any Vulkan device, lavapipe included)")
}

// newSession opens a session and reports a fallback to the CPU as one
// line on stderr.
func newSession(env Env, m *model.Model, opt engine.Options) (*engine.Session, error) {
	if err := checkBackend(opt.Backend); err != nil {
		return nil, err
	}
	s, err := engine.NewSession(m, opt)
	if err != nil {
		return nil, err
	}
	if note := s.Backend().Note; note != "" && opt.Backend == "vulkan" {
		fmt.Fprintln(env.Stderr, oneLine(note))
	}
	return s, nil
}

func checkBackend(b string) error {
	for _, ok := range engine.Backends {
		if b == ok {
			return nil
		}
	}
	return usageError{fmt.Errorf("invalid backend %q: must be auto, cpu or vulkan", b)}
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, " ")
}

// samplerFlags registers the sampler settings on fs (llama.cpp's
// defaults), through the run spec's flag codec.
func samplerFlags(fs *flag.FlagSet) func() (sample.Params, error) {
	get := spec.Flags(fs)
	return func() (sample.Params, error) {
		p, err := get()
		if err != nil {
			return p, usageError{err}
		}
		return p, nil
	}
}

func runGenerate(ctx context.Context, env Env, args []string) (err error) {
	fs := newFlags(env, "generate", "--model PATH --prompt TEXT -n N [--ids] [sampler flags] [--trace FILE] [--ablate L4H5] [--steer-layer L --steer-toward TEXT --steer-away TEXT] [--patch L3@5 --patch-from TEXT] [--draft PATH [--draft-k K] [--draft-adaptive]]")
	path := fs.String("model", "", "GGUF model `file`")
	prompt := fs.String("prompt", "", "prompt text (BOS added when the model asks for it)")
	n := fs.Int("n", 64, "tokens to generate")
	ids := fs.Bool("ids", false, "print the generated token ids instead of text")
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	tracePath := fs.String("trace", "", "write a trace of every step to this `file` as JSON lines")
	draftPath := fs.String("draft", "", "speculative decoding with this draft model `file` (same tokenizer), or self:N (the model's own first N layers): acceptance statistics on stderr")
	ef := addEditFlags(fs)
	draftK := fs.Int("draft-k", 4, "tokens the draft proposes per round (1 to 16)")
	adaptive := fs.Bool("draft-adaptive", false, "grow k after a round that kept every proposal, shrink it after one that kept fewer than half")
	backend := backendFlag(fs)
	params := samplerFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	if *draftPath != "" && (*draftK < 1 || *draftK > speculative.MaxK) {
		return usageError{fmt.Errorf("--draft-k must be 1 to %d, got %d", speculative.MaxK, *draftK)}
	}
	if *n < 0 {
		return usageError{fmt.Errorf("-n must be at least 0, got %d", *n)}
	}
	sp, err := params()
	if err != nil {
		return err
	}
	smp, err := sample.New(sp)
	if err != nil {
		return usageError{err}
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	edits, err := ef.read(m)
	if err != nil {
		return err
	}
	if edits != nil && *draftPath != "" {
		return usageError{fmt.Errorf("interventions run without a draft: choose one")}
	}
	s, err := newSession(env, m, engine.Options{Threads: *threads, Backend: *backend})
	if err != nil {
		return err
	}
	defer s.Close()
	tctx, traced, err := withTrace(ctx, *tracePath)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, traced()) }()
	p := s.Tokenize(tctx, *prompt, true)
	if len(p) == 0 {
		return fmt.Errorf("the prompt has no tokens and the model adds no BOS: give a --prompt")
	}
	if err := s.Fits(len(p), *n); err != nil { // before the interventions' passes
		return err
	}
	if _, err := ef.edited(ctx, s, edits, len(p)); err != nil {
		return err
	}
	ctx = tctx
	fmt.Fprintf(env.Stderr, "seed: %d\n", smp.Seed())
	w := bufio.NewWriter(env.Stdout)
	defer w.Flush()
	first := true
	emit := func(id int32) error {
		if *ids {
			if !first {
				w.WriteByte(' ')
			}
			first = false
			w.WriteString(strconv.Itoa(int(id)))
		} else {
			w.Write(m.Tokenizer.Bytes(id))
		}
		return w.Flush()
	}
	if *draftPath != "" {
		sp.Seed, sp.SeedSet = smp.Seed(), true
		err = generateSpeculative(ctx, env, s, *draftPath, sp, speculative.Options{K: *draftK, Adaptive: *adaptive}, engine.Options{Threads: *threads, Backend: *backend}, p, *n, emit)
	} else {
		err = s.Generate(ctx, p, *n, smp, emit)
	}
	w.WriteByte('\n')
	return err
}

// withTrace adds to ctx a recorder that writes every step to path as JSON
// lines (none for ""); done finishes the trace and reports its first
// error.
func withTrace(ctx context.Context, path string) (_ context.Context, done func() error, _ error) {
	if path == "" {
		return ctx, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--trace: %w", err)
	}
	bw := bufio.NewWriter(f)
	var traceErr error
	rec := trace.NewRecorder(trace.Full())
	rec.OnStep = func(st *trace.Step) {
		if traceErr == nil {
			traceErr = trace.WriteJSONL(bw, st)
		}
	}
	done = func() error {
		rec.Finish()
		return errors.Join(traceErr, bw.Flush(), f.Close())
	}
	return hooks.WithHooks(ctx, rec.Hooks()), done, nil
}

// generateSpeculative runs target session s with a draft model and prints
// what the draft achieved on stderr.
func generateSpeculative(ctx context.Context, env Env, s *engine.Session, draftPath string, p sample.Params, opt speculative.Options,
	eo engine.Options, prompt []int32, n int, emit func(int32) error) error {
	dm, err := speculative.LoadDraft(s.Model, draftPath)
	if err != nil {
		return err
	}
	defer dm.Close()
	ds, err := engine.NewSession(dm, eo)
	if err != nil {
		return fmt.Errorf("draft: %w", err)
	}
	defer ds.Close()
	d, err := speculative.New(s, ds, p, p, opt)
	if err != nil {
		return usageError{err}
	}
	start := time.Now()
	err = d.Generate(ctx, prompt, n, emit)
	st := d.Stats()
	fmt.Fprintf(env.Stderr, "\ndraft: %d rounds, %d proposed, %d accepted (%.1f%%), %.2f kept per round; %d tokens in %.1f ms (%.1f t/s); draft %.1f ms, verify %.1f ms\n",
		st.Rounds, st.Drafted, st.Accepted, 100*st.AcceptanceRate(), st.MeanAccepted(), st.Emitted, ms(time.Since(start)),
		float64(st.Emitted)/time.Since(start).Seconds(), ms(st.Draft), ms(st.Verify))
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func runSynth(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "synth", "--arch FAMILY --out FILE [shape flags] | --shape NAME --out FILE")
	o := model.SynthOptions{}
	shape := fs.String("shape", "", "a real model's shape: "+strings.Join(slices.Sorted(maps.Keys(model.Shapes)), ", ")+" (other flags given override it)")
	arch := fs.String("arch", "llama", "family: "+strings.Join(model.Architectures(), ", "))
	out := fs.String("out", "", "output GGUF `file`")
	fs.IntVar(&o.Embd, "embd", 288, "embedding width")
	fs.IntVar(&o.Layers, "layers", 6, "layers")
	fs.IntVar(&o.Heads, "heads", 6, "attention heads")
	fs.IntVar(&o.KVHeads, "kv-heads", 0, "key/value heads (0: same as heads)")
	fs.IntVar(&o.HeadDim, "head-dim", 0, "head size (0: width ÷ heads)")
	fs.IntVar(&o.FFN, "ffn", 768, "feed-forward width")
	fs.IntVar(&o.Vocab, "vocab", 32000, "vocabulary size")
	fs.IntVar(&o.Context, "ctx", 256, "context length")
	fs.IntVar(&o.Window, "window", 0, "sliding window of the local layers (gemma; 0: none)")
	fs.IntVar(&o.SWAPeriod, "swa-period", 0, "every Nth layer global, the rest local (gemma; 0: the family's)")
	rope := fs.Float64("rope-base", 0, "RoPE base (0: the family's default)")
	local := fs.Float64("local-base", 0, "RoPE base of local layers (gemma3)")
	typ := fs.String("type", "f32", "weight matrix type: f32, f16, bf16, q8_0, q4_0, q4_k, …")
	tied := fs.Bool("tied", false, "tie the output matrix to the token embedding")
	seed := fs.Uint64("seed", 1, "random seed")
	vocabFrom := fs.String("vocab-from", "", "copy the tokenizer of this GGUF `file` (its size replaces --vocab): a random draft for a real model")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("out", *out); err != nil {
		return err
	}
	o.RopeBase, o.LocalBase = float32(*rope), float32(*local)
	if *shape != "" {
		s, ok := model.Shapes[*shape]
		if !ok {
			return usageError{fmt.Errorf("--shape %q: want one of %s", *shape, strings.Join(slices.Sorted(maps.Keys(model.Shapes)), ", "))}
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		o = overrideShape(s, o, set)
		if !set["arch"] {
			*arch = s.Arch
		}
		if !set["tied"] {
			*tied = s.Tied
		}
	}
	if *vocabFrom != "" {
		vf, err := model.LoadVocab(*vocabFrom)
		if err != nil {
			return err
		}
		defer vf.Close()
		o.VocabFrom = vf.File
	}
	t, err := quant.ParseType(*typ)
	if err != nil {
		return usageError{err}
	}
	o.Arch, o.Type, o.Tied, o.Seed = *arch, t, *tied, *seed
	w, err := model.Synthesize(o)
	if err != nil {
		return err
	}
	return w.WriteFile(*out)
}

// overrideShape is shape s with the flags given on the command line taken
// from o.
func overrideShape(s, o model.SynthOptions, set map[string]bool) model.SynthOptions {
	for name, pair := range map[string][2]*int{
		"embd": {&s.Embd, &o.Embd}, "layers": {&s.Layers, &o.Layers}, "heads": {&s.Heads, &o.Heads}, "kv-heads": {&s.KVHeads, &o.KVHeads},
		"head-dim": {&s.HeadDim, &o.HeadDim}, "ffn": {&s.FFN, &o.FFN}, "vocab": {&s.Vocab, &o.Vocab}, "ctx": {&s.Context, &o.Context},
		"window": {&s.Window, &o.Window}, "swa-period": {&s.SWAPeriod, &o.SWAPeriod},
	} {
		if set[name] {
			*pair[0] = *pair[1]
		}
	}
	if set["rope-base"] {
		s.RopeBase = o.RopeBase
	}
	if set["local-base"] {
		s.LocalBase = o.LocalBase
	}
	return s
}
