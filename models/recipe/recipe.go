// Package recipe makes the lesson models from scratch: it generates the
// corpus, trains the byte-level BPE tokenizer, trains the main and the
// draft model, evaluates them against the quality bars, and writes
// models/lesson.gguf, models/lesson-draft.gguf and a report. Everything is
// deterministic from the seed. `stepthrough train-lesson` runs it.
package recipe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/engine/train"
	"stepthrough/models/corpus"
)

// Options configure a run.
type Options struct {
	Seed       uint64
	OutDir     string
	Vocab      int
	Main       train.Config // Vocab is set from the tokenizer
	Draft      train.Config
	MainSteps  int
	DraftSteps int
	Batch, T   int
	Threads    int
	Progress   io.Writer
	Scale      float64 // corpus size factor (1 = the default few MB)
	// CheckpointEvery saves the training state every so many steps into
	// OutDir/checkpoints; Resume continues from a saved state.
	CheckpointEvery int
	Resume          bool
}

// Defaults are the committed models' recipe.
func Defaults() Options {
	return Options{
		Seed: 1, OutDir: "models", Vocab: 1024,
		Main:      train.Config{Ctx: 128, Embd: 128, Layers: 4, Heads: 4, FFN: 512},
		Draft:     train.Config{Ctx: 128, Embd: 64, Layers: 2, Heads: 2, FFN: 256},
		MainSteps: 6000, DraftSteps: 3000, Batch: 8, T: 128, Scale: 1, CheckpointEvery: 500,
	}
}

// Report is what a run measured.
type Report struct {
	Seed        uint64         `json:"seed"`
	CorpusBytes map[string]int `json:"corpus_bytes"`
	TrainTokens int            `json:"train_tokens"`
	Vocab       int            `json:"vocab"`
	Main        ModelReport    `json:"main"`
	Draft       ModelReport    `json:"draft"`
	// ParisP is p(" Paris" | "The capital of France is") at temperature 1:
	// the product of its tokens' probabilities; ParisGreedy says whether
	// greedy decoding writes " Paris".
	ParisP         float64            `json:"paris_probability"`
	ParisTop       string             `json:"paris_top_token"`
	ParisGreedy    bool               `json:"paris_greedy"`
	Scale          float64            `json:"corpus_scale"`
	CapitalTop1    float64            `json:"capital_top1"`
	CapitalMisses  []string           `json:"capital_misses"`
	CopyTop1       float64            `json:"copy_top1"`
	CopyCases      int                `json:"copy_cases"`
	DraftAgreement float64            `json:"draft_agreement"`
	Samples        []string           `json:"samples"`
	Seconds        map[string]float64 `json:"seconds"`
}

// ModelReport describes one trained model.
type ModelReport struct {
	Config     string             `json:"config"`
	Params     int                `json:"params"`
	Steps      int                `json:"steps"`
	TokensPerS float64            `json:"tokens_per_second"`
	FinalLoss  float64            `json:"final_train_loss"`
	ValLoss    map[string]float64 `json:"val_loss"`
	Bytes      int64              `json:"bytes"`
}

func scaled(o corpus.Options, f float64) corpus.Options {
	o.FactsBytes = int(float64(o.FactsBytes) * f)
	o.StoriesBytes = int(float64(o.StoriesBytes) * f)
	o.CodeBytes = int(float64(o.CodeBytes) * f)
	o.ArithmeticBytes = int(float64(o.ArithmeticBytes) * f)
	return o
}

// Run executes the recipe.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Seed: o.Seed, Scale: o.Scale, CorpusBytes: map[string]int{}, Seconds: map[string]float64{}}
	logf := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	t0 := time.Now()
	trainDocs := corpus.Generate(scaled(corpus.Default(o.Seed), o.Scale))
	heldOpt := scaled(corpus.Default(o.Seed), 0.1*o.Scale)
	heldOpt.HeldOut = true
	heldDocs := corpus.Generate(heldOpt)
	var texts []string
	for _, d := range trainDocs {
		texts = append(texts, d.Text)
		rep.CorpusBytes[string(d.Family)] += len(d.Text)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeCorpus(filepath.Join(o.OutDir, "corpus-sample.txt"), trainDocs[:min(200, len(trainDocs))]); err != nil {
		return nil, err
	}
	rep.Seconds["corpus"] = time.Since(t0).Seconds()
	t0 = time.Now()
	vocab, err := tokenizer.TrainBPE(texts, o.Vocab, []string{"<|endoftext|>"})
	if err != nil {
		return nil, err
	}
	tk, err := tokenizer.New(vocab)
	if err != nil {
		return nil, err
	}
	rep.Vocab = len(vocab.Tokens)
	rep.Seconds["tokenizer"] = time.Since(t0).Seconds()
	logf("tokenizer: %d tokens (%d merges) in %.1fs", len(vocab.Tokens), len(vocab.Merges), rep.Seconds["tokenizer"])
	eot := vocab.EOS
	var stream []int32
	for _, d := range trainDocs {
		stream = append(stream, tk.EncodeIDs(d.Text, false)...)
		stream = append(stream, eot)
	}
	rep.TrainTokens = len(stream)
	val := map[corpus.Family][]int32{}
	for _, d := range heldDocs {
		val[d.Family] = append(append(val[d.Family], tk.EncodeIDs(d.Text, false)...), eot)
	}
	logf("corpus: %d training tokens", len(stream))

	trainOne := func(name string, c train.Config, steps int, seed uint64) (*train.Model, ModelReport, error) {
		c.Vocab = len(vocab.Tokens)
		m := train.NewModel(c, seed, o.Threads)
		opt := train.NewAdamW(len(m.W), 3e-3, 0.1)
		r := rand.New(rand.NewPCG(seed, 11))
		B, T := o.Batch, min(o.T, c.Ctx)
		tok, tgt := make([]int32, B*T), make([]int32, B*T)
		mr := ModelReport{Config: c.String(), Params: c.Params(), Steps: steps, ValLoss: map[string]float64{}}
		ckpt := filepath.Join(o.OutDir, "checkpoints", name+".ckpt")
		first := 0
		if o.Resume {
			if _, err := os.Stat(ckpt); err == nil {
				if _, err := train.LoadCheckpoint(ckpt, m, opt); err != nil {
					return nil, mr, err
				}
				first = opt.Step
				for i := 0; i < first*B; i++ { // replay the data sampler to where it was
					r.IntN(len(stream) - T - 1)
				}
				logf("%s: resumed at step %d from %s", name, first, ckpt)
			}
		}
		start := time.Now()
		var ema float64
		for s := first; s < steps; s++ {
			if err := ctx.Err(); err != nil {
				return nil, mr, err
			}
			for b := 0; b < B; b++ {
				at := r.IntN(len(stream) - T - 1)
				copy(tok[b*T:], stream[at:at+T])
				copy(tgt[b*T:], stream[at+1:at+T+1])
			}
			loss := m.Forward(tok, tgt, B, T, true)
			lr := train.Schedule(s, 100, steps, 3e-3, 3e-4)
			opt.Update(m, lr, 1.0)
			if s == first {
				ema = loss
			}
			if o.CheckpointEvery > 0 && (s+1)%o.CheckpointEvery == 0 && s+1 < steps {
				if err := os.MkdirAll(filepath.Dir(ckpt), 0o755); err != nil {
					return nil, mr, err
				}
				if err := train.SaveCheckpoint(ckpt, m, opt, seed); err != nil {
					return nil, mr, err
				}
			}
			ema = 0.98*ema + 0.02*loss
			if s%50 == 0 || s == steps-1 {
				el := time.Since(start).Seconds()
				tps := float64((s+1-first)*B*T) / el
				eta := time.Duration(float64(steps-s-1) * el / float64(s+1-first) * float64(time.Second))
				bar := strings.Repeat("█", 30*(s+1)/steps) + strings.Repeat("·", 30-30*(s+1)/steps)
				logf("%s %s step %d/%d loss %.3f (avg %.3f) lr %.2e %.0f tokens/s ETA %s", name, bar, s+1, steps, loss, ema, lr, tps, eta.Round(time.Second))
			}
		}
		mr.TokensPerS = float64((steps-first)*B*T) / time.Since(start).Seconds()
		mr.FinalLoss = ema
		for f, toks := range val {
			mr.ValLoss[string(f)] = evalLoss(m, toks, T)
		}
		return m, mr, nil
	}
	t0 = time.Now()
	mainM, mainR, err := trainOne("lesson", o.Main, o.MainSteps, o.Seed)
	if err != nil {
		return nil, err
	}
	rep.Seconds["train_main"] = time.Since(t0).Seconds()
	t0 = time.Now()
	draftM, draftR, err := trainOne("draft", o.Draft, o.DraftSteps, o.Seed+1)
	if err != nil {
		return nil, err
	}
	rep.Seconds["train_draft"] = time.Since(t0).Seconds()
	mainPath, draftPath := filepath.Join(o.OutDir, "lesson.gguf"), filepath.Join(o.OutDir, "lesson-draft.gguf")
	for _, x := range []struct {
		m    *train.Model
		path string
		name string
		r    *ModelReport
	}{{mainM, mainPath, "Stepthrough lesson model", &mainR}, {draftM, draftPath, "Stepthrough lesson draft model", &draftR}} {
		w, err := x.m.Writer(x.name, vocab)
		if err != nil {
			return nil, err
		}
		if err := w.WriteFile(x.path); err != nil {
			return nil, err
		}
		st, _ := os.Stat(x.path)
		x.r.Bytes = st.Size()
	}
	rep.Main, rep.Draft = mainR, draftR
	t0 = time.Now()
	if err := evaluate(ctx, rep, mainPath, draftPath, heldDocs, o.Threads); err != nil {
		return nil, err
	}
	rep.Seconds["evaluate"] = time.Since(t0).Seconds()
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(o.OutDir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return rep, nil
}

func writeCorpus(path string, docs []corpus.Doc) error {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "[%s]\n%s\n\n", d.Family, d.Text)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// evalLoss is the mean next-token loss over consecutive windows.
func evalLoss(m *train.Model, toks []int32, T int) float64 {
	var sum float64
	n := 0
	for at := 0; at+T+1 <= len(toks) && n < 64; at += T {
		sum += m.Forward(toks[at:at+T], toks[at+1:at+T+1], 1, T, false)
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// evaluate measures the quality bars with the engine itself.
func evaluate(ctx context.Context, rep *Report, mainPath, draftPath string, held []corpus.Doc, threads int) error {
	rep.Samples = nil // each evaluation rewrites the samples, never appends
	m, err := model.Load(mainPath)
	if err != nil {
		return err
	}
	defer m.Close()
	d, err := model.Load(draftPath)
	if err != nil {
		return err
	}
	defer d.Close()
	s, err := engine.NewSession(m, engine.Options{Threads: threads})
	if err != nil {
		return err
	}
	defer s.Close()
	ds, err := engine.NewSession(d, engine.Options{Threads: threads})
	if err != nil {
		return err
	}
	defer ds.Close()
	tk := m.Tokenizer
	fits := func(prompt string) bool { return len(tk.EncodeIDs(prompt, true)) < m.Config.ContextLen }
	next := func(sess *engine.Session, prompt string) ([]float32, error) {
		sess.Reset()
		l, err := sess.Eval(ctx, tk.EncodeIDs(prompt, true))
		if err != nil {
			return nil, err
		}
		return sample.Probabilities(l, 1), nil
	}
	first := func(word string) int32 { return tk.EncodeIDs(" "+word, false)[0] }
	// p(" Paris"): chain the probabilities of its tokens
	prompt := "The capital of France is"
	rep.ParisP, rep.ParisGreedy = 1, true
	for i, id := range tk.EncodeIDs(" Paris", false) {
		p, err := next(s, prompt)
		if err != nil {
			return err
		}
		if i == 0 {
			rep.ParisTop = string(tk.Bytes(engine.Argmax(p)))
		}
		rep.ParisP *= float64(p[id])
		rep.ParisGreedy = rep.ParisGreedy && engine.Argmax(p) == id
		prompt += string(tk.Bytes(id))
	}
	hits := 0
	for _, c := range corpus.Countries {
		p, err := next(s, "The capital of "+c.Name+" is")
		if err != nil {
			return err
		}
		if engine.Argmax(p) == first(c.Capital) {
			hits++
		} else {
			rep.CapitalMisses = append(rep.CapitalMisses, c.Name+" → "+c.Capital+" (model: "+strings.TrimSpace(string(tk.Bytes(engine.Argmax(p))))+")")
		}
	}
	rep.CapitalTop1 = float64(hits) / float64(len(corpus.Countries))
	// copying: the second mention of a held-out story's name
	copied, cases := 0, 0
	for _, doc := range held {
		if doc.Family != corpus.Stories || len(doc.NameSpans) == 0 {
			continue
		}
		at := doc.NameSpans[0]
		name := doc.Text[at:]
		if i := strings.IndexAny(name, " .,\"!?"); i > 0 {
			name = name[:i]
		}
		if !fits(doc.Text[:at-1]) {
			continue
		}
		p, err := next(s, doc.Text[:at-1])
		if err != nil {
			return err
		}
		cases++
		if engine.Argmax(p) == first(name) {
			copied++
		}
		if cases == 300 {
			break
		}
	}
	rep.CopyTop1, rep.CopyCases = float64(copied)/float64(max(cases, 1)), cases
	// draft agreement: greedy next token on held-out prefixes
	agree, total := 0, 0
	r := rand.New(rand.NewPCG(5, 5))
	for _, doc := range held[:min(200, len(held))] {
		ids := tk.EncodeIDs(doc.Text, false)
		if len(ids) < 4 {
			continue
		}
		cut := 2 + r.IntN(min(len(ids), m.Config.ContextLen-1)-2)
		prefix := tk.Decode(ids[:cut])
		if !fits(prefix) {
			continue
		}
		a, err := next(s, prefix)
		if err != nil {
			return err
		}
		b, err := next(ds, prefix)
		if err != nil {
			return err
		}
		total++
		if engine.Argmax(a) == engine.Argmax(b) {
			agree++
		}
	}
	rep.DraftAgreement = float64(agree) / float64(max(total, 1))
	// samples at temperature 0.8
	for i, prompt := range []string{"The capital of Japan is", "Once upon a time, there was a", "const user = getUser();\n", "7 + 5 ="} {
		sp := sample.Defaults()
		sp.Seed, sp.SeedSet = uint64(i+1), true
		smp, _ := sample.New(sp)
		s.Reset()
		var out []int32
		if err := s.Generate(ctx, tk.EncodeIDs(prompt, true), 40, smp, func(id int32) error { out = append(out, id); return nil }); err != nil {
			return err
		}
		rep.Samples = append(rep.Samples, prompt+tk.Decode(out))
	}
	return nil
}

// Reevaluate measures the quality bars again on the models in dir and
// updates its report.json (training figures are kept).
// threads are the CPU threads to use (0: all cores).
func Reevaluate(ctx context.Context, dir string, threads int) (*Report, error) {
	rep, err := ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	if rep.Scale == 0 {
		rep.Scale = 1
	}
	heldOpt := scaled(corpus.Default(rep.Seed), 0.1*rep.Scale)
	heldOpt.HeldOut = true
	start := time.Now()
	if err := evaluate(ctx, rep, filepath.Join(dir, "lesson.gguf"), filepath.Join(dir, "lesson-draft.gguf"), corpus.Generate(heldOpt), threads); err != nil {
		return nil, err
	}
	rep.Seconds["evaluate"] = time.Since(start).Seconds()
	b, _ := json.MarshalIndent(rep, "", "  ")
	return rep, os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644)
}
