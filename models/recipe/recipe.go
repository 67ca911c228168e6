// Package recipe makes the lesson models from scratch: it generates the
// corpus, trains the byte-level BPE tokenizer, trains the main and the
// draft model, evaluates them against the quality bars, and writes
// models/lesson.gguf, models/lesson-draft.gguf and a report. Everything is
// deterministic from the seed. `stepthrough train-lesson` runs it.
package recipe

import (
	"cmp"
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
	"stepthrough/engine/chat"
	"stepthrough/engine/gguf"
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
	// Family is the second family's model (lesson-qwen3.gguf), trained on
	// the same corpus with the same tokenizer by RunFamily.
	Family      train.Config
	FamilySteps int
	Batch, T    int
	Threads     int
	Progress    io.Writer
	Scale       float64 // corpus size factor (1 = the default few MB)
	// CheckpointEvery saves the training state every so many steps into
	// OutDir/checkpoints; Resume continues from a saved state.
	CheckpointEvery int
	Resume          bool
	// Eval sizes the quality bars' measurement (ReportSizes by default).
	Eval EvalSizes
	// Copying makes the lesson model v3's corpus (corpus.WithCopying, and
	// repeated random token sequences), tokenized by the tokenizer of the
	// model file TokenizerFrom instead of a newly trained one.
	Copying       bool
	TokenizerFrom string
	// Repeats is the share of repeated random token sequences added to
	// the copying corpus's stream, relative to its text's tokens.
	Repeats float64
	// InitFrom, with Copying, starts the model from this F32 model file's
	// weights (the committed lesson.gguf, say) instead of a random
	// initialisation; its learning rate then peaks at FineTuneLR.
	InitFrom string
	// RecallGuard, when above 0, is the weight of the copying run's extra
	// loss on recall with the last layer's heads partly switched off
	// (recallGuard).
	RecallGuard float64
}

// PeakLR is the learning rate the schedule warms up to from scratch;
// FineTuneLR the one from a trained model's weights (Options.InitFrom).
const (
	PeakLR     = 3e-3
	FineTuneLR = 1e-3
)

// Defaults are the committed models' recipe.
func Defaults() Options {
	return Options{
		Seed: 1, OutDir: "models", Vocab: 1024,
		Main:      train.Config{Ctx: 512, Embd: 192, Layers: 4, Heads: 6, FFN: 768},
		Draft:     train.Config{Ctx: 512, Embd: 64, Layers: 2, Heads: 2, FFN: 256},
		Family:    train.Config{Ctx: 512, Embd: 160, Layers: 4, Heads: 5, FFN: 448, Arch: train.Qwen3},
		MainSteps: 7000, DraftSteps: 2000, FamilySteps: 4000, Batch: 4, T: 512, Scale: 1, CheckpointEvery: 500, Repeats: 0.1,
		Eval: ReportSizes,
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
	Scale       float64        `json:"corpus_scale"`
	// ParisP is p(" Paris" | "The capital of France is") at temperature 1:
	// the product of its tokens' probabilities; ParisGreedy says whether
	// greedy decoding writes " Paris".
	ParisP      float64 `json:"paris_probability"`
	ParisTop    string  `json:"paris_top_token"`
	ParisGreedy bool    `json:"paris_greedy"`
	Bars        Bars    `json:"bars"`
	// ChatTemplate is the template stored in the model file.
	ChatTemplate string `json:"chat_template"`
	// DraftAgreement is how often the draft's greedy next token equals
	// the main model's on held-out text.
	DraftAgreement float64 `json:"draft_agreement"`
	// Quantization is the model at each precision on held-out text.
	Quantization []QuantRow         `json:"quantization,omitempty"`
	Samples      []string           `json:"samples"`
	Seconds      map[string]float64 `json:"seconds"`
	// Family is family-report.json, Copying copying-report.json, when the
	// README is rendered with them.
	Family  *FamilyReport  `json:"-"`
	Copying *CopyingReport `json:"-"`
}

// ModelReport describes one trained model.
type ModelReport struct {
	Config     string             `json:"config"`
	Params     int                `json:"params"`
	Steps      int                `json:"steps"`
	Batch      int                `json:"batch"`
	Window     int                `json:"window"`
	TokensPerS float64            `json:"tokens_per_second"`
	GFLOPS     float64            `json:"gflop_per_second"`
	FinalLoss  float64            `json:"final_train_loss"`
	ValLoss    map[string]float64 `json:"val_loss"`
	Bytes      int64              `json:"bytes"`
}

// Vocabulary trains the tokenizer on the training texts: byte-level BPE
// with single digits (the qwen2 pre-tokenizer), the chat format's control
// and user-defined tokens, BOS added to every prompt, "<|end|>" as the
// end-of-turn token, and the chat template.
func Vocabulary(texts []string, size int) (*tokenizer.Vocab, error) {
	v, err := tokenizer.TrainBPE(texts, size, tokenizer.TrainOptions{Pre: "qwen2", Control: chat.Control, UserDefined: chat.UserDefined})
	if err != nil {
		return nil, err
	}
	for i, t := range v.Tokens {
		if t == chat.End {
			v.EOT = int32(i)
		}
	}
	v.AddBOS, v.ChatTemplate = true, chat.Template
	return v, nil
}

// prepared is the corpus and tokenizer every model of a run trains on.
type prepared struct {
	o         Options
	train     []corpus.Doc
	held      []corpus.Doc
	vocab     *tokenizer.Vocab
	tk        *tokenizer.Tokenizer
	stream    []int32
	recall    []int // stream positions of capitals' answers (RecallGuard)
	val       map[corpus.Family][]int32
	logf      func(format string, a ...any)
	bytes     map[string]int
	corpusS   float64
	tokenizeS float64
}

// prepare generates the corpus, writes its sample, trains the tokenizer
// and encodes the training and held-out texts.
func prepare(o Options) (*prepared, error) {
	p := &prepared{o: o, bytes: map[string]int{}, val: map[corpus.Family][]int32{}}
	p.logf = func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}
	t0 := time.Now()
	p.train, p.held = corpus.Split(o.corpus(), 0.1)
	var texts []string
	for _, d := range p.train {
		texts = append(texts, d.Text)
		p.bytes[string(d.Family)] += len(d.Text)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	sample := "corpus-sample.txt"
	if o.Copying {
		sample = "corpus-sample-v3.txt"
	}
	if err := writeCorpus(filepath.Join(o.OutDir, sample), p.train[:min(200, len(p.train))]); err != nil {
		return nil, err
	}
	p.corpusS = time.Since(t0).Seconds()
	t0 = time.Now()
	vocab, err := o.vocabulary(texts)
	if err != nil {
		return nil, err
	}
	tk, err := tokenizer.New(vocab)
	if err != nil {
		return nil, err
	}
	p.vocab, p.tk = vocab, tk
	p.tokenizeS = time.Since(t0).Seconds()
	p.logf("tokenizer: %d tokens (%d merges) in %.1fs", len(vocab.Tokens), len(vocab.Merges), p.tokenizeS)
	// every document starts with BOS (<|endoftext|>), as every prompt does;
	// the generator's chat markup is special text it wrote itself
	for _, d := range p.train {
		ids := tk.EncodeSpecial(d.Text, true)
		if o.Copying && o.RecallGuard > 0 {
			for _, at := range recallAnswers(tk, d.Text, ids) {
				p.recall = append(p.recall, len(p.stream)+at)
			}
		}
		p.stream = append(p.stream, ids...)
	}
	if o.Copying {
		p.stream = append(p.stream, randomRepeats(tk, int(o.Repeats*float64(len(p.stream))), o.Seed)...)
	}
	p.stream = append(p.stream, vocab.BOS)
	for _, d := range p.held {
		p.val[d.Family] = append(p.val[d.Family], tk.EncodeSpecial(d.Text, true)...)
	}
	p.logf("corpus: %d training tokens", len(p.stream))
	if o.Copying && o.RecallGuard > 0 {
		p.logf("recall guard: %d capitals' answers, weight %g", len(p.recall), o.RecallGuard)
	}
	return p, nil
}

// trainModel trains one model on the prepared stream: AdamW, warm-up and
// cosine decay, checkpoints under OutDir/checkpoints/NAME.ckpt.
func (p *prepared) trainModel(ctx context.Context, name string, c train.Config, steps int, seed uint64) (*train.Model, ModelReport, error) {
	o, stream, logf := p.o, p.stream, p.logf
	c.Vocab = len(p.vocab.Tokens)
	m := train.NewModel(c, seed, o.Threads)
	peak := PeakLR
	if o.InitFrom != "" {
		if err := initFrom(m, o.InitFrom); err != nil {
			return nil, ModelReport{}, err
		}
		peak = FineTuneLR
		logf("%s: starting from the weights of %s", name, o.InitFrom)
	}
	opt := train.NewAdamW(len(m.W), peak, 0.1)
	r := rand.New(rand.NewPCG(seed, 11))
	B, T := o.Batch, min(o.T, c.Ctx)
	tok, tgt := make([]int32, B*T), make([]int32, B*T)
	mr := ModelReport{Config: c.String(), Params: c.Params(), Steps: steps, Batch: o.Batch, Window: min(o.T, c.Ctx), ValLoss: map[string]float64{}}
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
	var guard *recallGuard
	if p.recall != nil {
		probe, err := engine.RepeatedRandom(p.tk, c.Vocab, guardProbeLen, guardProbeSeqs, o.Seed+1)
		if err != nil {
			return nil, mr, err
		}
		if guard, err = newRecallGuard(p.recall, o.RecallGuard, c, len(m.W), probe); err != nil {
			return nil, mr, err
		}
		guard.every = measureEvery(o.CheckpointEvery)
	}
	start := time.Now()
	var ema, guardEMA float64
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
		if guard != nil {
			gl, err := guard.step(m, stream, p.vocab.BOS, seed, s)
			if err != nil {
				return nil, mr, err
			}
			guardEMA = 0.98*guardEMA + 0.02*gl
		}
		lr := train.Schedule(s, 100, steps, peak, peak/10)
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
			msg := fmt.Sprintf("%s %s step %d/%d loss %.3f (avg %.3f) lr %.2e %.0f tokens/s ETA %s", name, bar, s+1, steps, loss, ema, lr, tps, eta.Round(time.Second))
			if guard != nil {
				msg += fmt.Sprintf(" recall guard %.3f, off: %s", guardEMA, cmp.Or(guard.Heads(), "by chance"))
			}
			logf("%s", msg)
		}
	}
	mr.TokensPerS = float64((steps-first)*B*T) / time.Since(start).Seconds()
	mr.GFLOPS = mr.TokensPerS * c.TrainFLOPsPerToken(T) / 1e9
	mr.FinalLoss = ema
	for f, toks := range p.val {
		if l := evalLoss(m, toks, T); !math.IsNaN(l) { // NaN: less held-out text than one window
			mr.ValLoss[string(f)] = l
		}
	}
	return m, mr, nil
}

// initFrom sets m's parameters from the model file at path.
func initFrom(m *train.Model, path string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return fmt.Errorf("--init: %w", err)
	}
	defer f.Close()
	if err := m.Init(f); err != nil {
		return fmt.Errorf("--init %s: %w", path, err)
	}
	return nil
}

// write stores a trained model as GGUF at path and records its size.
func (p *prepared) write(m *train.Model, path, name string, r *ModelReport) error {
	w, err := m.Writer(name, p.vocab)
	if err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	r.Bytes = st.Size()
	return nil
}

// Run executes the recipe.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Seed: o.Seed, Scale: o.Scale, Seconds: map[string]float64{}}
	p, err := prepare(o)
	if err != nil {
		return nil, err
	}
	rep.CorpusBytes, rep.TrainTokens = p.bytes, len(p.stream)
	rep.Vocab, rep.ChatTemplate = len(p.vocab.Tokens), p.vocab.ChatTemplate
	rep.Seconds["corpus"], rep.Seconds["tokenizer"] = p.corpusS, p.tokenizeS
	t0 := time.Now()
	mainM, mainR, err := p.trainModel(ctx, "lesson", o.Main, o.MainSteps, o.Seed)
	if err != nil {
		return nil, err
	}
	rep.Seconds["train_main"] = time.Since(t0).Seconds()
	t0 = time.Now()
	draftM, draftR, err := p.trainModel(ctx, "draft", o.Draft, o.DraftSteps, o.Seed+1)
	if err != nil {
		return nil, err
	}
	rep.Seconds["train_draft"] = time.Since(t0).Seconds()
	mainPath, draftPath := filepath.Join(o.OutDir, "lesson.gguf"), filepath.Join(o.OutDir, "lesson-draft.gguf")
	if err := p.write(mainM, mainPath, "Stepthrough lesson model", &mainR); err != nil {
		return nil, err
	}
	if err := p.write(draftM, draftPath, "Stepthrough lesson draft model", &draftR); err != nil {
		return nil, err
	}
	rep.Main, rep.Draft = mainR, draftR
	t0 = time.Now()
	if err := evaluate(ctx, rep, mainPath, draftPath, p.held, o.Eval, o.Threads); err != nil {
		return nil, err
	}
	rep.Seconds["evaluate"] = time.Since(t0).Seconds()
	return rep, writeJSON(filepath.Join(o.OutDir, "report.json"), rep)
}

// FamilyFile is the second family's model in the output directory.
const FamilyFile = "lesson-qwen3.gguf"

// FamilyReport is what RunFamily measured.
type FamilyReport struct {
	Seed        uint64      `json:"seed"`
	Scale       float64     `json:"corpus_scale"`
	Arch        string      `json:"architecture"`
	Model       ModelReport `json:"model"`
	ParisP      float64     `json:"paris_probability"`
	ParisTop    string      `json:"paris_top_token"`
	ParisGreedy bool        `json:"paris_greedy"`
	Bars        Bars        `json:"bars"`
	Seconds     float64     `json:"train_seconds"`
}

// RunFamily trains the second family's model (o.Family, qwen3) on the
// corpus and tokenizer Run uses, writes OutDir/lesson-qwen3.gguf and
// OutDir/family-report.json, and measures it as the main model is.
func RunFamily(ctx context.Context, o Options) (*FamilyReport, error) {
	p, err := prepare(o)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	m, mr, err := p.trainModel(ctx, "qwen3", o.Family, o.FamilySteps, o.Seed+2)
	if err != nil {
		return nil, err
	}
	rep := &FamilyReport{Seed: o.Seed, Scale: o.Scale, Arch: o.Family.Arch, Seconds: time.Since(t0).Seconds()}
	path := filepath.Join(o.OutDir, FamilyFile)
	if err := p.write(m, path, "Stepthrough lesson model, qwen3 family", &mr); err != nil {
		return nil, err
	}
	rep.Model = mr
	if err := rep.measure(ctx, path, p.held, o.Eval, o.Threads); err != nil {
		return nil, err
	}
	return rep, writeJSON(filepath.Join(o.OutDir, "family-report.json"), rep)
}

// ReevaluateFamily measures the family model in dir again and rewrites
// its family-report.json (training figures are kept).
func ReevaluateFamily(ctx context.Context, dir string, threads int) (*FamilyReport, error) {
	path := filepath.Join(dir, "family-report.json")
	rep, err := ReadFamilyReport(path)
	if err != nil {
		return nil, err
	}
	_, held := corpus.Split(corpus.Default(rep.Seed).Scaled(rep.Scale), 0.1)
	if err := rep.measure(ctx, filepath.Join(dir, FamilyFile), held, ReportSizes, threads); err != nil {
		return nil, err
	}
	return rep, writeJSON(path, rep)
}

// measure fills in the quality bars and the Paris figures.
func (r *FamilyReport) measure(ctx context.Context, path string, held []corpus.Doc, sizes EvalSizes, threads int) error {
	bars, err := Measure(ctx, path, held, sizes, threads)
	if err != nil {
		return err
	}
	r.Bars = bars
	r.ParisP, r.ParisTop, r.ParisGreedy, err = MeasureParis(ctx, path, threads)
	return err
}

// ReadFamilyReport reads family-report.json.
func ReadFamilyReport(path string) (*FamilyReport, error) { return readJSON[FamilyReport](path) }

// readJSON reads a report written by writeJSON.
func readJSON[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := new(T)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// writeJSON writes v indented, with a final newline.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
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

// Reevaluate measures the quality bars again on the models in dir and
// updates its report.json (training figures are kept).
// threads are the CPU threads to use (0: one per core).
func Reevaluate(ctx context.Context, dir string, threads int) (*Report, error) {
	rep, err := ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	if rep.Scale == 0 {
		rep.Scale = 1
	}
	_, held := corpus.Split(corpus.Default(rep.Seed).Scaled(rep.Scale), 0.1)
	start := time.Now()
	if err := evaluate(ctx, rep, filepath.Join(dir, "lesson.gguf"), filepath.Join(dir, "lesson-draft.gguf"), held, ReportSizes, threads); err != nil {
		return nil, err
	}
	rep.Seconds["evaluate"] = time.Since(start).Seconds()
	return rep, writeJSON(filepath.Join(dir, "report.json"), rep)
}
