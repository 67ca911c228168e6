// Package views renders Stepthrough's pages as templ components. Every
// component takes a typed view-model built by the server from an engine
// trace; views format numbers but never compute them.
package views

import (
	"slices"

	"github.com/a-h/templ"
)

// Page is the whole Explorer page.
type Page struct {
	Models        []string
	ModelLabels   map[string]string // family, size, type, context of each (from the file's header)
	Settings      Settings
	AssetsMissing string
	SessionID     string
	Explorer      Explorer
}

// Settings are the Explorer's form values, as the user gave them.
type Settings struct {
	PromptMax                                    int // the prompt's limit in characters (spec's)
	Prompt, Model, Backend                       string
	Temperature, TopK, TopP, MinP, TypicalP      string
	RepeatPenalty, RepeatLastN, FreqPen, PresPen string
	Seed, Order, MaxTokens                       string
	Special, Tools                               string
	Draft, DraftK                                string
	Ablate                                       string // the run's interventions, written (L1H2;L3mlp)
	Steer                                        string // the run's steering, written (SteerExample)
	MeanOver                                     string // the mean ablation's reference text ("": to zero)
	MeanOverMax                                  int    // its longest, in bytes
	AblateMax                                    int
	// what spec allows: the backends, the most new tokens, the
	// draft's k (the most, and the default the form offers)
	Backends                []string
	MaxTokensMax, DraftKMax int
	DraftKDefault           string
}

// Explorer is the part of the page that changes as the user steps.
type Explorer struct {
	Error       string
	Notice      string
	BackendInfo string
	Stages      []Stage
	Current     Stage
	Step        int // token step index (0 = prefill)
	Steps       int
	Generated   []GenToken
	SoFar       TextSoFar // what this token step predicts from
	URL         string    // shareable URL of this view
	End         bool      // no further stage or token
	Forwards    int       // forward passes run by this session (the slider must not add any)
	Seed        string
	Timing      Timing
	Panel       Panel
	Map         *ModelMap
	Edits       *EditEffect   // the run's interventions and what they change here (nil: none)
	Ablate      string        // the run's interventions as the settings form writes them (L1H2; L2mlp)
	Examples    []Example     // offered before the first run
	Versus      *Versus       // this stage under another weight type (nil: none chosen)
	Picker      *VersusPicker // the choice of that type (the page draws it once)
}

// TextSoFar is the text a token step predicts the next token of: the
// prompt, then the tokens written before this step (never the step's own
// token), each valid UTF-8. A question shows it.
type TextSoFar struct {
	Prompt, Generated string
}

// Example is an example prompt on the first page.
type Example struct {
	Prompt, Why, URL string
}

// GenToken is a generated token.
type GenToken struct {
	ID    int32
	Bytes string // the token's text as it is (it may be part of a character)
	// Text is what the token adds to the text a page shows, valid UTF-8:
	// a character cut over several tokens whole on the first of them, a
	// byte that makes no character escaped ("\x8a").
	Text string
	// Inserted marks a token the runtime wrote (a tool's result), not
	// one the model sampled.
	Inserted bool
}

// Stage is one stop in the pipeline strip.
type Stage struct {
	Index       int
	Name        string // tokenize, embed, attention, mlp, logits, softmax, sampler, sample, kv
	Label       string
	Layer       int    // -1 unless attention or mlp
	SamplerStep int    // -1 unless sampler
	Rank        int    // its place along the pipeline (package present's stage registry)
	Term        string // the glossary word that explains it
	Current     bool
	Done        bool
}

// Timing holds measured times in milliseconds.
type Timing struct {
	PrefillMS, TTFTMS, TPOTMS float64
	TPOTRange                 [2]float64 // the fastest and slowest decode step
	Decoded                   int        // decode steps TPOT is the mean of
	HaveGen                   bool
}

// Panel is one stage's view model: the numbers the engine computed for
// it, drawn as the page's panel (Component) and as a handout (svg). Each
// stage kind has its own type; a new stage is a new type with these two
// methods, registered with the stage that builds it (package session).
type Panel interface {
	Component() templ.Component
	svg(d *svgDoc)
}

func (p *TokenizePanel) Component() templ.Component  { return TokenizeView(p) }
func (p *EmbedPanel) Component() templ.Component     { return EmbedView(p) }
func (p *AttentionPanel) Component() templ.Component { return AttentionView(p) }
func (p *MLPPanel) Component() templ.Component       { return MLPView(p) }
func (p *LogitsPanel) Component() templ.Component    { return LogitsView(p) }
func (p *SoftmaxPanel) Component() templ.Component   { return SoftmaxView(p) }
func (p *SamplerPanel) Component() templ.Component   { return SamplerView(p) }
func (p *SamplePanel) Component() templ.Component    { return SampleView(p) }
func (p *KVPanel) Component() templ.Component        { return KVView(p) }
func (p *SpeculativePanel) Component() templ.Component {
	return SpeculativeView(p)
}

// Token is a token chip.
type Token struct {
	ID         int32
	Bytes      string // Go-quoted exact bytes
	Piece      string
	Start, End int
	Added      bool
	Hex        string // the exact bytes in hex, for hover
	Show       string // the text drawn: spaces as ·, a newline as ↵ (ShowPiece), a control token's name
	Note       string // what Show's symbols stand for, or why the piece is empty (PieceNote)
	Special    bool   // a control token (BOS, EOS, chat markup)
}

// TokenGroup is what the tokenized text draws as one box: one token, or
// byte tokens that only together make a character (猫 is three).
type TokenGroup struct {
	Text   string // the character(s) a byte group makes
	Bytes  bool   // a group of partial-character tokens
	Tokens []Token
}

// TokenizePanel shows the prompt's tokens over the text.
type TokenizePanel struct {
	Groups []TokenGroup
	BOS    bool // the tokenizer added a beginning-of-sequence token
	Text   string
	Tokens []Token
}

// EmbedPanel shows the lookup of the current token's row in the
// embedding table (a window of the table with the row lit), the position
// row added where the architecture has one, each new token's input
// vector, and a 2-D map of the prompt's tokens among their nearest
// neighbours in the table.
type EmbedPanel struct {
	Rows     []VecRow
	NotDrawn int // earlier positions not drawn
	PCA      []Point
	PCANote  string
	// the current (last) position's lookup
	Pos, Vocab, Embd int
	ID               int32
	Piece            string
	Table            []VecRow // rows of the table around ID
	Lit              int      // index of ID's row in Table
	TokenRow         VecRow   // the row looked up
	PosRow           VecRow   // the learned position row added (GPT-2); empty otherwise
	Input            VecRow   // what enters layer 1
}

// VecRow is a labelled vector drawn as a heat strip.
type VecRow struct {
	Label  string
	Values []float32
	Max    float32 // largest magnitude, for the colour scale
	ID     string  // an element id, for a picture drawn from the same values
}

// Point is a labelled 2-D point.
type Point struct {
	Label  string
	X, Y   float64
	Prompt bool // a token of the prompt (else a neighbour from the table)
}

// AttentionPanel is one layer's attention for one head.
type AttentionPanel struct {
	Layer, Layers, Head, Heads, KVHead int
	// Toggle writes the shown head as an intervention (L1H2); HeadOff: the
	// run switches it off (or scales it)
	Toggle                 string
	HeadOff                bool
	OffNote                string // what the run's interventions do to this head's output, in words ("" when nothing)
	ShowScores             bool
	QueryLabels, KeyLabels []string
	Cells                  [][]float32 // [query][key]: weights or scores; NaN where masked
	First                  int         // position of the first query row
	Current                int         // row index of the current token
	Max, Min               float32
	Arcs                   []float32 // the current token's weights over the keys (this head)
	HeadRows               []VecRow  // the current token's weights for every head of the layer
	Math                   []AttnTerm
	MathMax, MathSum       float64 // the largest score and Σ exp(score − max)
	Scale                  float32 // 1/√d
	HeadDim                int
	// Focus is the key the current token weighs most (this head), for the
	// panel's one-line summary: its label, position and weight
	FocusKey string
	FocusPos int
	FocusW   float32
}

// AttnTerm is one key's part in the current row's softmax: the engine's
// scaled score and weight, and exp(score − max) between them.
type AttnTerm struct {
	Key           string
	Score, Exp, W float64
}

// MLPPanel shows the feed-forward block of a layer for the last token.
type MLPPanel struct {
	Layer int
	// Toggle writes this layer's MLP as an intervention (L2mlp); Off: the
	// run switches it off (or scales it)
	Toggle string
	Off    bool
	// AttnToggle writes this layer's attention output as an intervention
	// (L2attn), offered beside the residual stream it adds to; AttnOff:
	// the run switches it off (or scales it)
	AttnToggle string
	AttnOff    bool
	// TopUnits are the units most active at the last position (and any
	// the run switches off), each to switch off or on
	TopUnits      []UnitToggle
	Kind          string
	Act           VecRow // what the down projection reads: gelu(up), or silu(gate)·up
	NormBefore    float32
	NormAfterAttn float32
	NormAfterMLP  float32
	// the last position, through the block
	FFN, Shown  int    // hidden units, and how many of them the strips draw
	Pre, Post   VecRow // before and after the nonlinearity (up and gelu(up), or gate and silu(gate))
	Up          VecRow // SwiGLU's multiplier; empty for GELU
	Out         VecRow // the down projection: what the block adds
	ResidBefore VecRow // the stream before the add (after attention)
	ResidAfter  VecRow // the stream after it
}

// Bar is a token with a number.
type Bar struct {
	ID      int32
	Piece   string
	Value   float64 // logit or probability
	Width   float64 // 0..100 for the bar
	Removed bool
	Chosen  bool
	Branch  string // a Compare link that forces this token instead ("what if?")
	Logit   float64
	Before  float64 // probability before this sampler step (-1: not recorded)
	Cum     float64 // cumulative probability down the list
	Out     bool    // below the top-p cut
	// TopPCum is the running sum, down the same list, of the
	// probabilities the chain's top-p step reads (softmax panel; -1: the
	// token did not reach top-p).
	TopPCum float64
}

// LogitsPanel is the top raw logits.
type LogitsPanel struct {
	Pos     int
	Top     []Bar
	Rest    int
	RestMin float64
	RestMax float64
	Vocab   int
	Lens    *LensGrid // what each layer would predict (nil: not recorded for this model)
}

// LensGrid is the logit lens: for each layer (rows, first to last) and
// position (columns), the token the model would predict if it ended
// after that layer, and where the final prediction ranks.
type LensGrid struct {
	Positions []string  // the position's token, as columns
	Rows      []LensRow // one per layer
	Final     string    // the final prediction at the last position
}

// LensRow is one layer's lens.
type LensRow struct {
	Layer     int // from 1
	Cells     []LensCell
	FinalRank int // the final prediction's rank at the last position, from 1
}

// LensCell is one layer's likeliest token at one position.
type LensCell struct {
	Piece string
	P     float64 // its probability (T = 1)
	Final bool    // it is the model's final prediction there
}

// SoftmaxPanel is probabilities at a temperature, before any sampler step,
// with the tokens the run's sampler chain keeps for the draw at the
// sliders' temperature and top-p (the engine's chain, in the run's order).
type SoftmaxPanel struct {
	// the sliders' ranges (spec's)
	TLo, THi, PLo, PHi float64
	Temperature        float64 // the slider's: the bars' T
	RunT               string  // the run's temperature, as the form shows it
	Greedy             bool    // the run samples at T = 0 (the argmax)
	Top                []Bar   // Value: p at Temperature; Cum: cumulative; Out: the chain removes it
	Rest               int     // tokens not listed
	RestP              float64 // their total probability
	Sum                float64 // over the whole vocabulary
	Vocab              int
	TopP               float64     // the slider's top-p
	ChainT             float64     // the temperature the chain ran at (0: greedy)
	Funnel             []MapFilter // the chain's steps at ChainT and TopP, in order, with their counts
	ChainErr           string      // why the chain could not run ("" when it ran)
	Kept               int         // tokens the chain keeps for the draw
	KeptP              float64     // their probability in these bars
	Prefix             bool        // the kept are the Kept most likely bars (a cut line can mark them)
	Chain              []string    // the run's sampler chain in order
	TempAt             int         // the temperature step's index in Chain (-1: none)
	ZMax, Norm         float64     // the largest logit and Σ exp((z − ZMax)/T): p = exp((z − ZMax)/T) / Norm
	// TopPReads says which probabilities the chain's top-p step reads
	// ("after top-k, at T = 1"): its cut is checked against their running
	// sum (Bar.TopPCum), not against the bars' cumulative at the slider's
	// T. Empty when the chain has no top-p step or skips it.
	TopPReads string
	// CutBy is the chain step that made its last cut (the cut line's
	// reason): "top-p" is explained by TopPReads; any other by CutNote
	// ("temperature (T = 0): 14 → 1, greedy: …"). Empty: nothing cut.
	CutBy, CutNote string
}

// SamplerPanel is one step of the chain.
type SamplerPanel struct {
	Index, Count  int
	Name          string
	Skipped       bool
	Setting       string
	Kept          []Bar // after the step, renormalised; Before: p going in
	Removed       []Bar // Before: p going in
	RemovedCount  int
	Before, After int
	Funnel        []MapFilter // the whole chain's counts, for the funnel
	Cumulative    bool        // top-p: Cum is the running sum of Before
	TopP          float64
	Temperature   string  // the temperature step's setting; "" when it is not in the chain
	AfterTemp     bool    // this step follows the temperature step
	KeptMass      float64 // Σ p going in over the kept (a filter's renormaliser); 0 when not every kept token is listed or the step rescales logits
}

// SamplePanel is the draw.
type SamplePanel struct {
	Greedy bool
	U      float64
	Chosen Bar
	CDF    []CDFBar
}

// CDFBar is a survivor's slice of the cumulative distribution.
type CDFBar struct {
	ID          int32
	Piece       string
	P, From, To float64
	Chosen      bool
	Branch      string
}

// KVPanel shows the cache.
type KVPanel struct {
	Layers        []KVLayer
	BytesUsed     int
	BytesAlloc    int
	Len, Capacity int
	Saved         int // positions not recomputed this step thanks to the cache
	Appended      int // positions appended this step, in every layer
	RowBytes      int // bytes one position takes in one layer (K and V)
	Positions     []KVPos
	NotListed     int // earlier positions counted, not listed
	LayersDrawn   int // layers whose new K and V rows are drawn
	KVDim         int // values per position per layer in K (and in V)
}

// KVPos is one cached position in the table.
type KVPos struct {
	Pos   int
	Token string
	New   bool // appended this step; otherwise read from the cache
}

// KVLayer is one layer's cache growth: the newest row's K and V.
type KVLayer struct {
	Layer    int
	Len      int
	NewK     []VecRow // the last rows appended this step
	NewV     []VecRow
	NotDrawn int // rows appended this step before those
}

// SpeculativePanel is one round of speculative decoding, drawn up to its
// phase: propose (the draft's tokens as ghost chips with q), verify (p
// from the target's one batched pass), accept (each verdict with u and
// p/q, the residual, the token emitted after them), rollback (the cache
// rows appended and dropped, and the round's measured time).
type SpeculativePanel struct {
	Phase         string // propose, verify, accept or rollback
	Draft         string // the draft model's name
	K             int
	Greedy        bool
	TopsRaw       bool     // QTop and PTop are raw probabilities (temperature 1), not after the chains
	Before        []string // the last committed tokens before the round
	Proposals     []SpecProposal
	Accepted      int
	Next          Bar // the token emitted after the kept proposals
	Bonus         bool
	Residual      []Bar // max(0, p − q) normalised, at the rejected position
	ResidualCount int
	Cells         []KVCell // the target's cache positions around the round
	RolledBack    int
	DraftDropped  int
	DraftMS       float64
	VerifyMS      float64
	Emitted       int
	// the run so far, up to this round: its rounds' measured time and the
	// tokens they wrote, against a plain decode step of the model measured
	// at the run's start
	Rounds, Proposed, Kept int
	RunMS                  float64
	RunTokens              int
	RoundMSPerToken        []float64 // each round so far: its time per token written
	PlainStepMS            float64
	PlainStepRange         [2]float64 // the fastest and slowest timed plain step
	CompareURL             string     // this run plain and speculative, side by side
}

// MSPerToken is this round's measured time per token it wrote.
func (s *SpeculativePanel) MSPerToken() float64 {
	return (s.DraftMS + s.VerifyMS) / float64(max(1, s.Emitted))
}

// Speedup is the run's speed so far against plain decoding: a plain step's
// time over the rounds' time per token (above 1: faster).
func (s *SpeculativePanel) Speedup() float64 {
	if s.RunMS <= 0 || s.RunTokens == 0 {
		return 0
	}
	return s.PlainStepMS / (s.RunMS / float64(s.RunTokens))
}

// SpeedupRange is the spread behind Speedup: the slowest round against the
// slowest plain step, and the fastest against the fastest (0, 0 before a
// round).
func (s *SpeculativePanel) SpeedupRange() (lo, hi float64) {
	if len(s.RoundMSPerToken) == 0 || s.PlainStepRange[0] <= 0 {
		return 0, 0
	}
	return s.PlainStepRange[0] / slices.Max(s.RoundMSPerToken), s.PlainStepRange[1] / slices.Min(s.RoundMSPerToken)
}

// SpecProposal is one drafted token and what became of it.
type SpecProposal struct {
	Pos     int
	Token   Bar // the proposed token (Value: q)
	Q, P    float64
	U       float64
	HasU    bool
	Verdict string // accepted, rejected, or unchecked (after a rejection)
	QTop    []Bar  // the draft's most likely tokens here (after its chain)
	PTop    []Bar  // the target's
}

// Ratio is p/q, the acceptance probability's argument.
func (p SpecProposal) Ratio() float64 {
	if p.Q <= 0 {
		return 0
	}
	return p.P / p.Q
}

// KVCell is one cache position in the rollback picture.
type KVCell struct {
	Pos   int
	Piece string
	State string // kept (before the round), new (appended and kept), dropped
}

// withLabel is a model's name with its description, when it has one.
func withLabel(name, label string) string {
	if label == "" {
		return name
	}
	return name + " — " + label
}

// EditEffect is what the run's interventions change at this token step:
// the next-token distribution without them (before) and with them
// (after), both at T = 1 from the engine's logits.
type EditEffect struct {
	Edits   string    // the written edits (L1H2;L2mlp)
	Items   []string  // each in words
	Top     []EditRow // the likeliest tokens before, with their probability after
	Token   string    // the likeliest token before the edits
	WasP    float64   // its probability before
	NowP    float64   // and after
	NowRank int       // its rank after, from 1
	NewTop  string    // the likeliest token after, when it is another
	KL      float64   // KL(before ‖ after), nats
}

// EditRow is one token's probability before and after the edits.
type EditRow struct {
	Piece         string
	Before, After float64
}

// UnitToggle is one MLP unit with its activation and its intervention.
type UnitToggle struct {
	Unit   int     // from 1
	Value  float64 // its activation at the last position
	Toggle string  // L2U17
	Off    bool    // the run switches it off (or scales it)
}

// SteerExample is the steering the Explorer's form offers as its example:
// on the default model it steers "She was very" toward " happy" without
// breaking the model (present's TestSteerExample holds it to that).
const SteerExample = "L3:happy|sad*1"
