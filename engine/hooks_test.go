package engine

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/reftest"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
)

// refTensors reads once-upon.tensors/index.tsv: (name, op) → float32 data.
func refTensors(t *testing.T) map[string][]float32 {
	dir := reftest.Path(t, "models", "stories260K", "once-upon.tensors")
	f, err := os.Open(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		seq, _ := strconv.Atoi(cols[0])
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%04d_%s.f32", seq, strings.ReplaceAll(cols[1], " ", "_"))))
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		key := cols[1] + "/" + cols[2]
		if _, dup := out[key]; !dup {
			out[key] = v
		}
	}
	return out
}

func assertClose(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, reference has %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol {
			t.Fatalf("%s[%d] = %g, llama.cpp %g", what, i, got[i], want[i])
		}
	}
}

// Each hook's data equals the matching tensor of llama.cpp's forward pass.
func TestHooksMatchReferenceTensors(t *testing.T) {
	m := stories(t)
	ref := refTensors(t)
	s, _ := NewSession(m, Options{Threads: 2})
	defer s.Close()
	const tol = 1e-4
	var seen []string
	h := &hooks.Hooks{
		OnEmbed: func(e hooks.Embed) {
			assertClose(t, "embed", e.Input, ref["embd/GET_ROWS"], tol)
			seen = append(seen, "embed")
		},
		OnAttention: func(a hooks.Attention) {
			l := a.Layer
			assertClose(t, fmt.Sprint("normed ", l), a.Normed, ref[fmt.Sprintf("attn_norm-%d/MUL", l)], tol)
			assertClose(t, fmt.Sprint("Q ", l), a.Q, ref[fmt.Sprintf("Qcur-%d/ROPE", l)], tol)
			assertClose(t, fmt.Sprint("K ", l), a.K, ref[fmt.Sprintf("Kcur-%d/ROPE", l)], tol)
			assertClose(t, fmt.Sprint("V ", l), a.V, ref[fmt.Sprintf("Vcur-%d/MUL_MAT", l)], tol)
			assertClose(t, fmt.Sprint("context ", l), a.Context, ref[fmt.Sprintf("kqv_out-%d/CONT", l)], tol)
			assertClose(t, fmt.Sprint("attn out ", l), a.Out, ref[fmt.Sprintf("attn_out-%d/MUL_MAT", l)], tol)
			// llama.cpp: [head][token][256 slots], raw q·k before the scale
			kq, sm := ref[fmt.Sprintf("kq-%d/MUL_MAT", l)], ref[fmt.Sprintf("kq_soft_max-%d/SOFT_MAX", l)]
			for tk := 0; tk < a.N; tk++ {
				for hd := 0; hd < a.Heads; hd++ {
					var sum float64
					for j := 0; j < a.Ctx; j++ {
						ours := (tk*a.Heads+hd)*a.Ctx + j
						theirs := (hd*a.N+tk)*256 + j
						w := a.Weights[ours]
						sum += float64(w)
						if j > a.Pos0+tk {
							if w != 0 || !math.IsInf(float64(a.Scores[ours]), -1) {
								t.Fatalf("layer %d token %d head %d: future position %d not masked", l, tk, hd, j)
							}
							continue
						}
						if math.Abs(float64(a.Scores[ours]-kq[theirs]*a.Scale)) > tol || math.Abs(float64(w-sm[theirs])) > tol {
							t.Fatalf("layer %d token %d head %d pos %d: score %g weight %g, llama.cpp %g %g", l, tk, hd, j, a.Scores[ours], w, kq[theirs]*a.Scale, sm[theirs])
						}
					}
					if math.Abs(sum-1) > 1e-5 {
						t.Fatalf("layer %d token %d head %d: weights sum to %g", l, tk, hd, sum)
					}
				}
			}
			seen = append(seen, "attention")
		},
		OnMLP: func(p hooks.MLP) {
			l := p.Layer
			assertClose(t, fmt.Sprint("ffn norm ", l), p.Normed, ref[fmt.Sprintf("ffn_norm-%d/MUL", l)], tol)
			assertClose(t, fmt.Sprint("gate ", l), p.Gate, ref[fmt.Sprintf("ffn_gate-%d/MUL_MAT", l)], tol)
			assertClose(t, fmt.Sprint("up ", l), p.Up, ref[fmt.Sprintf("ffn_up-%d/MUL_MAT", l)], tol)
			assertClose(t, fmt.Sprint("swiglu ", l), p.Act, ref[fmt.Sprintf("ffn_swiglu-%d/SWIGLU", l)], tol)
			assertClose(t, fmt.Sprint("ffn out ", l), p.Out, ref[fmt.Sprintf("ffn_out-%d/MUL_MAT", l)], tol)
			seen = append(seen, "mlp")
		},
		OnResidual: func(r hooks.Residual) {
			name := fmt.Sprintf("ffn_inp-%d/ADD", r.Layer)
			if r.After == "mlp" {
				name = fmt.Sprintf("l_out-%d/ADD", r.Layer)
			}
			assertClose(t, name, r.X, ref[name], tol)
			for tk := 0; tk < r.N; tk++ {
				var ss float64
				for _, v := range r.X[tk*64 : (tk+1)*64] {
					ss += float64(v) * float64(v)
				}
				if math.Abs(math.Sqrt(ss)-float64(r.Norms[tk])) > 1e-4 {
					t.Fatalf("residual norm %g, want %g", r.Norms[tk], math.Sqrt(ss))
				}
			}
			seen = append(seen, "residual")
		},
		OnKVAppend: func(k hooks.KVAppend) {
			assertClose(t, "kv K", k.K, ref[fmt.Sprintf("Kcur-%d/ROPE", k.Layer)], tol)
			if k.Len != 5 || k.BytesUsed != 5*m.KVBytesPerToken() {
				t.Errorf("kv append: len %d bytes %d", k.Len, k.BytesUsed)
			}
			seen = append(seen, "kv")
		},
		OnLogits: func(l hooks.Logits) {
			assertClose(t, "logits", l.Logits, ref["result_output/MUL_MAT"], tol)
			seen = append(seen, "logits")
		},
	}
	ctx := hooks.WithHooks(context.Background(), h)
	if _, err := s.EvalAll(ctx, s.Tokenize(ctx, "Once upon a time", true)); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"embed", "attention", "mlp", "residual", "kv", "logits"} {
		if !slices.Contains(seen, stage) {
			t.Errorf("hook for %s never fired", stage)
		}
	}
}

// allHooks records into throwaway buffers from every hook.
func allHooks(sink *int) *hooks.Hooks {
	touch := func(v []float32) {
		if len(v) > 0 {
			*sink += int(v[len(v)-1]) & 1
		}
	}
	return &hooks.Hooks{
		OnTokenize:    func(e hooks.Tokenize) { *sink += len(e.Tokens) },
		OnEmbed:       func(e hooks.Embed) { touch(e.Input) },
		OnAttention:   func(a hooks.Attention) { touch(a.Weights); touch(a.Scores); touch(a.Q) },
		OnMLP:         func(p hooks.MLP) { touch(p.Act) },
		OnResidual:    func(r hooks.Residual) { touch(r.Norms) },
		OnKVAppend:    func(k hooks.KVAppend) { touch(k.V) },
		OnLogits:      func(l hooks.Logits) { touch(l.Logits) },
		OnSamplerStep: func(r sample.StepResult) { *sink += len(r.After) },
		OnSample:      func(d sample.DrawResult) { *sink += int(d.Chosen) },
		OnTiming:      func(tm hooks.Timing) { *sink += int(tm.Dur) & 1 },
		OnGeneration:  func(g hooks.Generation) { *sink += g.Generated },
	}
}

// Hooks do not change the numbers: logits are bit-identical with every
// hook installed, and a seeded generation picks the same tokens.
func TestHooksDoNotChangeNumbers(t *testing.T) {
	m := stories(t)
	run := func(ctx context.Context) ([]float32, []int32) {
		s, _ := NewSession(m, Options{Threads: 2})
		defer s.Close()
		ids := s.Tokenize(ctx, "Once upon a time, Lily", true)
		all, err := s.EvalAll(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		all = slices.Clone(all)
		s.Reset()
		p := sample.Defaults()
		p.Seed, p.SeedSet = 99, true
		smp, _ := sample.New(p)
		var gen []int32
		if err := s.Generate(ctx, ids, 20, smp, func(id int32) error { gen = append(gen, id); return nil }); err != nil {
			t.Fatal(err)
		}
		return all, gen
	}
	var sink int
	plainLogits, plainGen := run(context.Background())
	hookedLogits, hookedGen := run(hooks.WithHooks(context.Background(), allHooks(&sink)))
	for i := range plainLogits {
		if math.Float32bits(plainLogits[i]) != math.Float32bits(hookedLogits[i]) {
			t.Fatalf("logit %d differs with hooks: %g vs %g", i, plainLogits[i], hookedLogits[i])
		}
	}
	if !slices.Equal(plainGen, hookedGen) {
		t.Errorf("generation differs with hooks:\n%v\n%v", plainGen, hookedGen)
	}
	if sink == 0 {
		t.Error("hooks never ran")
	}
}

func TestHooksCompose(t *testing.T) {
	var order []string
	ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{OnLogits: func(hooks.Logits) { order = append(order, "outer") }})
	ctx = hooks.WithHooks(ctx, &hooks.Hooks{OnLogits: func(hooks.Logits) { order = append(order, "inner") }, OnEmbed: func(hooks.Embed) { order = append(order, "embed") }})
	s, _ := NewSession(stories(t), Options{Threads: 1})
	defer s.Close()
	s.Eval(ctx, []int32{1})
	if !slices.Equal(order, []string{"embed", "inner", "outer"}) {
		t.Errorf("hook order %v", order)
	}
}

// The session's own hooks: the tokenize stage, every step of the sampler
// chain, each draw, the generation's times and a timing event per stage of
// every forward pass.
func TestSamplerAndGenerationHooks(t *testing.T) {
	m := stories(t)
	s, _ := NewSession(m, Options{Threads: 2})
	defer s.Close()
	var steps []sample.Step
	var draws []sample.DrawResult
	var gen hooks.Generation
	var timings int
	var tok hooks.Tokenize
	ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{
		OnTokenize: func(e hooks.Tokenize) {
			tok = e
			tok.Tokens = slices.Clone(e.Tokens)
			tok.Bytes = nil
			for _, b := range e.Bytes {
				tok.Bytes = append(tok.Bytes, slices.Clone(b))
			}
		},
		OnSamplerStep: func(r sample.StepResult) { steps = append(steps, r.Step) },
		OnSample:      func(d sample.DrawResult) { d.Candidates = slices.Clone(d.Candidates); draws = append(draws, d) },
		OnGeneration:  func(g hooks.Generation) { gen = g },
		OnTiming:      func(tm hooks.Timing) { timings++ },
	})
	p := sample.Defaults()
	p.Seed, p.SeedSet = 5, true
	smp, _ := sample.New(p)
	ids := s.Tokenize(ctx, "Once upon a time", true)
	var out []int32
	if err := s.Generate(ctx, ids, 4, smp, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}

	t.Run("tokenize", func(t *testing.T) {
		// an added BOS (no bytes, no span), then stories260K's four tokens
		want := hooks.Tokenize{
			Text: "Once upon a time",
			Tokens: []tokenizer.Token{
				{ID: 1, Added: true},
				{ID: 403, Start: 0, End: 4},
				{ID: 407, Start: 4, End: 9},
				{ID: 261, Start: 9, End: 11},
				{ID: 378, Start: 11, End: 16},
			},
			Bytes:    [][]byte{{}, []byte(" Once"), []byte(" upon"), []byte(" a"), []byte(" time")},
			AddedBOS: true,
		}
		if diff := cmp.Diff(want, tok, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("tokenize event (-want +got):\n%s", diff)
		}
		var evIDs []int32
		for _, tk := range tok.Tokens {
			evIDs = append(evIDs, tk.ID)
		}
		if diff := cmp.Diff(ids, evIDs); diff != "" {
			t.Errorf("the event's ids differ from Tokenize's (-returned +event):\n%s", diff)
		}
	})
	t.Run("sampler steps", func(t *testing.T) {
		var want []sample.Step
		for range out {
			want = append(want, sample.OrderLlamaCpp...)
		}
		if diff := cmp.Diff(want, steps); diff != "" {
			t.Errorf("sampler steps, the chain once per token (-want +got):\n%s", diff)
		}
	})
	t.Run("draws", func(t *testing.T) {
		var chosen []int32
		for i, d := range draws {
			chosen = append(chosen, d.Chosen)
			if d.Greedy || !(d.U >= 0 && d.U < 1) {
				t.Errorf("draw %d: greedy %v, u %v; want a random draw with u in [0, 1)", i, d.Greedy, d.U)
			}
		}
		if diff := cmp.Diff(out, chosen); diff != "" {
			t.Errorf("drawn tokens (-emitted +drawn):\n%s", diff)
		}
	})
	t.Run("generation", func(t *testing.T) {
		type counts struct{ PromptTokens, Generated, Emitted int }
		if diff := cmp.Diff(counts{5, 4, 4}, counts{gen.PromptTokens, gen.Generated, len(out)}); diff != "" {
			t.Errorf("generation counts (-want +got):\n%s", diff)
		}
		for _, c := range []struct {
			bound string
			ok    bool
		}{
			{"prefill > 0", gen.Prefill > 0},
			{"TTFT ≥ prefill", gen.TTFT >= gen.Prefill},
			{"TPOT > 0", gen.TPOT > 0},
			{"total ≥ TTFT", gen.Total >= gen.TTFT},
		} {
			if !c.ok {
				t.Errorf("generation times break %s: %+v", c.bound, gen)
			}
		}
	})
	t.Run("timing", func(t *testing.T) {
		// per forward pass (the prompt, then 3 tokens): embed, attention
		// and mlp per layer, output
		if want := 4 * (2 + 2*m.Config.Layers); timings != want {
			t.Errorf("%d timing events, want %d", timings, want)
		}
	})
}

// gpt2: the embed hook shows token rows, learned position rows and their sum.
func TestEmbedHookGPT2(t *testing.T) {
	m, err := model.Random(model.SynthOptions{Arch: "gpt2", Embd: 32, Layers: 1, Heads: 2, FFN: 64, Vocab: 600, Context: 16, Type: quant.F32})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSession(m, Options{Threads: 1})
	defer s.Close()
	var got hooks.Embed
	var kinds []string
	ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{
		OnEmbed: func(e hooks.Embed) {
			got = e
			got.Input = slices.Clone(e.Input)
			got.PosRows = slices.Clone(e.PosRows)
			got.TokenRows = slices.Clone(e.TokenRows)
		},
		OnMLP: func(p hooks.MLP) { kinds = append(kinds, p.Kind); _ = p.Up[0] },
	})
	s.Eval(ctx, []int32{5})
	s.Eval(ctx, []int32{7, 9})
	if got.Pos0 != 1 || got.N != 2 || len(got.PosRows) != 64 {
		t.Fatalf("embed event %+v", got)
	}
	tok := make([]float32, 32)
	quant.Dequantize(quant.F32, m.Weights.TokEmbd.Row(9), tok)
	pos := make([]float32, 32)
	quant.Dequantize(quant.F32, m.Weights.PosEmbd.Row(2), pos)
	for i := 0; i < 32; i++ {
		if got.TokenRows[32+i] != tok[i] || got.PosRows[32+i] != pos[i] || got.Input[32+i] != tok[i]+pos[i] {
			t.Fatalf("element %d: token %g pos %g input %g", i, got.TokenRows[32+i], got.PosRows[32+i], got.Input[32+i])
		}
	}
	if !slices.Equal(kinds, []string{"gelu", "gelu"}) {
		t.Errorf("mlp kinds %v", kinds)
	}
}
