package compare

import (
	"context"
	"math"
	"slices"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/speculative"
)

// drafts resolves a lane's draft for m on the CPU: self:N only.
func drafts(t *testing.T, m *model.Model) func(string) (*engine.Loaded, error) {
	return draftsOn(t, m, "cpu")
}

// draftsOn resolves a lane's draft for m on a backend.
func draftsOn(t *testing.T, m *model.Model, backend string) func(string) (*engine.Loaded, error) {
	return func(name string) (*engine.Loaded, error) {
		dm, err := speculative.LoadDraft(m, name)
		if err != nil {
			return nil, err
		}
		l, err := engine.Load(dm, engine.Options{Threads: 2, Backend: backend, Context: 64})
		if err == nil {
			t.Cleanup(l.Close)
		}
		return l, err
	}
}

// A greedy speculative lane writes the greedy lane's tokens with the same
// log-probabilities, and reports what its draft achieved and its speed;
// a sampling one follows its own seed.
func TestSpeculativeLane(t *testing.T) {
	m := stories(t)
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	ctx := context.Background()
	res, err := Run(ctx, load(t, m, "cpu"), prompt, lanes(t, "greedy", "greedy,spec=self:2,k=3", "spec=self:1,k=16,temperature=0", "spec=self:3,temperature=1,seed=4"),
		Options{N: 24, Draft: drafts(t, m)})
	if err != nil {
		t.Fatal(err)
	}
	plain := res.Lanes[0]
	for _, l := range res.Lanes[1:3] {
		if !slices.Equal(l.Tokens, plain.Tokens) {
			t.Errorf("%s: %v, greedy %v", l.Strategy.Spec, l.Tokens, plain.Tokens)
			continue
		}
		for i := range l.Steps {
			if math.Abs(l.Steps[i].LogProb-plain.Steps[i].LogProb) > 1e-4 {
				t.Errorf("%s step %d: log p %.6f, greedy %.6f", l.Strategy.Spec, i, l.Steps[i].LogProb, plain.Steps[i].LogProb)
			}
		}
		if s := l.Speculative; s == nil || s.Rounds == 0 || s.Drafted < s.Accepted || l.TokensPerSec <= 0 {
			t.Errorf("%s: stats %+v, %.1f t/s", l.Strategy.Spec, s, l.TokensPerSec)
		}
	}
	if plain.TokensPerSec <= 0 || plain.Speculative != nil {
		t.Errorf("greedy lane: %.1f t/s, speculative stats %+v", plain.TokensPerSec, plain.Speculative)
	}
	if res.Lanes[3].Strategy.Kind != "speculative" || len(res.Lanes[3].Tokens) != 24 {
		t.Errorf("sampling speculative lane: %+v", res.Lanes[3].Strategy)
	}
	// refused in one line
	for _, bad := range []string{"k=4", "spec=self:2,beam=2", "spec=self:2,force=1>2", "spec=self:2,k=17", "spec=self:2,k=0", "spec="} {
		if _, err := ParseLane(bad, nil); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
	if _, err := Run(ctx, load(t, m, "cpu"), prompt, lanes(t, "greedy", "spec=self:2"), Options{N: 4}); err == nil {
		t.Error("a speculative lane without a draft resolver: want error")
	}
	if _, err := Run(ctx, load(t, m, "cpu"), prompt, lanes(t, "greedy", "spec=self:9"), Options{N: 4, Draft: drafts(t, m)}); err == nil {
		t.Error("a draft of more layers than the model: want error")
	}
}
