package trace

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/reftest"
	"stepthrough/engine/sample"
)

func record(t *testing.T, opt Options, prompt string, n int) ([]*Step, []int32) {
	t.Helper()
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, _ := engine.NewSession(m, engine.Options{Threads: 2})
	defer s.Close()
	rec := NewRecorder(opt)
	ctx := hooks.WithHooks(context.Background(), rec.Hooks())
	p := sample.Defaults()
	p.Seed, p.SeedSet = 3, true
	smp, _ := sample.New(p)
	var out []int32
	if err := s.Generate(ctx, s.Tokenize(ctx, prompt, true), n, smp, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	rec.Finish()
	return rec.Steps(), out
}

func TestRecordGeneration(t *testing.T) {
	steps, out := record(t, Full(), "Once upon a time", 3)
	if len(steps) != 3 || steps[0].Kind != "prefill" || steps[1].Kind != "decode" || steps[0].N != 5 || steps[2].Pos0 != 6 {
		t.Fatalf("steps: %d, kinds %s %s", len(steps), steps[0].Kind, steps[1].Kind)
	}
	s0 := steps[0]
	if s0.Tokenize == nil || s0.Tokenize.Text != "Once upon a time" || string(s0.Tokenize.Tokens[1].Bytes) != " Once" {
		t.Errorf("tokenize %+v", s0.Tokenize)
	}
	if len(s0.Layers) != 5 || len(s0.Embed.Input) != 5 {
		t.Fatalf("layers %d, embed rows %d", len(s0.Layers), len(s0.Embed.Input))
	}
	for _, L := range s0.Layers {
		a := L.Attention
		for tk, perHead := range a.Weights {
			for h, w := range perHead {
				var sum float64
				for _, v := range w {
					sum += float64(v)
				}
				if len(w) != tk+1 || math.Abs(sum-1) > 1e-5 {
					t.Fatalf("layer %d token %d head %d: %d weights summing to %g", L.Index, tk, h, len(w), sum)
				}
			}
		}
		if L.KVLen != 5 || L.ResidMLP == nil || L.MLP.Kind != "swiglu" || len(L.NewK) != 5 {
			t.Errorf("layer %d record incomplete", L.Index)
		}
	}
	for i, s := range steps {
		if s.Sample == nil || s.Sample.Chosen != out[i] || len(s.Sampler) != len(sample.OrderLlamaCpp) || len(s.Logits.Logits) != 512 {
			t.Errorf("step %d: sampling record %+v", i, s.Sample)
		}
		for _, st := range s.Sampler {
			if st.BeforeCount-st.AfterCount != st.RemovedCount {
				t.Errorf("step %d %s: %d before, %d after, %d removed", i, st.Step, st.BeforeCount, st.AfterCount, st.RemovedCount)
			}
		}
	}
	if steps[2].Generation == nil || steps[2].Generation.Generated != 3 {
		t.Errorf("generation summary %+v", steps[2].Generation)
	}
	// top-k 40 of 512 removes 472 tokens; they are listed highest first
	tk := s0.Sampler[1]
	if tk.Step != sample.TopK || tk.RemovedCount != 472 || len(tk.Removed) != 64 || tk.Removed[0].Logit < tk.Removed[1].Logit {
		t.Errorf("top-k step %+v", tk.Step)
	}
}

func TestJSONRoundTripAndReplay(t *testing.T) {
	steps, _ := record(t, Full(), "Once upon a time", 2)
	var buf bytes.Buffer
	for _, s := range steps {
		if err := WriteJSONL(&buf, s); err != nil {
			t.Fatal(err)
		}
	}
	back, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, steps) {
		a, _ := json.Marshal(steps[0].Layers[0].Attention.Scores)
		b, _ := json.Marshal(back[0].Layers[0].Attention.Scores)
		t.Fatalf("round trip differs\n%s\n%s", a, b)
	}
	c := &Cursor{Steps: back}
	var names []string
	for {
		_, st := c.Current()
		names = append(names, string(st.Name))
		if !c.Next() {
			break
		}
	}
	// step 0: tokenize, embed, 5×(attention, mlp), logits, softmax, 6 sampler steps, sample, kv
	if len(names) != (1+1+10+2+6+2)+(1+10+2+6+2) || names[0] != "tokenize" || names[len(names)-1] != "kv" {
		t.Errorf("stages %v", names)
	}
	for i := len(names) - 1; i > 0; i-- {
		if !c.Prev() {
			t.Fatalf("cannot step back at %d", i)
		}
		if _, st := c.Current(); string(st.Name) != names[i-1] {
			t.Fatalf("back to %s, want %s", st.Name, names[i-1])
		}
	}
	if c.Prev() {
		t.Error("stepped back past the start")
	}
	if _, err := ReadJSONL(bytes.NewBufferString("{not json\n")); err == nil {
		t.Error("bad JSON: want error")
	}
}

func TestBoundedRecording(t *testing.T) {
	steps, _ := record(t, Options{Layers: []int{2}, Attention: true, LastPositions: 2, Candidates: 5, Removed: 3}, "Once upon a time there was", 1)
	s := steps[0]
	if len(s.Layers) != 5 || s.Layers[0].Attention != nil || s.Layers[2].Attention == nil {
		t.Fatalf("layer filter: %d layers", len(s.Layers))
	}
	a := s.Layers[2].Attention
	if s.First != s.N-2 || len(a.Weights) != 2 || len(a.Weights[0][0]) != s.N-1 || a.Q != nil || len(s.Embed.Input) != 2 {
		t.Errorf("last positions: first %d, %d rows, %d visible", s.First, len(a.Weights), len(a.Weights[0][0]))
	}
	if len(s.Sampler[1].Removed) != 3 || len(s.Sampler[0].After) > 5 {
		t.Errorf("candidate caps not applied")
	}
}

func TestVecNonFinite(t *testing.T) {
	v := Vec{1.5, float32(math.Inf(-1)), float32(math.Inf(1)), 0}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `[1.5,"-Infinity","Infinity",0]` {
		t.Fatalf("%s %v", b, err)
	}
	var w Vec
	if err := json.Unmarshal(b, &w); err != nil || !math.IsInf(float64(w[1]), -1) || w[0] != 1.5 {
		t.Errorf("%v %v", w, err)
	}
}

// A sampler step over a vocabulary of a million keeps its few candidates
// without copying, sorting or indexing the whole vocabulary: the bytes it
// allocates are a small fraction of the step's own candidates (12 MB),
// and what it keeps is the highest first, ties by id, as a full sort
// would give.
func TestSamplerStepOverAHugeVocabulary(t *testing.T) {
	const vocab = 1 << 20
	before := make([]sample.Candidate, vocab)
	for i := range before {
		before[i] = sample.Candidate{ID: int32(i), Logit: float32((i * 7919) % 1000)} // many ties
	}
	after := before[:40]
	r := NewRecorder(Options{Candidates: 50, Removed: 30})
	h := r.Hooks()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	h.OnSamplerStep(sample.StepResult{Step: sample.TopK, Before: before, After: after})
	runtime.ReadMemStats(&m1)
	if b := m1.TotalAlloc - m0.TotalAlloc; b > 1<<20 {
		t.Errorf("recording one step over %d candidates allocated %d KiB", vocab, b>>10)
	}
	st := r.Steps()[0].Sampler[0]
	want := slices.Clone(before[40:])
	slices.SortFunc(want, func(a, b sample.Candidate) int {
		if c := cmp.Compare(b.Logit, a.Logit); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if st.RemovedCount != vocab-40 || len(st.Removed) != 30 || len(st.After) != 40 {
		t.Fatalf("%d removed, %d listed, %d after", st.RemovedCount, len(st.Removed), len(st.After))
	}
	for i, c := range st.Removed {
		if c.ID != want[i].ID || c.Logit != want[i].Logit {
			t.Fatalf("removed[%d] = %+v, want %+v", i, c, want[i])
		}
	}
}

// The lens's likeliest tokens carry the probabilities
// sample.Probabilities gives, bit for bit.
func TestLikeliestMatchesProbabilities(t *testing.T) {
	for _, row := range [][]float32{
		{0.5, 3, -1, 3, 2.25, float32(math.Inf(-1))},
		{-40, -41.5, -39, 12, 11.999, 0},
		{1, 1, 1},
	} {
		probs := sample.Probabilities(row, 1)
		got := Likeliest(row, 3)
		for i, id := range sample.TopN(probs, 3) {
			if got[i].ID != id || got[i].P != probs[id] || got[i].Logit != row[id] {
				t.Errorf("%v: %d: %+v, want id %d p %g", row, i, got[i], id, probs[id])
			}
		}
	}
}

// The lens keeps its likeliest tokens for the last LensPositions
// positions, or the last LastPositions when fewer or unset, and asks the
// backend for no more rows than that.
func TestLensPositions(t *testing.T) {
	const prompt = "Once upon a time there was a little girl" // more than 6 tokens
	for _, tc := range []struct{ last, lens, want int }{{0, 0, -1}, {4, 0, 4}, {0, 2, 2}, {4, 2, 2}, {2, 4, 2}} {
		opt := Options{Lens: 3, LastPositions: tc.last, LensPositions: tc.lens}
		if got := NewRecorder(opt).Hooks().LensRows; got != max(tc.want, 0) {
			t.Errorf("last %d, lens %d: asks for %d rows, want %d", tc.last, tc.lens, got, max(tc.want, 0))
		}
		steps, _ := record(t, opt, prompt, 1)
		want := tc.want
		if want < 0 {
			want = steps[0].N
		}
		for _, L := range steps[0].Layers {
			if L.Lens == nil || len(L.Lens.Top) != want {
				t.Fatalf("last %d, lens %d: layer %d keeps %v, want %d rows", tc.last, tc.lens, L.Index, L.Lens, want)
			}
		}
	}
}
