// Package verify checks a lesson's claims against the engine: each step
// that declares claims is played as the Explorer shows it, and each claim
// (the top token, a probability, what the run writes, what batching,
// paging and stop strings do, the calculator's figures) is decided on that
// run's trace or by running the engine's serving parts on it. It is a
// consumer of session, as classroom is.
package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/memcalc"
	"stepthrough/engine/quant"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
	"stepthrough/session"
)

// ClaimResult is one claim of a lesson checked against the engine.
type ClaimResult struct {
	Step  int // 0-based
	Claim lessons.Claim
	Got   string // what the engine showed
	Err   error  // nil: the claim holds
}

// Lesson plays every step of l that declares claims in se, as the
// Explorer shows it, and checks each claim against that run's trace.
func Lesson(ctx context.Context, se *session.Session, l *lessons.Lesson) []ClaimResult {
	var out []ClaimResult
	for i, st := range l.Steps {
		if len(st.Claims) == 0 {
			continue
		}
		if err := se.PlayLesson(ctx, l, i); err != nil {
			for _, c := range st.Claims {
				out = append(out, ClaimResult{Step: i, Claim: c, Err: fmt.Errorf("the step does not play: %w", err)})
			}
			continue
		}
		for _, c := range st.Claims {
			s := &checker{se: se, Snapshot: se.Snapshot()}
			got, err := s.claim(ctx, st, c)
			out = append(out, ClaimResult{Step: i, Claim: c, Got: got, Err: err})
		}
	}
	return out
}

// checker decides one claim on a played step: the session, and where it
// stands (refreshed as the check generates on).
type checker struct {
	session.Snapshot
	se *session.Session
}

// advance generates on until until holds (nil: to the end) and refreshes
// the snapshot.
func (s *checker) advance(ctx context.Context, until func(*session.Snapshot) bool) error {
	err := s.se.DecodeUntil(ctx, until)
	s.Snapshot = s.se.Snapshot()
	return err
}

func (s *checker) claim(ctx context.Context, st lessons.Step, c lessons.Claim) (string, error) {
	tk := s.Model.Tokenizer
	show := func(id int32) string { return fmt.Sprintf("%q", tk.Display(id)) }
	token := func() (int32, error) {
		ids := tk.EncodeSpecial(c.Text, false)
		if len(ids) != 1 {
			return -1, fmt.Errorf("%q is %d tokens, not one", c.Text, len(ids))
		}
		return ids[0], nil
	}
	if c.Kind == "pieces" {
		got := len(tk.EncodeIDs(c.Text, false))
		return fmt.Sprint(got), want(got == int(c.Value), "%q is %d tokens", c.Text, got)
	}
	switch c.Kind {
	case "weights":
		return checkWeights(c)
	case "kvbytes":
		return s.checkKVBytes(c)
	case "cost":
		return checkCost(c)
	case "batched":
		return s.checkBatched(ctx, c)
	case "stop":
		return s.checkStop(ctx, c)
	case "context":
		got := s.Capacity
		return fmt.Sprint(got), want(got == int(c.Value), "the model holds %d positions", got)
	case "blocks":
		return s.checkBlocks(ctx, c)
	case "shares":
		return s.checkShares(ctx, c)
	case "cached":
		return s.checkCached(ctx, c)
	case "induction":
		return s.checkInduction(ctx, c)
	case "copying":
		return s.checkCopying(ctx, c)
	case "restores":
		return s.checkRestores(ctx, c)
	case "arch", "feature", "lacks":
		return s.checkShape(c)
	case "holds":
		return s.checkHolds(c)
	case "kl":
		return s.checkKL(ctx, c)
	case "prefill":
		return s.checkPrefill(ctx, c)
	case "kvcontext":
		return checkKVContext(c)
	case "unseen":
		return checkUnseen(c)
	case "drift", "cosine", "driftmost", "vstop":
		return s.checkVersus(st, c)
	}
	if c.Kind == "tokens" {
		got := len(s.Prompt)
		return fmt.Sprint(got), want(got == int(c.Value), "the prompt is %d tokens", got)
	}
	if c.Kind == "continues" || c.Kind == "calls" || c.Kind == "length" {
		return s.checkRun(ctx, s.GenBefore(st.Token), c)
	}
	if st.Token >= len(s.Cursor.Steps) {
		return "", fmt.Errorf("the run has no token step %d", st.Token)
	}
	step := s.Cursor.Steps[st.Token]
	id := int32(-1)
	if c.Kind != "accepts" {
		var err error
		if id, err = token(); err != nil {
			return "", err
		}
	}
	switch c.Kind {
	case "top", "p":
		if step.Logits == nil {
			return "", fmt.Errorf("token step %d has no logits", st.Token)
		}
		logits := []float32(step.Logits.Logits)
		top := engine.Argmax(logits)
		if c.Kind == "top" {
			return show(top), want(top == id, "the top token is %s", show(top))
		}
		p := float64(sample.Probabilities(logits, 1)[id])
		return fmt.Sprintf("%.4f", p), want(c.Holds(p), "p = %.4f", p)
	case "draws":
		i := s.GenBefore(st.Token)
		if st.Token >= len(s.Cursor.Steps) || i >= len(s.Gen) {
			return "", fmt.Errorf("token step %d draws nothing", st.Token)
		}
		got := s.Gen[i]
		return show(got), want(got == id, "the step draws %s", show(got))
	case "accepts", "rejects":
		return s.checkRound(step, st.Token, c, id, show)
	case "lens", "lensrank":
		return checkLens(step, st.Token, c, id, show)
	case "attends":
		k, err := s.strongestKey(step, st)
		if err != nil {
			return "", err
		}
		got := s.Written(-1)[k]
		return show(got), want(got == id, "layer %d head %d looks hardest at %s (position %d)", st.Layer, st.Head, show(got), k)
	}
	return "", fmt.Errorf("unknown claim %q", c.Kind)
}

// checkWeights checks a weights claim against the memory calculator.
func checkWeights(c lessons.Claim) (string, error) {
	shape, ok := memcalc.Preset(c.Text)
	if !ok {
		return "", fmt.Errorf("no preset named %q", c.Text)
	}
	t, err := quant.ParseType(c.Type)
	if err != nil {
		return "", err
	}
	gb := memcalc.Find(memcalc.Calculate(shape, memcalc.Inputs{Weights: t, KVBytes: 2, Context: 1, Batch: 1}), "weights").Value / 1e9
	return fmt.Sprintf("%.2f GB", gb), want(math.Round(gb*100) == math.Round(c.Value*100), "the calculator gives %.2f GB", gb)
}

// checkRound checks a claim about a speculative round: how many guesses
// it kept, or which it rejected first.
func (s *checker) checkRound(step *trace.Step, token int, c lessons.Claim, id int32, show func(int32) string) (string, error) {
	sp := step.Speculative
	if sp == nil {
		return "", fmt.Errorf("token step %d is not a speculative round", token)
	}
	if c.Kind == "accepts" {
		return fmt.Sprint(sp.Accepted), want(sp.Accepted == int(c.Value), "the round keeps %d of %d guesses", sp.Accepted, len(sp.Proposed))
	}
	if sp.Accepted == len(sp.Proposed) {
		return "none", fmt.Errorf("the round keeps all %d guesses", len(sp.Proposed))
	}
	got := sp.Proposed[sp.Accepted]
	return show(got), want(got == id, "the round first rejects %s", show(got))
}

func want(ok bool, format string, a ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, a...)
}

// strongestKey is the position the step's last query looks at hardest in
// the lesson step's layer and head.
func (s *checker) strongestKey(step *trace.Step, st lessons.Step) (int, error) {
	if st.Layer < 1 || st.Head < 1 {
		return 0, fmt.Errorf("an attends claim needs the step's layer: and head:")
	}
	if st.Layer > len(step.Layers) || step.Layers[st.Layer-1].Attention == nil {
		return 0, fmt.Errorf("layer %d has no recorded attention", st.Layer)
	}
	w := step.Layers[st.Layer-1].Attention.Weights
	if len(w) == 0 || st.Head > len(w[len(w)-1]) {
		return 0, fmt.Errorf("head %d has no recorded weights", st.Head)
	}
	row := w[len(w)-1][st.Head-1]
	best, bestW := 0, float32(math.Inf(-1))
	for k, v := range row {
		if v > bestW {
			best, bestW = k, v
		}
	}
	return best, nil
}

// checkRun generates on (as the Explorer does, the tool's results
// inserted) until the claim can be decided.
func (s *checker) checkRun(ctx context.Context, from int, c lessons.Claim) (string, error) {
	tk := s.Model.Tokenizer
	text := func(sn *session.Snapshot) string { // as the Explorer shows it: control tokens by name
		var b strings.Builder
		for _, id := range sn.Written(from) {
			b.WriteString(tk.Display(id))
		}
		return b.String()
	}
	decided := func(sn *session.Snapshot) bool {
		switch c.Kind {
		case "continues":
			return len(text(sn)) >= len(c.Text)
		case "length":
			return sn.Done
		}
		return slices.Contains(sn.Calls, c.Text)
	}
	if err := s.advance(ctx, decided); err != nil {
		return "", err
	}
	if c.Kind == "length" {
		n := len(s.Gen)
		ended := n > 0 && s.Model.Tokenizer.IsEOG(s.Gen[n-1])
		return fmt.Sprint(n), want(n == int(c.Value) && ended, "the run samples %d tokens (ending generation: %v)", n, ended)
	}
	if c.Kind == "calls" {
		got := strings.Join(s.Calls, ", ")
		return got, want(slices.Contains(s.Calls, c.Text), "the run calls the calculator with [%s]", got)
	}
	got := text(&s.Snapshot)
	return got, want(strings.HasPrefix(got, c.Text), "the run writes %q", got)
}

// checkLens checks a logit-lens claim against the step's recorded lens:
// the likeliest token after the claim's layer at the last position, or
// the claimed token's rank there.
func checkLens(step *trace.Step, token int, c lessons.Claim, id int32, show func(int32) string) (string, error) {
	if c.Block > len(step.Layers) || step.Layers[c.Block-1].Lens == nil {
		return "", fmt.Errorf("token step %d recorded no logit lens for layer %d", token, c.Block)
	}
	L := step.Layers[c.Block-1].Lens
	if c.Kind == "lens" {
		top := L.Top[len(L.Top)-1][0].ID
		return show(top), want(top == id, "after layer %d the likeliest is %s", c.Block, show(top))
	}
	rank := sample.Rank(L.Last, id)
	return fmt.Sprint(rank), want(c.Holds(float64(rank)), "after layer %d %s ranks %d", c.Block, show(id), rank)
}

// checkShape decides the claims about the step's model's family: its
// architecture, and the ways its forward pass differs from llama's.
func (s *checker) checkShape(c lessons.Claim) (string, error) {
	if c.Kind == "arch" {
		got := s.Model.Config.Arch
		return got, want(got == c.Text, "the model's architecture is %s", got)
	}
	var keys []string
	for _, f := range s.Model.Features() {
		keys = append(keys, f.Key)
	}
	got := strings.Join(keys, ", ")
	if c.Kind == "feature" {
		return got, want(slices.Contains(keys, c.Text), "the model's differences from llama are %s", got)
	}
	return got, want(!slices.Contains(keys, c.Text), "the model has %s", c.Text)
}
