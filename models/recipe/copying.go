package recipe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/tokenizer"
	"stepthrough/models/corpus"
)

// corpus is the options of the run's corpus.
func (o Options) corpus() corpus.Options {
	c := corpus.Default(o.Seed).Scaled(o.Scale)
	if o.Copying {
		c = c.WithCopying()
	}
	return c
}

// vocabulary is the run's tokenizer: trained on texts, or read from the
// model file TokenizerFrom.
func (o Options) vocabulary(texts []string) (*tokenizer.Vocab, error) {
	if o.TokenizerFrom == "" {
		return Vocabulary(texts, o.Vocab)
	}
	vf, err := model.LoadVocab(o.TokenizerFrom)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return vf.Tokenizer.Vocab(), nil
}

// randomRepeats is about n tokens of documents that repeat a random
// sequence of ordinary tokens (8 to 64 of them) once or twice, each after
// a BOS: text in which only copying predicts the repeats, as induction
// heads form on (Olsson et al. 2022). The sequences are drawn from a
// stream of their own, never the one the head scores are measured on.
func randomRepeats(tk *tokenizer.Tokenizer, n int, seed uint64) []int32 {
	ordinary := engine.OrdinaryTokens(tk, tk.Len())
	bos := tk.EncodeIDs("", true)
	r := rand.New(rand.NewPCG(seed, 0xc0b1e5))
	var out []int32
	for len(out) < n {
		seq := make([]int32, 8+r.IntN(57))
		for i := range seq {
			seq[i] = ordinary[r.IntN(len(ordinary))]
		}
		out = append(out, bos...)
		for range 2 + r.IntN(2) {
			out = append(out, seq...)
		}
	}
	return out
}

// CopyingFile is the lesson model v3 in the output directory of
// RunCopying.
const CopyingFile = "lesson-v3.gguf"

// RunCopying trains the lesson model v3: the main model's shape and
// steps on the copying corpus, with the tokenizer of o.TokenizerFrom, and
// writes OutDir/lesson-v3.gguf, OutDir/copying-report.json and a sample of
// the corpus (corpus-sample-v3.txt).
func RunCopying(ctx context.Context, o Options) (*CopyingReport, error) {
	o.Copying = true
	p, err := prepare(o)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	m, mr, err := p.trainModel(ctx, "lesson-v3", o.Main, o.MainSteps, o.Seed)
	if err != nil {
		return nil, err
	}
	rep := &CopyingReport{Seed: o.Seed, Scale: o.Scale, TrainTokens: len(p.stream), Seconds: time.Since(t0).Seconds(), Command: o.copyingCommand(), RecallGuard: o.RecallGuard}
	path := filepath.Join(o.OutDir, CopyingFile)
	if err := p.write(m, path, "Stepthrough lesson model", &mr); err != nil {
		return nil, err
	}
	rep.Model = mr
	if err := rep.measure(ctx, path, o.TokenizerFrom, p.held, o.Eval, o.Threads); err != nil {
		return nil, err
	}
	return rep, writeJSON(filepath.Join(o.OutDir, "copying-report.json"), rep)
}

// CopyingReport is what RunCopying measured.
type CopyingReport struct {
	Seed        uint64      `json:"seed"`
	Scale       float64     `json:"corpus_scale"`
	TrainTokens int         `json:"train_tokens"`
	Model       ModelReport `json:"model"`
	ParisP      float64     `json:"paris_probability"`
	Bars        Bars        `json:"bars"`
	Copying     CopyingBars `json:"copying"`
	// Base is the v3 bars of the model the tokenizer came from
	// (lesson.gguf), for comparison.
	Base    *CopyingBars `json:"base,omitempty"`
	Seconds float64      `json:"train_seconds"`
	// RecallGuard is the weight of the training's extra loss on recall
	// with the last layer's heads partly off (Options.RecallGuard); 0 for
	// none.
	RecallGuard float64 `json:"recall_guard,omitempty"`
	// Command is how the model was made: the train-lesson flags that
	// shape it (a resumed run says so).
	Command string `json:"command"`
	// Earlier are the runs that made the model Command starts from (its
	// --init), oldest first, as they were run: written by hand when a
	// model continues another run's, since a run cannot know how the file
	// it starts from was made.
	Earlier []EarlierRun `json:"earlier_runs,omitempty"`
}

// EarlierRun is a run that made the model a later run starts from.
type EarlierRun struct {
	Command string `json:"command"`
	// Note says what differed then (the commit, its corpus) and how long
	// it took.
	Note string `json:"note"`
}

// Thresholds of the v3 bars (issue #31), on held-out patterns.
const (
	MinNamesHeld = 0.90
	MinRepeats   = 0.95
)

// Failures lists every bar the copying model misses: the v3 bars and the
// main model's.
func (r *CopyingReport) Failures() []string {
	out := appendShort(nil, "held-out names in held-out patterns", r.Copying.NamesHeld, MinNamesHeld)
	out = appendShort(out, "held-out names at the start of the text", r.Copying.NamesStart, MinNamesHeld)
	out = appendShort(out, "held-out names beginning with a vowel", r.Copying.NamesVowel, MinNamesHeld)
	out = appendShort(out, "the repeat of random sequences", r.Copying.Repeats, MinRepeats)
	return append(out, r.Bars.Failures()...)
}

// CopyingHeldOut is the held-out split of the copying model's corpus:
// the documents its v3 bars are measured on.
func CopyingHeldOut(seed uint64, scale float64) []corpus.Doc {
	_, held := corpus.Split(Options{Copying: true, Seed: seed, Scale: scale}.corpus(), 0.1)
	return held
}

// copyingCommand is the train-lesson command line that o stands for.
func (o Options) copyingCommand() string {
	c := "go run . train-lesson --copying"
	if o.InitFrom != "" {
		c += " --init " + o.InitFrom
	}
	c += fmt.Sprintf(" --repeats %g --steps %d", o.Repeats, o.MainSteps)
	if o.RecallGuard > 0 {
		c += fmt.Sprintf(" --recall-guard %g", o.RecallGuard)
	}
	if o.Resume {
		c += " --resume"
	}
	return c + " --out DIR"
}

// measure fills in the quality bars.
// The main model's bars are measured on the default corpus's held-out
// split, as report.json measures lesson.gguf, so the two compare.
// With base (a model file, may be ""), its v3 bars too.
func (r *CopyingReport) measure(ctx context.Context, path, base string, held []corpus.Doc, sizes EvalSizes, threads int) error {
	_, baseHeld := corpus.Split(corpus.Default(r.Seed).Scaled(r.Scale), 0.1)
	bars, err := Measure(ctx, path, baseHeld, sizes, threads)
	if err != nil {
		return err
	}
	r.Bars = bars
	if r.ParisP, _, _, err = MeasureParis(ctx, path, threads); err != nil {
		return err
	}
	if r.Copying, err = MeasureCopying(ctx, path, held, sizes, threads); err != nil || base == "" {
		return err
	}
	b, err := MeasureCopying(ctx, base, held, sizes, threads)
	r.Base = &b
	return err
}

// CopyingBars are the lesson model v3's own bars (issue #31), measured
// with the engine by greedy decoding.
type CopyingBars struct {
	// NamesHeld is copying a held-out name (held-out syllables) at the
	// first cued mention in a held-out sentence pattern; NamesStart the
	// cases whose story begins with the name, NamesVowel those whose name
	// begins with a vowel (at the start of the text, its first letter is
	// a token of its own).
	NamesHeld  Rate `json:"names_held_out_patterns"`
	NamesStart Rate `json:"names_at_start_of_text"`
	NamesVowel Rate `json:"names_beginning_with_a_vowel"`
	// Repeats is the second half of repeated random token sequences of
	// 10, 20, 30 and 40 tokens, predicted token by token.
	Repeats Rate `json:"random_repeats"`
	// Passages is the same with text the model could also continue from
	// what it knows: the first PassageTokens tokens of held-out stories
	// and fact sheets, read twice.
	Passages Rate `json:"repeated_passages"`
	// Heads are every head's scores (engine.ScoreHeads on 8 repeated
	// random sequences of 20 tokens), Induction those at or above
	// InductionThreshold.
	Heads     []engine.HeadScore `json:"heads"` // highest induction score first
	Induction []string           `json:"induction_heads"`
	// Zeroed and MeanAblated are the bars again with the induction heads'
	// outputs zeroed, and replaced by their mean over held-out text.
	Zeroed      Ablation `json:"induction_heads_zeroed"`
	MeanAblated Ablation `json:"induction_heads_mean_ablated"`
	Intact      Ablation `json:"intact"`
	// Alone are the bars with each induction head zeroed on its own: a
	// head can copy and also carry recall, so switching off one head at a
	// time shows which job is whose. Copier is the one whose own job is
	// copying: zeroed alone, it costs the least recall for the most
	// copying (its capitals' rate less its held-out names' rate is the
	// highest).
	Alone  []HeadAblation `json:"each_induction_head_zeroed"`
	Copier string         `json:"copier"`
	// ByPattern splits NamesHeld by the held-out pattern of the first
	// cued mention (corpus.HeldMiddles' order): where the model fails to
	// see a slot, it misses the name's first piece too.
	ByPattern []PatternRate `json:"names_by_pattern"`
}

// PatternRate is held-out name copying in one held-out pattern: Hits
// whole names of Cases, First of them with the name's first piece right.
type PatternRate struct {
	Pattern string `json:"pattern"`
	Cases   int    `json:"cases"`
	Hits    int    `json:"hits"`
	First   int    `json:"first_piece"`
}

// countPattern adds one held-out case to the rate of its pattern.
func (b *CopyingBars) countPattern(d corpus.Doc, got completion) {
	if b.ByPattern == nil {
		for _, p := range corpus.HeldMiddles() {
			b.ByPattern = append(b.ByPattern, PatternRate{Pattern: p})
		}
	}
	for i := range b.ByPattern {
		if r := &b.ByPattern[i]; r.Pattern == d.Pattern {
			r.Cases++
			if got.ok {
				r.Hits++
			}
			if got.firstOK {
				r.First++
			}
		}
	}
}

// HeadAblation is copying and recall with one head zeroed.
type HeadAblation struct {
	Head string `json:"head"`
	Ablation
}

// Ablation is copying and recall under one set of edits.
type Ablation struct {
	Repeats   Rate `json:"random_repeats"`
	Passages  Rate `json:"repeated_passages"`
	NamesHeld Rate `json:"names_held_out_patterns"`
	// Handwritten is the hand-written checks (handwritten.tsv): sentence
	// forms the generator never writes, names of other letters.
	Handwritten  Rate    `json:"handwritten_forms"`
	CapitalTrain Rate    `json:"capital_train_phrasings"`
	ParisP       float64 `json:"paris_probability"`
}

// InductionThreshold is the induction score that names a head an
// induction head.
const InductionThreshold = 0.3

// MeasureCopying measures the v3 bars of the model at path.
func MeasureCopying(ctx context.Context, path string, held []corpus.Doc, sizes EvalSizes, threads int) (CopyingBars, error) {
	var b CopyingBars
	m, err := model.Load(path)
	if err != nil {
		return b, err
	}
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Threads: threads, Backend: "cpu"})
	if err != nil {
		return b, err
	}
	defer l.Close()
	seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, 20, 8, 1)
	if err != nil {
		return b, err
	}
	hs, err := l.ScoreHeads(ctx, seqs)
	if err != nil {
		return b, err
	}
	b.Heads = hs.List()
	off := hs.Above(InductionThreshold)
	for _, e := range off.Edits {
		b.Induction = append(b.Induction, e.String())
	}
	ref := referenceText(m.Tokenizer, held, m.Config.ContextLen)
	mean, err := l.MeanAblation(ctx, ref, off)
	if err != nil {
		return b, err
	}
	ar, err := newAblationRun(l, m, held, sizes, &b)
	if err != nil {
		return b, err
	}
	for _, run := range []struct {
		a     *Ablation
		edits *intervene.Set
		full  bool
	}{{&b.Intact, nil, true}, {&b.Zeroed, off, false}, {&b.MeanAblated, mean, false}} {
		if err := ar.measure(ctx, run.edits, run.a, run.full); err != nil {
			return b, err
		}
	}
	b.NamesHeld, b.Repeats, b.Passages = b.Intact.NamesHeld, b.Intact.Repeats, b.Intact.Passages
	return b, b.measureAlone(ctx, ar, off)
}

// measureAlone fills Alone with each of off's heads zeroed on its own, and
// names the Copier.
func (b *CopyingBars) measureAlone(ctx context.Context, ar ablationRun, off *intervene.Set) error {
	best := math.Inf(-1)
	for _, e := range off.Edits {
		h := HeadAblation{Head: e.String()}
		one := &intervene.Set{Edits: []intervene.Edit{e}}
		if err := ar.measure(ctx, one, &h.Ablation, false); err != nil {
			return err
		}
		b.Alone = append(b.Alone, h)
		if s := h.CapitalTrain.Value() - h.NamesHeld.Value(); s > best {
			best, b.Copier = s, h.Head
		}
	}
	return nil
}

// CopierZeroed is Alone's entry for the Copier (the zero Ablation when
// there is no induction head).
func (b CopyingBars) CopierZeroed() Ablation {
	for _, h := range b.Alone {
		if h.Head == b.Copier {
			return h.Ablation
		}
	}
	return Ablation{}
}

// Top are the heads of highest induction score, at most eight.
func (b CopyingBars) Top() []engine.HeadScore { return b.Heads[:min(8, len(b.Heads))] }

// referenceText is held-out text for mean ablation: the first 64
// documents that fit the context.
func referenceText(tk *tokenizer.Tokenizer, held []corpus.Doc, ctxLen int) [][]int32 {
	var out [][]int32
	for _, d := range held {
		if ids := tk.EncodeSpecial(d.Text, true); len(ids) <= ctxLen {
			out = append(out, ids)
		}
		if len(out) == 64 {
			break
		}
	}
	return out
}

// PassageTokens is the length of the passages read twice, and
// passagesPerFamily how many of each family's.
const (
	PassageTokens     = 20
	passagesPerFamily = 40
)

// passages are the first PassageTokens tokens of held-out stories and fact
// sheets, each after the start token and then again (RepeatedRandom's
// form).
func passages(tk *tokenizer.Tokenizer, held []corpus.Doc) [][]int32 {
	var out [][]int32
	n := map[corpus.Family]int{}
	for _, d := range held {
		if d.Family != corpus.Stories && d.Family != corpus.Facts || n[d.Family] == passagesPerFamily {
			continue
		}
		ids := tk.EncodeIDs(d.Text, false)
		if len(ids) < PassageTokens {
			continue
		}
		seq := tk.EncodeIDs("", true)
		seq = append(append(seq, ids[:PassageTokens]...), ids[:PassageTokens]...)
		out = append(out, seq)
		n[d.Family]++
	}
	return out
}

// ablationRun measures copying and recall of one model under edits, on
// probes made once: repeated random sequences of 10, 20, 30 and 40 tokens
// (16 of each) and the held-out passages.
type ablationRun struct {
	l        *engine.Loaded
	m        *model.Model
	held     []corpus.Doc
	sizes    EvalSizes
	b        *CopyingBars
	repeats  [][][]int32
	passages [][]int32
}

// newAblationRun makes the probes of l's model.
func newAblationRun(l *engine.Loaded, m *model.Model, held []corpus.Doc, sizes EvalSizes, b *CopyingBars) (ablationRun, error) {
	r := ablationRun{l: l, m: m, held: held, sizes: sizes, b: b, passages: passages(m.Tokenizer, held)}
	for i, n := range []int{10, 20, 30, 40} {
		seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, n, 16, uint64(100+i))
		if err != nil {
			return r, err
		}
		r.repeats = append(r.repeats, seqs)
	}
	return r, nil
}

// measure fills a with copying and recall under edits (nil: none; and
// with full, the names at the start of the text into r.b).
func (r ablationRun) measure(ctx context.Context, edits *intervene.Set, a *Ablation, full bool) error {
	l, m, held, sizes, b := r.l, r.m, r.held, r.sizes, r.b
	for _, seqs := range r.repeats {
		hits, total, err := l.CopyCount(ctx, seqs, edits)
		if err != nil {
			return err
		}
		a.Repeats.Hits += hits
		a.Repeats.Cases += total
	}
	hits, total, err := l.CopyCount(ctx, r.passages, edits)
	if err != nil {
		return err
	}
	a.Passages = Rate{Hits: hits, Cases: total}
	s, err := l.NewSession(0)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.SetEdits(edits); err != nil {
		return fmt.Errorf("copying: %w", err)
	}
	e := evaluator{ctx, s}
	var bars Bars
	if err := e.capitals(&bars, sizes.Countries); err != nil {
		return err
	}
	a.CapitalTrain = bars.CapitalTrain
	if a.ParisP, _, _, err = paris(ctx, s, m.Tokenizer); err != nil {
		return err
	}
	var each func(corpus.Doc, completion)
	if full {
		each = func(d corpus.Doc, got completion) {
			b.countPattern(d, got)
			miss := func() string { return fmt.Sprintf("%s → %q (want %q)", d.Text[:d.NameSpans[0]-1], got.got, d.Name) }
			if strings.HasPrefix(d.Text, d.Name) {
				b.NamesStart.add(got.ok, miss)
			}
			if strings.ContainsRune("AEIOU", rune(d.Name[0])) {
				b.NamesVowel.add(got.ok, miss)
			}
		}
	}
	if err := e.copyNames(&a.NamesHeld, held, corpus.Names, sizes.Copy, each); err != nil {
		return err
	}
	return e.handwritten(&a.Handwritten)
}

// ReevaluateCopying measures the model in dir (lesson-v3.gguf) against the
// v3 bars and writes dir/copying-report.json, keeping the training figures
// of an earlier report there.
func ReevaluateCopying(ctx context.Context, dir string, o Options) (*CopyingReport, error) {
	path := filepath.Join(dir, "copying-report.json")
	rep, err := ReadCopyingReport(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rep = &CopyingReport{Seed: o.Seed, Scale: o.Scale}
	case err != nil:
		return nil, err
	}
	held := CopyingHeldOut(rep.Seed, rep.Scale)
	base := filepath.Join(dir, "lesson.gguf")
	if _, err := os.Stat(base); err != nil {
		base = ""
	}
	if err := rep.measure(ctx, filepath.Join(dir, CopyingFile), base, held, ReportSizes, o.Threads); err != nil {
		return nil, err
	}
	return rep, writeJSON(path, rep)
}

// ReadCopyingReport reads copying-report.json.
func ReadCopyingReport(path string) (*CopyingReport, error) { return readJSON[CopyingReport](path) }
