package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/memcalc"
	"stepthrough/engine/perplexity"
	"stepthrough/engine/quant"
	"stepthrough/lessons"
	"stepthrough/models/corpus"
	"stepthrough/models/recipe"
	"stepthrough/registry"
)

// The claims about what a conversion keeps (the types a converted model
// stores, its KL divergence from the model as stored), what prefill costs
// against decode on this engine, one user's cache at a context, and what
// the lesson models never read.

// checkHolds checks the types the step's model stores: how many tensors
// of a type, or that every matrix whose name has the claim's part is of
// it (its norms and biases, kept in F32, aside).
func (s *checker) checkHolds(c lessons.Claim) (string, error) {
	count, named := map[string]int{}, 0
	var other []string
	for _, t := range s.Model.File.Tensors {
		count[t.Type.String()]++
		if c.Part != "" && len(t.Dims) >= 2 && strings.Contains(t.Name, c.Part) { // a matrix
			named++
			if t.Type.String() != c.Type {
				other = append(other, t.Name+" "+t.Type.String())
			}
		}
	}
	got := typeCounts(count)
	if c.Part == "" {
		n := count[c.Type]
		return got, want(n == int(c.Value), "the model stores %d tensors in %s (%s)", n, c.Type, got)
	}
	switch {
	case named == 0:
		return got, fmt.Errorf("no tensor's name has %q", c.Part)
	case len(other) > 0:
		return got, fmt.Errorf("not every %s tensor is %s: %s", c.Part, c.Type, strings.Join(other, ", "))
	}
	return got, nil
}

// typeCounts writes tensor counts by type: "F32 34, Q8_0 18".
func typeCounts(count map[string]int) string {
	var out []string
	for t, n := range count {
		out = append(out, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// The KL claims read the text models/README.md's quantization table is
// measured on: the held-out documents of the lesson corpus (seed 1, the
// default size), its first recipe.QuantTextBytes, in chunks of
// recipe.QuantContext tokens.
var (
	trainOnce sync.Once
	heldText  string
	trainDocs []corpus.Doc
	klMu      sync.Mutex
	klDone    = map[string]float64{} // by model reference
)

func lessonCorpus() ([]corpus.Doc, string) {
	trainOnce.Do(func() {
		var held []corpus.Doc
		trainDocs, held = corpus.Split(corpus.Default(1), 0.1)
		heldText = recipe.QuantText(held)
	})
	return trainDocs, heldText
}

// checkKL checks the mean KL divergence of a converted model (the step's
// NAME@TYPE) from the model as stored, on the held-out text.
func (s *checker) checkKL(ctx context.Context, c lessons.Claim) (string, error) {
	kl, err := s.meanKL(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%.5f", kl), want(c.Holds(kl), "mean KL %.5f", kl)
}

func (s *checker) meanKL(ctx context.Context) (float64, error) {
	ref, err := registry.ParseRef(s.Run.Model)
	if err != nil {
		return 0, err
	}
	if ref.Quant == "" {
		return 0, fmt.Errorf("the step's model %s is not a conversion (NAME@TYPE): nothing to compare with", s.Run.Model)
	}
	klMu.Lock()
	defer klMu.Unlock()
	if kl, ok := klDone[s.Run.Model]; ok {
		return kl, nil
	}
	eng := s.se.Engines()
	base, err := eng.Engine(ref.File, "cpu")
	if err != nil {
		return 0, err
	}
	lm, err := eng.Engine(s.Run.Model, "cpu")
	if err != nil {
		return 0, err
	}
	_, text := lessonCorpus()
	r, err := perplexity.Run(ctx, lm, base.Model.Tokenizer.EncodeIDs(text, true), perplexity.Options{Context: recipe.QuantContext, Base: base})
	if err != nil {
		return 0, err
	}
	klDone[s.Run.Model] = r.MeanKL
	return r.MeanKL, nil
}

// PrefillRounds is how many times a prefill claim times the prompt and
// the decode steps after it; the fastest of each are compared (on a busy
// machine other work only adds time).
const PrefillRounds = 25

// PrefillDecodeSteps is how many decode steps a round times.
const PrefillDecodeSteps = 4

// checkPrefill checks what a prompt token costs in prefill against a
// decode step: the step's prompt prefilled in one pass, then decode steps
// one token each, on the step's model and backend (the fastest of the
// rounds).
func (s *checker) checkPrefill(ctx context.Context, c lessons.Claim) (string, error) {
	lm, err := s.se.Engines().Engine(s.Run.Model, s.Run.Backend)
	if err != nil {
		return "", err
	}
	es, err := lm.NewSession(len(s.Prompt) + PrefillDecodeSteps + 1)
	if err != nil {
		return "", err
	}
	defer es.Close()
	var pre, dec []float64
	for range PrefillRounds {
		es.Reset()
		t0 := time.Now()
		logits, err := es.Eval(ctx, s.Prompt)
		if err != nil {
			return "", err
		}
		pre = append(pre, float64(time.Since(t0))/float64(len(s.Prompt)))
		for range PrefillDecodeSteps {
			next := engine.Argmax(logits)
			t0 = time.Now()
			if logits, err = es.Eval(ctx, []int32{next}); err != nil {
				return "", err
			}
			dec = append(dec, float64(time.Since(t0)))
		}
	}
	p, d := slices.Min(pre), slices.Min(dec)
	frac := p / d
	got := fmt.Sprintf("%.3f ms a prompt token, %.3f ms a decode step: %.2f", p/1e6, d/1e6, frac)
	return got, want(c.Holds(frac), "a prompt token costs %.2f of a decode step (%s)", frac, got)
}

// checkKVContext checks one user's KV cache at a context, for a preset,
// at 2 bytes a value (the memory calculator's figure).
func checkKVContext(c lessons.Claim) (string, error) {
	shape, ok := memcalc.Preset(c.Text)
	if !ok {
		return "", fmt.Errorf("no preset named %q", c.Text)
	}
	gb := memcalc.Find(memcalc.Calculate(shape, memcalc.Inputs{Weights: quant.F16, KVBytes: 2, Context: c.Tokens, Batch: 1}), "KV cache per user").Value / 1e9
	return fmt.Sprintf("%.2f GB", gb), want(math.Round(gb*100) == math.Round(c.Value*100), "the calculator gives %.2f GB", gb)
}

// checkUnseen checks that the lesson models' training text (the lesson
// corpus, seed 1, its training split) never contains the claim's text.
func checkUnseen(c lessons.Claim) (string, error) {
	train, _ := lessonCorpus()
	n := 0
	for _, d := range train {
		n += strings.Count(d.Text, c.Text)
	}
	return fmt.Sprint(n), want(n == 0, "the training text contains %q %d times", c.Text, n)
}
