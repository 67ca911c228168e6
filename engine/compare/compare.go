package compare

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
	"stepthrough/spec"
)

// Strategy is one lane's decoding strategy.
type Strategy struct {
	Spec          string        `json:"spec"` // as the user wrote it
	Kind          string        `json:"kind"` // greedy, sample or beam
	Params        sample.Params `json:"-"`
	Width         int           `json:"beam_width,omitempty"`
	LengthPenalty float64       `json:"length_penalty,omitempty"`
	// Force are tokens the lane takes first, whatever the sampler says (a
	// branch: "what if it had picked the other word?").
	Force []int32 `json:"force,omitempty"`
	// Draft and K make a speculative lane (Kind "speculative"): the draft
	// model proposes K tokens a round, the lane's model verifies them.
	Draft string `json:"draft,omitempty"`
	K     int    `json:"k,omitempty"`
	// Ablate is the lane's interventions, written ("L4H5;L2mlp"): the
	// lane reads the prompt and generates with them (its own prefill, so
	// a broken model runs beside the intact one).
	Ablate string         `json:"ablate,omitempty"`
	edits  *intervene.Set // Ablate, read
	// Steer is the lane's steering, written L2:happy|sad*4 (texts without
	// commas): its direction is read on the lane's model at the lane's
	// start and added from the prompt on, as Ablate's edits are.
	Steer string           `json:"steer,omitempty"`
	steer *intervene.Steer // Steer, read
	// Mean makes Ablate's switched-off heads and units mean ablations
	// (spec.Run.MeanOver): each takes its mean over this text (without
	// commas), read on the lane's model at the lane's start.
	Mean string `json:"mean,omitempty"`
}

// ParseLane reads a lane: "greedy"; "beam=4[,length-penalty=1]";
// "spec=DRAFT[,k=4]" with sampler settings (speculative decoding with a
// draft model file, or self:N, the model's own first N layers; "greedy,"
// first for greedy); or sampler settings
// "temperature=0.7,top-p=0.9,seed=1" (the run spec's lane
// codec: temperature, top-k, top-p, min-p, typical-p, repeat-penalty,
// repeat-last-n, frequency-penalty, presence-penalty, seed, order — order
// takes llama.cpp, transformers, or steps joined by '>'). Unset sampler
// keys take llama.cpp's defaults; a lane without a seed uses sharedSeed
// when given.
func ParseLane(laneText string, sharedSeed *uint64) (Strategy, error) {
	s := Strategy{Spec: laneText, Kind: "sample", Params: sample.Defaults()}
	laneText = strings.TrimSpace(laneText)
	if rest, ok := strings.CutPrefix(laneText, "greedy,"); ok { // greedy with more keys, e.g. a forced branch
		laneText = "temperature=0," + rest
	}
	if laneText == "greedy" {
		s.Kind, s.Params.Temperature, s.Params.SeedSet = "greedy", 0, true
		return s, nil
	}
	for _, kv := range strings.Split(laneText, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return s, fmt.Errorf("lane %q: %q is not key=value (or the lane \"greedy\")", laneText, kv)
		}
		num := func() (float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("lane %q: %s %q is not a number", laneText, k, v)
			}
			return f, nil
		}
		integer := func() (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("lane %q: %s %q is not a whole number", laneText, k, v)
			}
			return n, nil
		}
		var err error
		if known, serr := spec.SetLane(&s.Params, k, v); known {
			if serr != nil {
				return s, fmt.Errorf("lane %q: %w", laneText, serr)
			}
			continue
		}
		switch k {
		case "beam":
			s.Kind = "beam"
			if s.Width, err = integer(); err == nil && (s.Width < 2 || s.Width > 8) {
				err = fmt.Errorf("lane %q: beam width %d: choose 2 to 8", laneText, s.Width)
			}
		case "length-penalty":
			s.LengthPenalty, err = num()
		case "spec":
			if s.Draft = strings.TrimSpace(v); s.Draft == "" {
				err = fmt.Errorf("lane %q: spec names a draft model", laneText)
			}
		case "k":
			if s.K, err = integer(); err == nil && (s.K < 1 || s.K > spec.MaxDraftK) {
				err = fmt.Errorf("lane %q: k %d: choose 1 to %d", laneText, s.K, spec.MaxDraftK)
			}
		case "ablate":
			set, perr := intervene.Parse(v)
			if perr != nil {
				err = fmt.Errorf("lane %q: %w", laneText, perr)
			} else if len(set.Edits) > 0 {
				s.edits, s.Ablate = set, set.String()
			}
		case "steer":
			st, perr := intervene.ParseSteer(v)
			if perr != nil {
				err = fmt.Errorf("lane %q: %w", laneText, perr)
			} else {
				s.steer, s.Steer = &st, st.String()
			}
		case "mean":
			if s.Mean = strings.TrimSpace(v); s.Mean == "" || len(s.Mean) > spec.MaxMeanOverChars {
				err = fmt.Errorf("lane %q: mean takes a reference text of 1 to %d bytes", laneText, spec.MaxMeanOverChars)
			}
		case "force":
			for _, t := range strings.Split(v, ">") {
				id, perr := strconv.ParseInt(t, 10, 32)
				if perr != nil || id < 0 {
					err = fmt.Errorf("lane %q: force takes token ids joined by '>', got %q", laneText, v)
					break
				}
				s.Force = append(s.Force, int32(id))
			}
			if len(s.Force) > 256 {
				err = fmt.Errorf("lane %q: at most 256 forced tokens", laneText)
			}
		default:
			err = fmt.Errorf("lane %q: unknown key %q", laneText, k)
		}
		if err != nil {
			return s, err
		}
	}
	if s.Kind == "beam" && math.IsNaN(s.LengthPenalty) {
		return s, fmt.Errorf("lane %q: length-penalty must be a number", laneText)
	}
	if s.Kind == "beam" && len(s.Force) > 0 {
		return s, fmt.Errorf("lane %q: a beam lane cannot force tokens", laneText)
	}
	if s.K != 0 && s.Draft == "" {
		return s, fmt.Errorf("lane %q: k is the draft's: add spec=DRAFT", laneText)
	}
	if s.Mean != "" && (s.edits == nil || !slices.ContainsFunc(s.edits.Edits, func(e intervene.Edit) bool { return e.Meanable() })) {
		return s, fmt.Errorf("lane %q: mean needs ablate= with a head or a unit switched off", laneText)
	}
	if (s.edits != nil || s.steer != nil) && (s.Kind == "beam" || s.Draft != "") {
		return s, fmt.Errorf("lane %q: an ablated or steered lane samples or is greedy (no beams, no draft)", laneText)
	}
	if s.Draft != "" && (s.Kind == "beam" || len(s.Force) > 0) {
		return s, fmt.Errorf("lane %q: a speculative lane cannot search beams or force tokens", laneText)
	}
	if !s.Params.SeedSet && sharedSeed != nil {
		s.Params.Seed, s.Params.SeedSet = *sharedSeed, true
	}
	if err := s.Params.Validate(); err != nil {
		return s, fmt.Errorf("lane %q: %w", laneText, err)
	}
	if s.Params.Temperature == 0 && s.Kind == "sample" {
		s.Kind = "greedy"
	}
	if s.Draft != "" {
		s.Kind = "speculative"
		if s.K == 0 {
			s.K = spec.DefaultDraftK
		}
	}
	return s, nil
}

// Candidate is a token with its probability after the lane's chain.
type Candidate struct {
	ID int32   `json:"id"`
	P  float32 `json:"p"`
}

// Step is what a lane did at one position.
type Step struct {
	Token   int32       `json:"token"`
	Forced  bool        `json:"forced,omitempty"` // taken from Strategy.Force, not sampled
	LogProb float64     `json:"logprob"`          // log p under the model (raw logits, T = 1)
	U       float64     `json:"u,omitempty"`
	Greedy  bool        `json:"greedy,omitempty"`
	Top     []Candidate `json:"top,omitempty"` // after the lane's sampler chain
}

// Metrics sum up a lane.
type Metrics struct {
	Tokens           int     `json:"tokens"`
	MeanLogProb      float64 `json:"mean_logprob"`
	Perplexity       float64 `json:"perplexity"`
	Distinct1        float64 `json:"distinct_1"`
	Distinct2        float64 `json:"distinct_2"`
	RepeatedTrigrams int     `json:"repeated_trigrams"`
	Stop             string  `json:"stop"` // eos or max_tokens
}

// Lane is one strategy's run.
type Lane struct {
	Strategy Strategy    `json:"strategy"`
	Seed     uint64      `json:"seed"`
	Tokens   []int32     `json:"tokens"`
	Steps    []Step      `json:"steps"`
	Beam     *BeamResult `json:"beam,omitempty"`
	Metrics  Metrics     `json:"metrics"`
	// DecodeMS is the measured time of the lane's generation after the
	// shared prefill (its forward passes and sampling; a speculative
	// lane's draft and verify passes, not the draft's own prefill), and
	// TokensPerSec the tokens after the first over it: one decoding speed,
	// measured lane after lane in one run.
	DecodeMS     float64 `json:"decode_ms"`
	TokensPerSec float64 `json:"tokens_per_sec"` // the median of Speeds
	// Speeds are the lane's decoding speed in each run (Options.Rounds,
	// the lanes alternating in a rotated order each round).
	Speeds      []float64  `json:"speeds"`
	Speculative *SpecStats `json:"speculative,omitempty"`
	ended       bool       // stopped at an end-of-generation token
}

// Result is a whole comparison.
type Result struct {
	Prompt     []int32 `json:"prompt"`
	Lanes      []Lane  `json:"lanes"`
	Divergence int     `json:"divergence"` // first step where the lanes differ; -1 if never
	// Measured: the shared prefill, the cache copies that give each lane
	// its own continuation, and (for comparison) one prefill per lane.
	PrefillMS         float64 `json:"prefill_ms"`
	CopyMS            float64 `json:"copy_ms"`
	SeparatePrefillMS float64 `json:"separate_prefill_ms"`
	// MeasuredAt is when the speeds were measured.
	MeasuredAt time.Time `json:"measured_at"`
}

// Options configure Run.
type Options struct {
	N int // tokens per lane
	// Draft prepares a speculative lane's draft model by name (on the
	// lane model's backend); nil refuses speculative lanes.
	Draft func(name string) (*engine.Loaded, error)
	// Rounds is how many times each lane's generation is timed (1 to 9;
	// 0: 3): its tokens come from the first, and its speed is the median
	// over all, the lanes taking turns in a rotated order each round so
	// the machine's noise falls on each alike.
	Rounds int
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Run prefills prompt once on a session of the loaded model and runs every
// lane from a fork of it (a copy of its KV cache), on whatever backend the
// model was loaded on.
func Run(ctx context.Context, lm *engine.Loaded, prompt []int32, lanes []Strategy, opt Options) (*Result, error) {
	m := lm.Model
	if len(lanes) < 1 || len(lanes) > 6 {
		return nil, fmt.Errorf("compare: %d lanes: choose 1 to 6", len(lanes))
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("compare: empty prompt")
	}
	ctxLen := len(prompt) + opt.N + 1
	if ctxLen > m.Config.ContextLen {
		return nil, fmt.Errorf("compare: %d prompt tokens and %d new ones exceed the model's context of %d", len(prompt), opt.N, m.Config.ContextLen)
	}
	for _, st := range lanes { // a verify pass may look k positions past the last token
		ctxLen = min(max(ctxLen, len(prompt)+opt.N+1+st.K), m.Config.ContextLen)
	}
	base, err := lm.NewSession(ctxLen)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	res := &Result{Prompt: prompt, Divergence: -1}
	if _, err := base.Eval(ctx, prompt); err != nil { // warm-up, so the timings compare like with like
		return nil, err
	}
	base.Reset()
	start := time.Now()
	logits, err := base.Eval(ctx, prompt)
	if err != nil {
		return nil, err
	}
	res.PrefillMS = ms(time.Since(start))
	first := slices.Clone(logits)
	// the same prefill once per lane, measured for the comparison, in a
	// second session so the shared cache stays as it is
	sep, err := lm.NewSession(ctxLen)
	if err != nil {
		return nil, err
	}
	for range lanes {
		sep.Reset()
		start = time.Now()
		if _, err := sep.Eval(ctx, prompt); err != nil {
			sep.Close()
			return nil, err
		}
		res.SeparatePrefillMS += ms(time.Since(start))
	}
	sep.Close()
	run := func(st Strategy) (Lane, float64, error) {
		if st.Kind == "speculative" {
			return specLane(ctx, base, st, prompt, first, opt)
		}
		return runLane(ctx, lm, base, st, prompt, first, opt.N, m.Tokenizer.IsEOG)
	}
	for _, st := range lanes {
		lane, copyMS, err := run(st)
		if err != nil {
			return nil, err
		}
		lane.Speeds = []float64{lane.speed()}
		res.CopyMS += copyMS
		lane.Metrics = metrics(lane)
		res.Lanes = append(res.Lanes, lane)
	}
	if err := retime(res, lanes, opt.Rounds, run); err != nil {
		return nil, err
	}
	res.Divergence = divergence(res.Lanes)
	res.MeasuredAt = time.Now()
	return res, nil
}

// speed is the lane's tokens after the first over its decode time.
func (l Lane) speed() float64 {
	if n := len(l.Tokens) - 1; n > 0 && l.DecodeMS > 0 {
		return float64(n) / (l.DecodeMS / 1000)
	}
	return 0
}

// retime runs every lane rounds−1 more times, each round in another order
// (lane i+r first in round r), with the seed each drew in its first run, so
// it generates the same tokens; each lane's speed is the median.
func retime(res *Result, lanes []Strategy, rounds int, run func(Strategy) (Lane, float64, error)) error {
	if rounds == 0 {
		rounds = 3
	}
	if rounds < 1 || rounds > 9 {
		return fmt.Errorf("compare: %d rounds: choose 1 to 9", rounds)
	}
	for r := 1; r < rounds; r++ {
		for j := range lanes {
			i := (j + r) % len(lanes)
			st := lanes[i]
			st.Params.Seed, st.Params.SeedSet = res.Lanes[i].Seed, true
			again, _, err := run(st)
			if err != nil {
				return err
			}
			res.Lanes[i].Speeds = append(res.Lanes[i].Speeds, again.speed())
		}
	}
	for i := range res.Lanes {
		s := slices.Clone(res.Lanes[i].Speeds)
		slices.Sort(s)
		res.Lanes[i].TokensPerSec = s[len(s)/2]
	}
	return nil
}

func runLane(ctx context.Context, lm *engine.Loaded, base *engine.Session, st Strategy, prompt []int32, first []float32, n int, eog func(int32) bool) (lane Lane, copyMS float64, err error) {
	lane = Lane{Strategy: st}
	if st.Kind == "beam" {
		return beamLane(ctx, base, st, first, n, eog)
	}
	var r *engine.Session
	edits, err := lm.ResolveEdits(ctx, st.edits, engine.EditSources{MeanOver: st.Mean, Steer: st.steer})
	if err != nil {
		return lane, 0, fmt.Errorf("lane %q: %w", st.Spec, err)
	}
	if edits != nil { // the edits change the prompt's pass too: a prefill of its own
		if r, first, err = prefill(ctx, lm, edits, prompt, base.Capacity()); err != nil {
			return lane, 0, err
		}
	} else if r, copyMS, err = fork(base); err != nil {
		return lane, 0, err
	}
	defer r.Close()
	smp, err := sample.New(st.Params)
	if err != nil {
		return lane, 0, err
	}
	lane.Seed = smp.Seed()
	smp.Accept(prompt...)
	start := time.Now()
	defer func() { lane.DecodeMS = ms(time.Since(start)) }()
	var step Step
	var bad error
	choose := func(logits []float32) int32 {
		step = Step{}
		id := smp.Sample(logits, &sample.Observer{Draw: func(d sample.DrawResult) {
			step.U, step.Greedy, step.Top = d.U, d.Greedy, drawTop(d)
		}})
		if i := len(lane.Tokens); i < len(st.Force) { // the sampler still ran (its generator advanced), but the branch takes the forced token
			if int(st.Force[i]) >= len(logits) {
				bad = fmt.Errorf("lane %q: forced token %d is outside the vocabulary", st.Spec, st.Force[i])
				return id
			}
			id, step.Forced = st.Force[i], true
		}
		return id
	}
	finish, err := r.Continue(ctx, first, engine.Gen{Limits: engine.Limits{MaxTokens: n}, Sampler: smp, Choose: choose,
		Emit: func(id int32, logits []float32) error {
			if bad != nil {
				return bad
			}
			step.Token, step.LogProb = id, sample.LogSoftmax(logits)[id]
			lane.Tokens, lane.Steps = append(lane.Tokens, id), append(lane.Steps, step)
			return nil
		}})
	lane.ended = finish == engine.FinishEOS
	return lane, copyMS, err
}

// prefill reads prompt in a new session of lm whose passes apply edits
// and returns it with the prompt's last logits.
func prefill(ctx context.Context, lm *engine.Loaded, edits *intervene.Set, prompt []int32, capacity int) (*engine.Session, []float32, error) {
	r, err := lm.NewSession(capacity)
	if err != nil {
		return nil, nil, err
	}
	if err := r.SetEdits(edits); err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("lane: %w", err)
	}
	logits, err := r.Eval(ctx, prompt)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("lane: %w", err)
	}
	return r, slices.Clone(logits), nil
}

// fork copies the shared prefill's session for a lane, timing the copy.
func fork(base *engine.Session) (*engine.Session, float64, error) {
	start := time.Now()
	r, err := base.Fork()
	return r, ms(time.Since(start)), err
}

// sessionBeams implements Beams with one engine session per slot, all on
// one loaded model.
type sessionBeams struct {
	ctx    context.Context
	slots  []*engine.Session
	logits [][]float32
}

func (b *sessionBeams) LogProbs(i int) []float64 { return sample.LogSoftmax(b.logits[i]) }
func (b *sessionBeams) Fork(dst, src int) error {
	b.logits[dst] = slices.Clone(b.logits[src])
	return b.slots[dst].CopyFrom(b.slots[src])
}
func (b *sessionBeams) Advance(i int, tok int32) error {
	l, err := b.slots[i].Eval(b.ctx, []int32{tok})
	b.logits[i] = slices.Clone(l)
	return err
}

func beamLane(ctx context.Context, base *engine.Session, st Strategy, first []float32, n int, eog func(int32) bool) (Lane, float64, error) {
	lane := Lane{Strategy: st}
	b := &sessionBeams{ctx: ctx}
	defer func() {
		for _, r := range b.slots {
			r.Close()
		}
	}()
	var copyMS float64 // the copy that starts the lane (slot 0); the spare slots are forks too
	for i := 0; i <= st.Width; i++ {
		start := time.Now()
		r, err := base.Fork()
		if err != nil {
			return lane, 0, err
		}
		if i == 0 {
			copyMS = ms(time.Since(start))
		}
		b.slots, b.logits = append(b.slots, r), append(b.logits, nil)
	}
	b.logits[0] = slices.Clone(first)
	start := time.Now()
	res, err := BeamSearch(b, st.Width, n, st.LengthPenalty, eog)
	lane.DecodeMS = ms(time.Since(start))
	if err != nil {
		return lane, copyMS, err
	}
	lane.Beam = &res
	lane.Tokens, lane.ended = res.Best.Tokens, res.Best.Done
	// per-token log-probabilities of the chosen beam, from a scoring pass
	r := b.slots[0]
	if err := r.CopyFrom(base); err != nil {
		return lane, copyMS, err
	}
	logits := first
	for i, tok := range lane.Tokens {
		lane.Steps = append(lane.Steps, Step{Token: tok, LogProb: sample.LogSoftmax(logits)[tok], Greedy: true})
		if i < len(lane.Tokens)-1 {
			l, err := r.Eval(ctx, []int32{tok})
			if err != nil {
				return lane, copyMS, err
			}
			logits = l
		}
	}
	return lane, copyMS, nil
}

func metrics(l Lane) Metrics {
	m := Metrics{Tokens: len(l.Tokens), Stop: "max_tokens"}
	if len(l.Steps) == 0 {
		return m
	}
	var sum float64
	for _, s := range l.Steps {
		sum += s.LogProb
	}
	m.MeanLogProb = sum / float64(len(l.Steps))
	m.Perplexity = math.Exp(-m.MeanLogProb)
	if l.ended {
		m.Stop = "eos"
	}
	m.Distinct1, _ = distinct(l.Tokens, 1)
	m.Distinct2, _ = distinct(l.Tokens, 2)
	_, m.RepeatedTrigrams = distinct(l.Tokens, 3)
	return m
}

// distinct returns unique/total n-grams and how many n-grams repeat an
// earlier one.
func distinct(toks []int32, n int) (float64, int) {
	if len(toks) < n {
		return 0, 0
	}
	seen := map[string]bool{}
	repeats := 0
	for i := 0; i+n <= len(toks); i++ {
		k := fmt.Sprint(toks[i : i+n])
		if seen[k] {
			repeats++
		}
		seen[k] = true
	}
	total := len(toks) - n + 1
	return float64(len(seen)) / float64(total), repeats
}

// divergence is the first step where the lanes' tokens differ (a lane that
// ended counts as different), or -1.
func divergence(lanes []Lane) int {
	if len(lanes) < 2 {
		return -1
	}
	longest := 0
	for _, l := range lanes {
		longest = max(longest, len(l.Tokens))
	}
	for i := 0; i < longest; i++ {
		for _, l := range lanes[1:] {
			if i >= len(l.Tokens) || i >= len(lanes[0].Tokens) || l.Tokens[i] != lanes[0].Tokens[i] {
				return i
			}
		}
	}
	return -1
}

// drawTop is a draw's five likeliest candidates after the sampler chain,
// and the drawn one when it is not among them.
func drawTop(d sample.DrawResult) []Candidate {
	var top []Candidate
	for _, c := range d.Candidates[:min(5, len(d.Candidates))] {
		top = append(top, Candidate{c.ID, c.P})
	}
	if d.Index >= 5 && d.Index < len(d.Candidates) {
		c := d.Candidates[d.Index]
		top = append(top, Candidate{c.ID, c.P})
	}
	return top
}
