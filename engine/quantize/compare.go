package quantize

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
)

// Variant is one precision of a model to compare.
type Variant struct {
	Type   string // as shown: "F32", "Q4_K_M", …
	Loaded *engine.Loaded
	Bytes  int64 // the weights' bytes
}

// Candidate is a token with its probability.
type Candidate struct {
	ID int32
	P  float64
}

// StepStat is one variant at one generation step, reading the same tokens
// as the reference (the first variant): its most likely tokens, the KL
// divergence of its distribution from the reference's, whether its most
// likely token differs, and how many of the reference's top 5 it shares.
type StepStat struct {
	Top     []Candidate
	KL      float64
	Flipped bool
	Overlap int
}

// Result is one variant over a generation.
type Result struct {
	Type       string
	Bytes      int64
	Steps      []StepStat
	Own        []int32 // its own greedy tokens
	Divergence int     // the first step where Own differs from the reference's (-1: never)
	MeanKL     float64
	FlipRate   float64
	PrefillMS  float64 // measured: the prompt in one pass (the median of TimingRounds runs)
	DecodeMS   float64 // measured: per token of its own generation (the median)
	// PrefillRuns and DecodeRuns are every run's times, the variants
	// taking turns in a rotated order each round.
	PrefillRuns, DecodeRuns []float64
}

// TimingRounds is how many times Compare times each variant's generation.
const TimingRounds = 3

// TopK is how many tokens a StepStat lists and compares.
const TopK = 5

// Compare runs the prompt through every variant: each generates n tokens
// greedily (timed), then reads the reference's tokens (the first variant's
// generation) so their next-token distributions compare position by
// position, as llama-perplexity's KL divergence does.
func Compare(ctx context.Context, variants []Variant, prompt []int32, n int) ([]Result, error) {
	if len(variants) == 0 || len(prompt) == 0 || n < 1 {
		return nil, fmt.Errorf("compare: give variants, a prompt and tokens to generate")
	}
	out := make([]Result, len(variants))
	dists := make([][][]float64, len(variants)) // [variant][step] log-probabilities
	for round := range TimingRounds {
		for j := range variants {
			i := (j + round) % len(variants)
			r, err := generate(ctx, variants[i], prompt, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", variants[i].Type, err)
			}
			if round == 0 {
				out[i] = r
			}
			out[i].PrefillRuns = append(out[i].PrefillRuns, r.PrefillMS)
			out[i].DecodeRuns = append(out[i].DecodeRuns, r.DecodeMS)
		}
	}
	for i := range out {
		out[i].PrefillMS, out[i].DecodeMS = median(out[i].PrefillRuns), median(out[i].DecodeRuns)
	}
	ref := out[0].Own
	for i, v := range variants {
		d, err := teacherForced(ctx, v.Loaded, prompt, ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Type, err)
		}
		dists[i] = d
	}
	for i := range variants {
		r := &out[i]
		r.Divergence = -1
		for s := range ref {
			if s >= len(r.Own) || r.Own[s] != ref[s] {
				r.Divergence = s
				break
			}
		}
		for s := range ref {
			st := Stat(dists[0][s], dists[i][s])
			r.Steps = append(r.Steps, st)
			r.MeanKL += st.KL
			if st.Flipped {
				r.FlipRate++
			}
		}
		r.MeanKL /= float64(len(ref))
		r.FlipRate /= float64(len(ref))
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// generate is a variant's own greedy generation, timed.
func generate(ctx context.Context, v Variant, prompt []int32, n int) (Result, error) {
	r := Result{Type: v.Type, Bytes: v.Bytes}
	s, err := v.Loaded.NewSession(len(prompt) + n)
	if err != nil {
		return r, err
	}
	defer s.Close()
	start := time.Now()
	logits, err := s.Eval(ctx, prompt)
	if err != nil {
		return r, err
	}
	r.PrefillMS = float64(time.Since(start).Microseconds()) / 1000
	start = time.Now()
	_, err = s.Continue(ctx, logits, engine.Gen{Limits: engine.Limits{MaxTokens: n}, Choose: engine.Argmax,
		Emit: func(id int32, _ []float32) error { r.Own = append(r.Own, id); return nil }})
	if err != nil {
		return r, err
	}
	r.DecodeMS = float64(time.Since(start).Microseconds()) / 1000 / float64(len(r.Own))
	return r, nil
}

// teacherForced is a variant's next-token log-probabilities at each step
// of the reference's generation (after the prompt and the tokens before).
func teacherForced(ctx context.Context, l *engine.Loaded, prompt, ref []int32) ([][]float64, error) {
	s, err := l.NewSession(len(prompt) + len(ref))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	in := append(slices.Clone(prompt), ref[:len(ref)-1]...)
	all, err := s.EvalAll(ctx, in)
	if err != nil {
		return nil, err
	}
	V := l.Model.Config.Vocab
	var out [][]float64
	for step := range ref {
		row := all[(len(prompt)-1+step)*V : (len(prompt)+step)*V]
		out = append(out, sample.LogSoftmax(row))
	}
	return out, nil
}

// topCandidates is the TopK likeliest tokens of log-probabilities lp.
func topCandidates(lp []float64) []Candidate {
	var out []Candidate
	for _, id := range sample.TopN(lp, TopK) {
		out = append(out, Candidate{ID: id, P: math.Exp(lp[id])})
	}
	return out
}

// Stat compares two next-token distributions given as log-probabilities:
// q's top tokens, KL(ref ‖ q), whether the likeliest token differs and
// how many of ref's top TopK q shares.
func Stat(ref, q []float64) StepStat {
	st := StepStat{Top: topCandidates(q), KL: sample.KL(ref, q)}
	rt := topCandidates(ref)
	st.Flipped = rt[0].ID != st.Top[0].ID
	for _, a := range rt {
		for _, b := range st.Top {
			if a.ID == b.ID {
				st.Overlap++
			}
		}
	}
	return st
}

// InMemory converts a parsed model to target without writing a file and
// returns the converted model (its own file in memory), the report and
// the weights' bytes.
func InMemory(f *gguf.File, target string) (*model.Model, *Report, int64, error) {
	w, rep, err := Convert(f, target, Options{})
	if err != nil {
		return nil, nil, 0, err
	}
	qf, err := gguf.ParseAligned(w.Bytes())
	if err != nil {
		return nil, nil, 0, err
	}
	m, err := model.FromFile(qf)
	if err != nil {
		return nil, nil, 0, err
	}
	var bytes int64
	for _, t := range qf.Tensors {
		bytes += int64(t.Size)
	}
	return m, rep, bytes, nil
}
