// Package sample chooses the next token from logits through an explicit
// chain of small steps over a candidates slice: repetition/frequency/
// presence penalties, top-k, typical-p, top-p, min-p, temperature, then the
// draw.
//
// # Order
//
// The default order is llama.cpp's (penalties → top-k → typical-p → top-p
// → min-p → temperature → draw), so the filters see the untempered
// distribution. The "transformers" preset applies temperature first, as
// Hugging Face does (penalties → temperature → top-k → top-p → min-p →
// typical-p). Any order can be given; it changes the result.
//
// # Semantics
//
//   - penalties (llama.cpp): for a token seen count > 0 times in the last N
//     accepted tokens, logit = logit <= 0 ? logit*repeat : logit/repeat, then
//     logit -= count*frequency + presence.
//   - top-k keeps exactly k candidates; among equal logits the lower token id
//     ranks first (so ties are cut deterministically). k = 0 keeps all.
//   - top-p keeps the smallest prefix of the candidates sorted by
//     probability whose cumulative probability reaches p, including the token
//     that crosses it. p = 1 keeps all.
//   - min-p keeps tokens with probability >= min_p × the largest probability.
//   - typical-p keeps the tokens whose surprisal is closest to the entropy
//     until their probability mass reaches p.
//   - temperature divides logits by T; T = 0 keeps only the argmax (the first
//     maximum, i.e. the lowest id among ties): greedy decoding.
//   - the draw: softmax over the survivors in descending order of
//     probability (ties by id), u = Float64() of a PCG generator
//     (math/rand/v2, seeded with (seed, seed ^ 0x9E3779B97F4A7C15)), and the
//     chosen token is the first whose cumulative probability exceeds
//     u (u in [0, 1)). Greedy draws no u.
//
// Probabilities are recomputed (softmax over the current survivors) by every
// step that needs them and reported with each step.
package sample

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Step names a sampler step.
type Step string

// The steps a chain can contain.
const (
	Penalties   Step = "penalties"
	TopK        Step = "top-k"
	TypicalP    Step = "typical-p"
	TopP        Step = "top-p"
	MinP        Step = "min-p"
	Temperature Step = "temperature"
)

// Presets of step order.
var (
	OrderLlamaCpp     = []Step{Penalties, TopK, TypicalP, TopP, MinP, Temperature}
	OrderTransformers = []Step{Penalties, Temperature, TopK, TopP, MinP, TypicalP}
)

// ParseOrder reads "llama.cpp", "transformers", or a comma-separated list
// of step names (each at most once).
func ParseOrder(s string) ([]Step, error) {
	switch s {
	case "", "llama.cpp", "llamacpp", "llama":
		return append([]Step(nil), OrderLlamaCpp...), nil
	case "transformers", "hf":
		return append([]Step(nil), OrderTransformers...), nil
	}
	var out []Step
	seen := map[Step]bool{}
	for _, part := range strings.Split(s, ",") {
		st := Step(strings.TrimSpace(part))
		if st == "typical" {
			st = TypicalP
		}
		switch st {
		case Penalties, TopK, TypicalP, TopP, MinP, Temperature:
		default:
			return nil, &ParamError{"sampler-order", strconv.Quote(part), "an unknown step (allowed: llama.cpp, transformers, or a list of penalties, top-k, typical-p, top-p, min-p, temperature)"}
		}
		if seen[st] {
			return nil, &ParamError{"sampler-order", strconv.Quote(string(st)), "a step may appear once"}
		}
		seen[st] = true
		out = append(out, st)
	}
	return out, nil
}

// Params are the sampler settings. The zero value is not useful; start
// from Defaults.
type Params struct {
	Temperature      float64 `json:"temperature"`
	TopK             int     `json:"top_k"`
	TopP             float64 `json:"top_p"`
	MinP             float64 `json:"min_p"`
	TypicalP         float64 `json:"typical_p"`
	RepeatPenalty    float64 `json:"repeat_penalty"`
	RepeatLastN      int     `json:"repeat_last_n"` // -1: the whole history
	FrequencyPenalty float64 `json:"frequency_penalty"`
	PresencePenalty  float64 `json:"presence_penalty"`
	Seed             uint64  `json:"seed,omitempty"`
	SeedSet          bool    `json:"seed_set,omitempty"` // false: a fresh random seed is drawn (and reported)
	Order            []Step  `json:"order,omitempty"`
}

// Defaults are llama.cpp's: temperature 0.8, top-k 40, top-p 0.95,
// min-p 0.05, typical-p 1 (off), repeat-last-n 64, penalties off.
func Defaults() Params {
	return Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, TypicalP: 1, RepeatPenalty: 1, RepeatLastN: 64, Order: append([]Step(nil), OrderLlamaCpp...)}
}

// ParamError is an invalid parameter: its name, the value given and what
// is allowed. Its message is one line, whatever was typed.
type ParamError struct {
	Param   string
	Value   string
	Allowed string
}

func (e *ParamError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Param, e.Allowed)
	}
	v := e.Value
	if len(v) > 40 {
		v = strings.ToValidUTF8(v[:40], "") + "…"
	}
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		v = strconv.Quote(v)
	}
	return fmt.Sprintf("invalid %s %s: %s", e.Param, v, e.Allowed)
}

// Bounds of the float settings. Past them the arithmetic leaves float32
// (a logit divided by a temperature of 1e-300, a penalty of 1e308 times a
// count) and every probability becomes NaN.
const (
	MinTemperature = 0.001 // above 0, the smallest temperature (0 is greedy)
	MaxTemperature = 100
	MinRepeat      = 0.01
	MaxRepeat      = 100
	MaxPenalty     = 100 // the frequency and presence penalties: -100 to 100
)

// floatBound is the range one float setting may take: lo to hi, or 0 too
// when zero is set.
type floatBound struct {
	name   string
	field  func(*Params) float64
	lo, hi float64
	zero   bool
	note   string
}

// floatBounds are the float settings' ranges, in Params order: the one
// check of them, for the web form, links, lessons, Compare lanes, the API
// and the command line.
var floatBounds = []floatBound{
	{"temperature", func(p *Params) float64 { return p.Temperature }, MinTemperature, MaxTemperature, true, "0 means greedy"},
	{"top-p", func(p *Params) float64 { return p.TopP }, 0, 1, false, "1 keeps all tokens"},
	{"min-p", func(p *Params) float64 { return p.MinP }, 0, 1, false, "0 keeps all tokens"},
	{"typical-p", func(p *Params) float64 { return p.TypicalP }, 0, 1, false, "1 keeps all tokens"},
	{"repeat-penalty", func(p *Params) float64 { return p.RepeatPenalty }, MinRepeat, MaxRepeat, false, "1 is off"},
	{"frequency-penalty", func(p *Params) float64 { return p.FrequencyPenalty }, -MaxPenalty, MaxPenalty, false, "0 is off"},
	{"presence-penalty", func(p *Params) float64 { return p.PresencePenalty }, -MaxPenalty, MaxPenalty, false, "0 is off"},
}

// check refuses a value outside the bound (NaN and infinities included).
func (b floatBound) check(p *Params) error {
	v := b.field(p)
	if (v >= b.lo && v <= b.hi) || (b.zero && v == 0) {
		return nil
	}
	allowed := fmt.Sprintf("must be in [%g, %g] (%s)", b.lo, b.hi, b.note)
	if b.zero {
		allowed = fmt.Sprintf("must be 0 or in [%g, %g] (%s)", b.lo, b.hi, b.note)
	}
	return &ParamError{b.name, fmt.Sprint(v), allowed}
}

// Validate reports the first invalid parameter. Values are never clamped.
func (p *Params) Validate() error {
	for _, b := range floatBounds {
		if err := b.check(p); err != nil {
			return err
		}
	}
	switch {
	case p.TopK < 0:
		return &ParamError{"top-k", fmt.Sprint(p.TopK), "must be >= 0 (0 keeps all tokens)"}
	case p.RepeatLastN < -1:
		return &ParamError{"repeat-last-n", fmt.Sprint(p.RepeatLastN), "must be >= -1 (-1: whole history, 0: off)"}
	}
	return nil
}

// RandomSeed draws a seed from the operating system's generator.
func RandomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1 // keep it a positive int64 for JSON and CLI round trips
}
