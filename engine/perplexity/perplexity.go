// Package perplexity measures a model on a text as llama-perplexity does:
// the tokens are cut into chunks of the context length, each chunk starts
// from an empty cache with BOS in its first place, and the second half of
// each chunk is scored (every scored token sees at least half a context).
// Against a base model on the same chunks (the same file at a higher
// precision) it also reports the KL divergence of the next-token
// distributions, KL(base ‖ model), and how often the most likely token is
// the same — llama-perplexity --kl-divergence's figures.
package perplexity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"stepthrough/engine"
	"stepthrough/engine/sample"
)

// Options configure a measurement.
type Options struct {
	Context int            // chunk length in tokens (default 128; at most the model's context)
	Base    *engine.Loaded // the base model for KL; nil: perplexity only
	// Progress is called after each chunk.
	Progress func(done, total int)
}

// Result is a measurement.
type Result struct {
	Chunks, Tokens int     // chunks evaluated, tokens scored
	PPL, PPLErr    float64 // perplexity and its standard error (from the mean log-probability's)
	BasePPL        float64 // the base model's (when a base was given)
	MeanKL, P99KL  float64 // KL(base ‖ model) per scored token: mean and 99th percentile
	MaxKL          float64
	SameTop        float64 // share of scored tokens whose most likely next token is the base's
}

// Run measures lm on tokens (a tokenized text).
func Run(ctx context.Context, lm *engine.Loaded, tokens []int32, opt Options) (*Result, error) {
	n := opt.Context
	if n == 0 {
		n = 128
	}
	if n < 8 || n > lm.Model.Config.ContextLen {
		return nil, fmt.Errorf("perplexity: a context of %d tokens: choose 8 to %d (the model's)", n, lm.Model.Config.ContextLen)
	}
	chunks := len(tokens) / n
	if chunks == 0 {
		return nil, fmt.Errorf("perplexity: the text is %d tokens, less than one chunk of %d", len(tokens), n)
	}
	if opt.Base != nil && opt.Base.Model.Config.Vocab != lm.Model.Config.Vocab {
		return nil, errors.New("perplexity: the base model has another vocabulary")
	}
	s, err := lm.NewSession(n)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var bs *engine.Session
	if opt.Base != nil {
		if bs, err = opt.Base.NewSession(n); err != nil {
			return nil, err
		}
		defer bs.Close()
	}
	bos := lm.Model.Tokenizer.Vocab().BOS
	V := lm.Model.Config.Vocab
	var nll, nll2, baseNLL float64
	var kls []float64
	same := 0
	for c := range chunks {
		chunk := slices.Clone(tokens[c*n : (c+1)*n])
		if bos >= 0 && lm.Model.Tokenizer.Vocab().AddBOS {
			chunk[0] = bos
		}
		logits, err := evalAll(ctx, s, chunk)
		if err != nil {
			return nil, err
		}
		var base []float32
		if bs != nil {
			if base, err = evalAll(ctx, bs, chunk); err != nil {
				return nil, err
			}
		}
		for i := n / 2; i < n-1; i++ {
			lp := sample.LogSoftmax(logits[i*V : (i+1)*V])
			l := -lp[chunk[i+1]]
			nll, nll2 = nll+l, nll2+l*l
			if base != nil {
				bp := sample.LogSoftmax(base[i*V : (i+1)*V])
				baseNLL -= bp[chunk[i+1]]
				kls = append(kls, kl(bp, lp))
				if sample.Argmax(bp) == sample.Argmax(lp) {
					same++
				}
			}
		}
		if opt.Progress != nil {
			opt.Progress(c+1, chunks)
		}
	}
	r := &Result{Chunks: chunks, Tokens: chunks * (n - 1 - n/2)}
	N := float64(r.Tokens)
	mean := nll / N
	r.PPL = math.Exp(mean)
	if r.Tokens > 1 {
		sd := math.Sqrt(math.Max(0, nll2/N-mean*mean) / (N - 1))
		r.PPLErr = r.PPL * sd
	}
	if bs != nil {
		r.BasePPL = math.Exp(baseNLL / N)
		var sum float64
		for _, k := range kls {
			sum += k
		}
		slices.Sort(kls)
		r.MeanKL, r.P99KL, r.MaxKL = sum/N, kls[min(len(kls)-1, int(0.99*float64(len(kls))))], kls[len(kls)-1]
		r.SameTop = float64(same) / N
	}
	return r, nil
}

// evalAll runs a chunk from an empty cache and returns every position's
// logits (copied: the session reuses its buffer).
func evalAll(ctx context.Context, s *engine.Session, chunk []int32) ([]float32, error) {
	s.Reset()
	out, err := s.EvalAll(ctx, chunk)
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// kl is KL(p ‖ q) for log-probabilities.
func kl(lp, lq []float64) float64 {
	var s float64
	for i, a := range lp {
		if p := math.Exp(a); p > 0 {
			s += p * (a - lq[i])
		}
	}
	return math.Max(0, s)
}
