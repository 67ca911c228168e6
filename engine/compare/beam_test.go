package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"stepthrough/engine/sample"
)

// tableModel is a tiny synthetic language model: next-token log-probs are
// a fixed random function of the last two tokens.
type tableModel struct {
	vocab int
	table map[[2]int32][]float64
	slots [][]int32
	rng   *rand.Rand
}

func newTable(vocab, slots int, seed uint64) *tableModel {
	return &tableModel{vocab: vocab, table: map[[2]int32][]float64{}, slots: make([][]int32, slots), rng: rand.New(rand.NewPCG(seed, 9))}
}

func (m *tableModel) dist(seq []int32) []float64 {
	key := [2]int32{-1, -1}
	if len(seq) > 0 {
		key[1] = seq[len(seq)-1]
	}
	if len(seq) > 1 {
		key[0] = seq[len(seq)-2]
	}
	if d, ok := m.table[key]; ok {
		return d
	}
	logits := make([]float32, m.vocab)
	for i := range logits {
		logits[i] = float32(m.rng.NormFloat64() * 2)
	}
	d := sample.LogSoftmax(logits)
	m.table[key] = d
	return d
}

func (m *tableModel) LogProbs(i int) []float64 { return m.dist(m.slots[i]) }
func (m *tableModel) Fork(dst, src int) error  { m.slots[dst] = slices.Clone(m.slots[src]); return nil }
func (m *tableModel) Advance(i int, t int32) error {
	m.slots[i] = append(m.slots[i], t)
	return nil
}

// bruteForce scores every sequence of length n (no end token).
func bruteForce(m *tableModel, n int) ([]int32, float64) {
	best, bestLP := []int32(nil), math.Inf(-1)
	var rec func(seq []int32, lp float64)
	rec = func(seq []int32, lp float64) {
		if len(seq) == n {
			if lp > bestLP {
				best, bestLP = slices.Clone(seq), lp
			}
			return
		}
		d := m.dist(seq)
		for t := 0; t < m.vocab; t++ {
			rec(append(seq, int32(t)), lp+d[t])
		}
	}
	rec(nil, 0)
	return best, bestLP
}

func TestBeamMatchesBruteForce(t *testing.T) {
	never := func(int32) bool { return false }
	for seed := uint64(1); seed <= 20; seed++ {
		m := newTable(5, 26, seed)
		want, wantLP := bruteForce(m, 3)
		// width 25 = 5^2 keeps every prefix of length 2: exact
		res, err := BeamSearch(m, 25, 3, 0, never)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Best.Tokens, want) || math.Abs(res.Best.LogProb-wantLP) > 1e-12 {
			t.Fatalf("seed %d: beam %v (%g), brute force %v (%g)", seed, res.Best.Tokens, res.Best.LogProb, want, wantLP)
		}
		// width 1 is greedy
		g := newTable(5, 2, seed)
		g.table = m.table
		res1, _ := BeamSearch(g, 1, 3, 0, never)
		var greedy []int32
		for len(greedy) < 3 {
			greedy = append(greedy, sample.TopN(m.dist(greedy), 1)[0])
		}
		if !slices.Equal(res1.Best.Tokens, greedy) {
			t.Fatalf("seed %d: width 1 %v, greedy %v", seed, res1.Best.Tokens, greedy)
		}
		// a wider beam never scores worse than a narrower one here
		w3 := newTable(5, 4, seed)
		w3.table = m.table
		r3, _ := BeamSearch(w3, 3, 3, 0, never)
		if r3.Best.LogProb < res1.Best.LogProb-1e-12 || r3.Best.LogProb > wantLP+1e-12 {
			t.Fatalf("seed %d: width 3 log-prob %g outside [greedy %g, optimum %g]", seed, r3.Best.LogProb, res1.Best.LogProb, wantLP)
		}
		kept := 0
		for _, c := range r3.Steps[1].Candidates {
			if c.Kept {
				kept++
			}
		}
		if kept != 3 || len(r3.Steps[1].Candidates) != 9 {
			t.Fatalf("step 2: %d candidates, %d kept", len(r3.Steps[1].Candidates), kept)
		}
	}
}

func TestBeamFinishedHypotheses(t *testing.T) {
	m := newTable(4, 4, 3)
	end := func(t int32) bool { return t == 0 }
	res, err := BeamSearch(m, 3, 5, 1, end)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Finished {
		if !h.Done || h.Tokens[len(h.Tokens)-1] != 0 {
			t.Errorf("finished hypothesis %+v", h)
		}
	}
	if res.Why == "" || len(res.Best.Tokens) == 0 {
		t.Errorf("result %+v", res)
	}
}

func TestReorderCycles(t *testing.T) {
	m := newTable(3, 4, 1)
	m.slots = [][]int32{{0}, {1}, {2}, nil}
	if err := reorder(m, []int{1, 0, 0}, 3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.slots[0], []int32{1}) || !slices.Equal(m.slots[1], []int32{0}) || !slices.Equal(m.slots[2], []int32{0}) {
		t.Errorf("slots after reorder %v", m.slots[:3])
	}
}
