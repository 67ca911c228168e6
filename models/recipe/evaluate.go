package recipe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"

	"stepthrough/engine"
	"stepthrough/engine/agent"
	"stepthrough/engine/chat"
	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/models/corpus"
)

// Rate is a measured success rate with a few of its misses.
type Rate struct {
	Hits   int      `json:"hits"`
	Cases  int      `json:"cases"`
	Misses []string `json:"misses,omitempty"`
}

// Value is Hits/Cases (0 with no cases).
func (r Rate) Value() float64 { return float64(r.Hits) / float64(max(r.Cases, 1)) }

func (r *Rate) add(ok bool, miss func() string) {
	r.Cases++
	if ok {
		r.Hits++
	} else if len(r.Misses) < 8 {
		r.Misses = append(r.Misses, miss())
	}
}

func (r Rate) String() string {
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*r.Value(), r.Hits, r.Cases)
}

// Bars are the quality bars of models/README.md, measured with the engine
// by greedy decoding.
type Bars struct {
	CapitalTrain Rate `json:"capital_train_phrasings"`    // full capital name
	CapitalHeld  Rate `json:"capital_held_out_phrasings"` // phrasings never trained on
	Copy         Rate `json:"copy_full_name"`             // invented names never seen
	CopyFirst    Rate `json:"copy_first_token"`
	ToolCall     Rate `json:"tool_call_well_formed"` // exactly <calc>a+b</calc>
	ToolAnswer   Rate `json:"tool_answer_right"`     // with the runtime executing the call
	Direct       Rate `json:"direct_answer_right"`   // no tool, no thinking
	Think        Rate `json:"think_answer_right"`    // digit steps, then the answer
	ChatEnd      Rate `json:"chat_ends_turn"`        // the reply ends with <|end|>
}

// Thresholds of the bars (issue #14).
const (
	MinCapitalTrain = 0.95
	MinCapitalHeld  = 0.90
	MinCopy         = 0.90
	MinTool         = 0.95
	MinChatEnd      = 0.95
)

// Failures lists every bar the measurements miss.
func (b Bars) Failures() []string {
	var out []string
	check := func(name string, r Rate, min float64) { out = appendShort(out, name, r, min) }
	check("capitals, training phrasings", b.CapitalTrain, MinCapitalTrain)
	check("capitals, held-out phrasings", b.CapitalHeld, MinCapitalHeld)
	check("copying invented names", b.Copy, MinCopy)
	check("well-formed calculator calls", b.ToolCall, MinTool)
	check("right answers with the calculator", b.ToolAnswer, MinTool)
	check("replies that end the turn", b.ChatEnd, MinChatEnd)
	if b.Think.Cases == 0 || b.Think.Value() <= b.Direct.Value() {
		out = append(out, fmt.Sprintf("thinking %s is not more often right than answering directly %s", b.Think, b.Direct))
	}
	return out
}

// appendShort appends a line to out when r has no cases or falls short
// of min.
func appendShort(out []string, name string, r Rate, min float64) []string {
	if r.Cases == 0 || r.Value() < min {
		out = append(out, fmt.Sprintf("%s: %s, bar %.0f%%", name, r, 100*min))
	}
	return out
}

// EvalSizes are how many cases each bar measures (Countries: 0 is all 193).
type EvalSizes struct {
	Copy, Sums, Chat, Countries int
	// QuantBytes is the held-out text the quantization table is measured
	// on (0: the table is not measured)
	QuantBytes int
}

// ReportSizes are the report's; the quality test uses the same.
var ReportSizes = EvalSizes{Copy: 300, Sums: 200, Chat: 200, QuantBytes: QuantTextBytes}

var errStop = errors.New("stop")

// evaluator runs prompts greedily on one session.
type evaluator struct {
	ctx context.Context
	s   *engine.Session
}

// greedy generates up to n tokens after prompt (special text parsed),
// stopping after a token for which stop is true.
func (e evaluator) greedy(prompt string, n int, stop func(id int32) bool) ([]int32, error) {
	e.s.Reset()
	tk := e.s.Model.Tokenizer
	var out []int32
	err := e.s.Greedy(e.ctx, tk.EncodeSpecial(prompt, true), n, func(id int32) error {
		out = append(out, id)
		if stop != nil && stop(id) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	return out, nil
}

// completion is what greedy decoding wrote after a prompt, against the
// word it should have written.
type completion struct {
	ok      bool   // it wrote " "+want as a whole word
	got     string // what it wrote
	firstOK bool   // its first token is want's first token
}

// completes decodes greedily after prompt for as many tokens as " "+want
// has, and one more.
func (e evaluator) completes(prompt, want string) (completion, error) {
	tk := e.s.Model.Tokenizer
	wantIDs := tk.EncodeIDs(" "+want, false)
	out, err := e.greedy(prompt, len(wantIDs)+1, nil)
	if err != nil {
		return completion{}, err
	}
	c := completion{got: tk.Decode(out), firstOK: len(out) > 0 && out[0] == wantIDs[0]}
	rest, ok := strings.CutPrefix(c.got, " "+want)
	c.ok = ok && (rest == "" || !unicode.IsLetter([]rune(rest)[0]))
	return c, nil
}

// Measure fills the bars for the model at path on the held-out documents.
func Measure(ctx context.Context, path string, held []corpus.Doc, sizes EvalSizes, threads int) (Bars, error) {
	m, err := model.Load(path)
	if err != nil {
		return Bars{}, err
	}
	defer m.Close()
	s, err := engine.NewSession(m, engine.Options{Threads: threads})
	if err != nil {
		return Bars{}, err
	}
	defer s.Close()
	e := evaluator{ctx, s}
	var b Bars
	for _, step := range []func(*Bars) error{
		func(b *Bars) error { return e.capitals(b, sizes.Countries) },
		func(b *Bars) error { return e.copying(b, held, sizes.Copy) },
		func(b *Bars) error { return e.sums(b, sizes.Sums) },
		func(b *Bars) error { return e.chatEnds(b, held, sizes.Chat) },
	} {
		if err := step(&b); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (e evaluator) capitals(b *Bars, n int) error {
	countries := corpus.Countries
	if n > 0 {
		countries = countries[:min(n, len(countries))]
	}
	for _, set := range []struct {
		ps   []corpus.Phrasing
		rate *Rate
	}{{corpus.TrainPhrasings, &b.CapitalTrain}, {corpus.HeldOutPhrasings, &b.CapitalHeld}} {
		for _, p := range set.ps {
			for _, c := range countries {
				got, err := e.completes(p.Question(c), p.Answer(c))
				if err != nil {
					return err
				}
				set.rate.add(got.ok, func() string { return fmt.Sprintf("%q → %q (want %q)", p.Question(c), got.got, p.Answer(c)) })
			}
		}
	}
	return nil
}

// copying: at the first cued later mention of a held-out story's invented
// name, greedy decoding must write the whole name.
func (e evaluator) copying(b *Bars, held []corpus.Doc, n int) error {
	return e.copyNames(&b.Copy, held, corpus.Stories, n, func(_ corpus.Doc, got completion) {
		b.CopyFirst.add(got.firstOK, func() string { return got.got })
	})
}

// copyNames adds to rate, for up to n held-out documents of family, whether
// greedy decoding writes the whole name at its first cued mention (then
// calls each, when not nil, with the document and the completion).
func (e evaluator) copyNames(rate *Rate, held []corpus.Doc, family corpus.Family, n int, each func(corpus.Doc, completion)) error {
	for _, d := range held {
		if rate.Cases == n {
			break
		}
		if d.Family != family || len(d.NameSpans) == 0 {
			continue
		}
		prompt := d.Text[:d.NameSpans[0]-1]
		got, err := e.completes(prompt, d.Name)
		if err != nil {
			return err
		}
		rate.add(got.ok, func() string { return fmt.Sprintf("…%s → %q (want %q)", tail(prompt, 40), got.got, d.Name) })
		if each != nil {
			each(d, got)
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// SumPrompt renders a sum question with an optional system prompt.
func SumPrompt(system string, s corpus.Sum) string {
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	p, _ := chat.Render(append(msgs, chat.Message{Role: "user", Content: s.Question()}), true)
	return p
}

// sums: held-out sums with the calculator (the call, and the answer with
// the runtime executing it), directly, and thinking first.
func (e evaluator) sums(b *Bars, n int) error {
	tk := e.s.Model.Tokenizer
	r := rand.New(rand.NewPCG(9, 9))
	for k := 0; k < n; k++ {
		sum := corpus.RandomSum(r, true)
		want := " = " + strconv.Itoa(sum.A+sum.B) + "."
		e.s.Reset()
		passes, err := agent.Loop(e.ctx, e.s, tk.EncodeSpecial(SumPrompt(chat.SystemCalculator, sum), true), agent.Options{MaxTokens: 40, MaxCalls: 2})
		if err != nil {
			return err
		}
		first := tk.Decode(passes[0].Output)
		b.ToolCall.add(first == sum.Call(), func() string { return fmt.Sprintf("%s → %q", sum, first) })
		all := agent.Text(tk, passes)
		last := passes[len(passes)-1].Output
		ended := len(last) > 0 && last[len(last)-1] == tk.EOT() // control tokens decode to no text
		b.ToolAnswer.add(ended && strings.HasSuffix(all, sum.Answer()), func() string { return fmt.Sprintf("%s → %q (ended the turn: %v)", sum, all, ended) })
		out, err := e.greedy(SumPrompt("", sum), 24, tk.IsEOG)
		if err != nil {
			return err
		}
		direct := tk.Decode(out)
		b.Direct.add(strings.Contains(direct, want) && strings.HasPrefix(direct, sum.String()), func() string { return fmt.Sprintf("%s → %q", sum, direct) })
		out, err = e.greedy(SumPrompt(chat.SystemThink, sum), 120, tk.IsEOG)
		if err != nil {
			return err
		}
		think := tk.Decode(out)
		_, answer, _ := strings.Cut(think, chat.ThinkClose)
		b.Think.add(strings.HasPrefix(answer, sum.Answer()), func() string { return fmt.Sprintf("%s → %q", sum, think) })
	}
	return nil
}

// chatEnds: the first turn of held-out chats must end with <|end|> within
// 120 tokens.
func (e evaluator) chatEnds(b *Bars, held []corpus.Doc, n int) error {
	tk := e.s.Model.Tokenizer
	for _, d := range held {
		if b.ChatEnd.Cases == n {
			break
		}
		if d.Family != corpus.Chat {
			continue
		}
		i := strings.Index(d.Text, chat.Assistant)
		prompt := d.Text[:i+len(chat.Assistant)]
		out, err := e.greedy(prompt, 120, tk.IsEOG)
		if err != nil {
			return err
		}
		b.ChatEnd.add(len(out) > 0 && tk.EOT() == out[len(out)-1], func() string { return fmt.Sprintf("%s → %q", tail(prompt, 60), tk.Decode(out)) })
	}
	return nil
}

// evaluate measures the bars, Paris, the draft's agreement and samples.
func evaluate(ctx context.Context, rep *Report, mainPath, draftPath string, held []corpus.Doc, sizes EvalSizes, threads int) error {
	rep.Samples = nil // each evaluation rewrites the samples, never appends
	bars, err := Measure(ctx, mainPath, held, sizes, threads)
	if err != nil {
		return err
	}
	rep.Bars = bars
	if sizes.QuantBytes > 0 {
		text := QuantText(held)
		if rep.Quantization, err = MeasureQuantization(ctx, mainPath, text[:min(len(text), sizes.QuantBytes)], quantize.Targets, threads); err != nil {
			return fmt.Errorf("quantization: %w", err)
		}
	}
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
	next := func(sess *engine.Session, ids []int32) ([]float32, error) {
		sess.Reset()
		l, err := sess.Eval(ctx, ids)
		if err != nil {
			return nil, err
		}
		return sample.Probabilities(l, 1), nil
	}
	if rep.ParisP, rep.ParisTop, rep.ParisGreedy, err = paris(ctx, s, tk); err != nil {
		return err
	}
	// draft agreement: greedy next token on held-out prefixes
	agree, total := 0, 0
	r := rand.New(rand.NewPCG(5, 5))
	for _, doc := range held[:min(300, len(held))] {
		ids := tk.EncodeSpecial(doc.Text, true)
		if len(ids) < 4 {
			continue
		}
		cut := 2 + r.IntN(min(len(ids), m.Config.ContextLen)-2)
		a, err := next(s, ids[:cut])
		if err != nil {
			return err
		}
		b, err := next(ds, ids[:cut])
		if err != nil {
			return err
		}
		total++
		if engine.Argmax(a) == engine.Argmax(b) {
			agree++
		}
	}
	rep.DraftAgreement = float64(agree) / float64(max(total, 1))
	// samples at temperature 0.8, the calculator's calls executed
	for i, prompt := range samplePrompts() {
		seed := uint64(i + 1)
		s.Reset()
		passes, err := agent.Loop(ctx, s, tk.EncodeSpecial(prompt, true), agent.Options{MaxTokens: 100, MaxCalls: 2, Sampler: func() (*sample.Sampler, error) {
			sp := sample.Defaults()
			sp.Seed, sp.SeedSet = seed, true
			return sample.New(sp)
		}})
		if err != nil {
			return err
		}
		rep.Samples = append(rep.Samples, prompt+agent.Text(tk, passes))
	}
	return nil
}

// MeasureParis loads the model at path and measures paris on it.
func MeasureParis(ctx context.Context, path string, threads int) (p float64, top string, greedy bool, err error) {
	m, err := model.Load(path)
	if err != nil {
		return 0, "", false, err
	}
	defer m.Close()
	s, err := engine.NewSession(m, engine.Options{Threads: threads})
	if err != nil {
		return 0, "", false, err
	}
	defer s.Close()
	return paris(ctx, s, m.Tokenizer)
}

// paris is p(" Paris" | "The capital of France is") at temperature 1 (the
// product of its tokens' probabilities), the first top token, and whether
// greedy decoding writes " Paris".
func paris(ctx context.Context, s *engine.Session, tk *tokenizer.Tokenizer) (p float64, top string, greedy bool, err error) {
	prompt := tk.EncodeIDs("The capital of France is", true)
	p, greedy = 1, true
	for i, id := range tk.EncodeIDs(" Paris", false) {
		s.Reset()
		l, err := s.Eval(ctx, prompt)
		if err != nil {
			return 0, "", false, err
		}
		probs := sample.Probabilities(l, 1)
		if i == 0 {
			top = string(tk.Bytes(engine.Argmax(probs)))
		}
		p *= float64(probs[id])
		greedy = greedy && engine.Argmax(probs) == id
		prompt = append(prompt, id)
	}
	return p, top, greedy, nil
}

func samplePrompts() []string {
	qa, _ := chat.Render([]chat.Message{{Role: "user", Content: "What is the capital of Japan?"}}, true)
	return []string{
		"The capital of Japan is",
		"Once upon a time, there was a",
		"const user = getUser();\n",
		qa,
		SumPrompt(chat.SystemCalculator, corpus.Sum{A: 347, B: 85}),
		SumPrompt(chat.SystemThink, corpus.Sum{A: 347, B: 85}),
	}
}
