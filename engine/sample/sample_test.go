package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func logitsOf(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(p))
	}
	return l
}

// runStep applies one step and returns the survivors' probabilities,
// highest first.
func runStep(t *testing.T, p Params, logits []float32) []float64 {
	t.Helper()
	s, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	var after []float64
	s.Sample(logits, &Observer{Step: func(r StepResult) {
		after = after[:0]
		for _, c := range r.After {
			after = append(after, float64(c.P))
		}
	}})
	slices.SortFunc(after, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return after
}

func only(step Step, edit func(*Params)) Params {
	p := Params{Temperature: 1, TopP: 1, TypicalP: 1, RepeatPenalty: 1, RepeatLastN: 64, Order: []Step{step}, SeedSet: true}
	edit(&p)
	return p
}

func near(got []float64, want ...float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			return false
		}
	}
	return true
}

// The vectors of llama.cpp's test-sampling.cpp (ENGINE-REFERENCE §3.1).
func TestReferenceVectors(t *testing.T) {
	base := logitsOf(0.1, 0.2, 0.3, 0.4)
	tests := []struct {
		name string
		p    Params
		want []float64
	}{
		{"top-k 1", only(TopK, func(p *Params) { p.TopK = 1 }), []float64{1}},
		{"top-k 3", only(TopK, func(p *Params) { p.TopK = 3 }), []float64{0.44444, 0.33333, 0.22222}},
		{"top-k 0", only(TopK, func(p *Params) { p.TopK = 0 }), []float64{0.4, 0.3, 0.2, 0.1}},
		{"top-k 4", only(TopK, func(p *Params) { p.TopK = 4 }), []float64{0.4, 0.3, 0.2, 0.1}},
		{"top-p 0", only(TopP, func(p *Params) { p.TopP = 0 }), []float64{1}},
		{"top-p 0.7", only(TopP, func(p *Params) { p.TopP = 0.7 }), []float64{0.571429, 0.428571}},
		{"top-p 0.8", only(TopP, func(p *Params) { p.TopP = 0.8 }), []float64{4.0 / 9, 3.0 / 9, 2.0 / 9}},
		{"top-p 1", only(TopP, func(p *Params) { p.TopP = 1 }), []float64{0.4, 0.3, 0.2, 0.1}},
		{"min-p 0.24", only(MinP, func(p *Params) { p.MinP = 0.24 }), []float64{0.4, 0.3, 0.2, 0.1}},
		{"min-p 0.26", only(MinP, func(p *Params) { p.MinP = 0.26 }), []float64{4.0 / 9, 3.0 / 9, 2.0 / 9}},
		{"min-p 0.51", only(MinP, func(p *Params) { p.MinP = 0.51 }), []float64{4.0 / 7, 3.0 / 7}},
		{"min-p 0.76", only(MinP, func(p *Params) { p.MinP = 0.76 }), []float64{1}},
		{"temperature 0", only(Temperature, func(p *Params) { p.Temperature = 0 }), []float64{1}},
	}
	for _, tt := range tests {
		if got := runStep(t, tt.p, base); !near(got, tt.want...) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	// penalties: five tokens of p 0.2, last tokens {0,1,2,0,0}, frequency 5, presence 5
	p := only(Penalties, func(p *Params) { p.FrequencyPenalty, p.PresencePenalty = 5, 5 })
	s, _ := New(p)
	s.Accept(0, 1, 2, 0, 0)
	var got []float64
	s.Sample(logitsOf(0.2, 0.2, 0.2, 0.2, 0.2), &Observer{Step: func(r StepResult) {
		for _, c := range r.After {
			got = append(got, float64(c.P))
		}
	}})
	// in id order: token 0 seen 3 times, 1 and 2 once, 3 and 4 never
	if !near(got, 0, 0.000023, 0.000023, 0.499977, 0.499977) {
		t.Errorf("penalties: %v", got)
	}
}

// llama.cpp's penalties on tokens already seen: the repeat penalty divides
// a positive logit and multiplies a negative one; frequency and presence
// subtract count×frequency + presence; unseen tokens keep their logits.
func TestRepeatPenaltySign(t *testing.T) {
	seen := map[int32]int{0: 1, 1: 2} // token 2 unseen
	for _, tc := range []struct {
		name                   string
		repeat, freq, presence float32
		want                   []Candidate
	}{
		{"repeat", 2, 0, 0, []Candidate{{ID: 0, Logit: 1}, {ID: 1, Logit: -4}, {ID: 2, Logit: 2}}},
		{"frequency and presence", 1, 0.5, 0.25, []Candidate{{ID: 0, Logit: 2 - 0.5 - 0.25}, {ID: 1, Logit: -2 - 2*0.5 - 0.25}, {ID: 2, Logit: 2}}},
		{"all three", 2, 0.5, 0.25, []Candidate{{ID: 0, Logit: 2/2 - 0.5 - 0.25}, {ID: 1, Logit: -2*2 - 2*0.5 - 0.25}, {ID: 2, Logit: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := []Candidate{{ID: 0, Logit: 2}, {ID: 1, Logit: -2}, {ID: 2, Logit: 2}}
			ApplyPenalties(c, seen, tc.repeat, tc.freq, tc.presence)
			if diff := cmp.Diff(tc.want, c); diff != "" {
				t.Errorf("penalised candidates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEdgeCases(t *testing.T) {
	inf := float32(math.Inf(-1))
	// ties: top-k keeps the lower ids; greedy takes the first maximum
	s, _ := New(only(TopK, func(p *Params) { p.TopK = 2 }))
	var kept []int32
	s.Sample([]float32{1, 3, 3, 3}, &Observer{Step: func(r StepResult) {
		for _, c := range r.After {
			kept = append(kept, c.ID)
		}
	}})
	if !slices.Equal(kept, []int32{1, 2}) {
		t.Errorf("top-k tie: kept %v, want [1 2]", kept)
	}
	g, _ := New(only(Temperature, func(p *Params) { p.Temperature = 0 }))
	if id := g.Sample([]float32{0, 5, 5, -1}, nil); id != 1 {
		t.Errorf("greedy tie: %d, want 1", id)
	}
	// single candidate, all-equal logits, -Inf logits
	d := Defaults()
	d.SeedSet = true
	s, _ = New(d)
	if id := s.Sample([]float32{0.5}, nil); id != 0 {
		t.Errorf("single candidate: %d", id)
	}
	var draw DrawResult
	s.Sample([]float32{inf, 2, inf, 2}, &Observer{Draw: func(r DrawResult) {
		draw = r
		draw.Candidates, draw.CDF = slices.Clone(r.Candidates), slices.Clone(r.CDF)
	}})
	var survivors []int32
	for _, c := range draw.Candidates {
		survivors = append(survivors, c.ID)
	}
	if diff := cmp.Diff([]int32{1, 3}, survivors); diff != "" {
		t.Errorf("-Inf logits must not survive (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{0.5, 1}, draw.CDF, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("-Inf logits: the survivors' CDF (-want +got):\n%s", diff)
	}
	eq := make([]float32, 4)
	got := runStep(t, only(TopP, func(p *Params) { p.TopP = 0.5 }), eq)
	if !near(got, 0.5, 0.5) { // cumulative 0.25, 0.5: the token reaching p is kept
		t.Errorf("all-equal logits, top-p 0.5: %v, want 2 survivors", got)
	}
}

// The same seed gives the same tokens; the observer changes nothing.
func TestSeededReproducible(t *testing.T) {
	logits := make([]float32, 500)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)) * 3)
	}
	run := func(observe bool) []int32 {
		p := Defaults()
		p.Seed, p.SeedSet = 1234, true
		p.RepeatPenalty = 1.3
		s, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		var obs *Observer
		if observe {
			obs = &Observer{Step: func(StepResult) {}, Draw: func(DrawResult) {}}
		}
		var out []int32
		for i := 0; i < 50; i++ {
			id := s.Sample(logits, obs)
			s.Accept(id)
			out = append(out, id)
		}
		return out
	}
	a, b, c := run(false), run(false), run(true)
	if !slices.Equal(a, b) || !slices.Equal(a, c) {
		t.Errorf("not reproducible:\n%v\n%v\n%v", a, b, c)
	}
	// pinned: the PCG stream and the draw rule are part of the contract
	if got := a[:8]; !slices.Equal(got, pinnedDraws) {
		t.Errorf("first draws %v, pinned %v (changing them breaks shared links and lessons)", got, pinnedDraws)
	}
}

var pinnedDraws = []int32{58, 215, 341, 52, 366, 146, 435, 209}

func TestDrawUsesU(t *testing.T) {
	p := only(Temperature, func(p *Params) { p.Temperature = 1; p.Seed = 7 })
	s, _ := New(p)
	var d DrawResult
	s.Sample(logitsOf(0.1, 0.2, 0.3, 0.4), &Observer{Draw: func(r DrawResult) { d = r; d.Candidates, d.CDF = slices.Clone(r.Candidates), slices.Clone(r.CDF) }})
	if !(d.U >= 0 && d.U < 1) {
		t.Fatalf("u = %v, want it in [0, 1)", d.U)
	}
	// descending: 0.4 (id 3), 0.3 (id 2), 0.2 (id 1), 0.1 (id 0); the
	// chosen one is the first whose cumulative probability exceeds u
	order := []int32{3, 2, 1, 0}
	idx := 0
	for idx < 3 && d.CDF[idx] <= d.U {
		idx++
	}
	want := DrawResult{
		U: d.U,
		Candidates: []Candidate{
			{ID: 3, Logit: float32(math.Log(0.4)), P: 0.4},
			{ID: 2, Logit: float32(math.Log(0.3)), P: 0.3},
			{ID: 1, Logit: float32(math.Log(0.2)), P: 0.2},
			{ID: 0, Logit: float32(math.Log(0.1)), P: 0.1},
		},
		CDF:    []float64{0.4, 0.7, 0.9, 1},
		Index:  idx,
		Chosen: order[idx],
	}
	if diff := cmp.Diff(want, d, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
		t.Errorf("draw (-want +got):\n%s", diff)
	}
}

// Temperature before or after the filters changes which tokens survive.
func TestOrderMatters(t *testing.T) {
	logits := logitsOf(0.5, 0.3, 0.15, 0.05)
	count := func(order []Step) int {
		p := Params{Temperature: 3, TopP: 0.75, TypicalP: 1, RepeatPenalty: 1, MinP: 0, Order: order, SeedSet: true}
		s, _ := New(p)
		var n int
		s.Sample(logits, &Observer{Draw: func(r DrawResult) { n = len(r.Candidates) }})
		return n
	}
	llama, hf := count(OrderLlamaCpp), count(OrderTransformers)
	if llama != 2 || hf != 3 {
		t.Errorf("top-p 0.75 at temperature 3: llama.cpp order keeps %d (want 2), transformers order %d (want 3)", llama, hf)
	}
}

func TestValidateAndParse(t *testing.T) {
	for _, tt := range []struct {
		edit func(*Params)
		want string
	}{
		{func(p *Params) { p.Temperature = -1 }, "temperature"},
		{func(p *Params) { p.Temperature = math.NaN() }, "temperature"},
		{func(p *Params) { p.TopP = 1.5 }, "top-p"},
		{func(p *Params) { p.MinP = -0.1 }, "min-p"},
		{func(p *Params) { p.TopK = -3 }, "top-k"},
		{func(p *Params) { p.TypicalP = 2 }, "typical-p"},
		{func(p *Params) { p.RepeatPenalty = 0 }, "repeat-penalty"},
		{func(p *Params) { p.RepeatLastN = -2 }, "repeat-last-n"},
		{func(p *Params) { p.FrequencyPenalty = math.Inf(1) }, "frequency-penalty"},
	} {
		p := Defaults()
		tt.edit(&p)
		if _, err := New(p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want it to name %s", err, tt.want)
		}
	}
	if o, err := ParseOrder("transformers"); err != nil || o[1] != Temperature {
		t.Errorf("transformers preset: %v %v", o, err)
	}
	if o, err := ParseOrder("penalties,top-k,top-p,min-p,temperature"); err != nil || len(o) != 5 {
		t.Errorf("custom order: %v %v", o, err)
	}
	for _, bad := range []string{"top-k,top-k", "top-z"} {
		if _, err := ParseOrder(bad); err == nil {
			t.Errorf("ParseOrder(%q): want error", bad)
		}
	}
}

// Every float setting refuses NaN, infinities and values past its bounds
// (where the arithmetic leaves float32), naming the setting and the range,
// and takes its bounds themselves.
func TestValidateBounds(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Params)
		want string // "" for valid
	}{
		{"temperature NaN", func(p *Params) { p.Temperature = math.NaN() }, "invalid temperature NaN: must be 0 or in [0.001, 100] (0 means greedy)"},
		{"temperature 1e308", func(p *Params) { p.Temperature = 1e308 }, "invalid temperature 1e+308: must be 0 or in [0.001, 100] (0 means greedy)"},
		{"temperature 1e-300", func(p *Params) { p.Temperature = 1e-300 }, "invalid temperature 1e-300: must be 0 or in [0.001, 100] (0 means greedy)"},
		{"temperature 0", func(p *Params) { p.Temperature = 0 }, ""},
		{"temperature 100", func(p *Params) { p.Temperature = 100 }, ""},
		{"top-p +Inf", func(p *Params) { p.TopP = math.Inf(1) }, "invalid top-p +Inf: must be in [0, 1] (1 keeps all tokens)"},
		{"min-p -Inf", func(p *Params) { p.MinP = math.Inf(-1) }, "invalid min-p -Inf: must be in [0, 1] (0 keeps all tokens)"},
		{"typical-p NaN", func(p *Params) { p.TypicalP = math.NaN() }, "invalid typical-p NaN: must be in [0, 1] (1 keeps all tokens)"},
		{"repeat-penalty 1e308", func(p *Params) { p.RepeatPenalty = 1e308 }, "invalid repeat-penalty 1e+308: must be in [0.01, 100] (1 is off)"},
		{"repeat-penalty 0", func(p *Params) { p.RepeatPenalty = 0 }, "invalid repeat-penalty 0: must be in [0.01, 100] (1 is off)"},
		{"frequency-penalty 1e308", func(p *Params) { p.FrequencyPenalty = 1e308 }, "invalid frequency-penalty 1e+308: must be in [-100, 100] (0 is off)"},
		{"presence-penalty -1e308", func(p *Params) { p.PresencePenalty = -1e308 }, "invalid presence-penalty -1e+308: must be in [-100, 100] (0 is off)"},
		{"penalties at their bounds", func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty = 100, -100, 100 }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := Defaults()
			tt.edit(&p)
			got := ""
			if err := p.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkSample(b *testing.B) {
	for _, n := range []int{512, 32000} {
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(math.Sin(float64(i)*0.37) * 4)
		}
		p := Defaults()
		p.SeedSet = true
		s, _ := New(p)
		b.Run(map[int]string{512: "vocab512", 32000: "vocab32000"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits, nil)
			}
		})
	}
}

func TestProbabilities(t *testing.T) {
	p := Probabilities(logitsOf(0.1, 0.2, 0.3, 0.4), 1)
	if !near([]float64{float64(p[0]), float64(p[3])}, 0.1, 0.4) {
		t.Errorf("T=1: %v", p)
	}
	p = Probabilities([]float32{0, float32(math.Log(2))}, 0.5) // T=0.5 squares the ratio
	if !near([]float64{float64(p[0]), float64(p[1])}, 0.2, 0.8) {
		t.Errorf("T=0.5: %v", p)
	}
}

// topK's heap gives what selecting by quickselect and sorting gives, on
// candidates with many ties and infinities, in any order, for every k.
func TestTopKHeapAgreesWithSelect(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	vals := []float32{float32(math.Inf(-1)), -3, -1, 0, 0.5, 2, float32(math.Inf(1))}
	for n := 2; n <= 70; n++ {
		for range 20 {
			c := make([]Candidate, n)
			for i := range c {
				c[i] = Candidate{ID: int32(i), Logit: vals[r.IntN(len(vals))]}
			}
			r.Shuffle(n, func(i, j int) { c[i], c[j] = c[j], c[i] })
			k := 1 + r.IntN(n-1)
			want := slices.Clone(c)
			selectTop(want, k)
			want = want[:k]
			slices.SortFunc(want, byLogitDesc)
			if got := topK(slices.Clone(c), k); !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: %v, want %v", n, k, got, want)
			}
		}
	}
}

// A NaN logit leaves topK to quickselect, which still keeps k candidates.
func TestTopKWithNaN(t *testing.T) {
	nan := float32(math.NaN())
	c := []Candidate{{0, 1, 0}, {1, nan, 0}, {2, 3, 0}, {3, 2, 0}, {4, nan, 0}, {5, 0, 0}}
	got := topK(c, 3)
	if len(got) != 3 {
		t.Fatalf("kept %d candidates, want 3", len(got))
	}
}
