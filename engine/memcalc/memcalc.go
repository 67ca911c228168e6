// Package memcalc is the arithmetic of serving a model: the weights'
// bytes at a precision, the KV cache's bytes per token (2 × layers ×
// KV heads × head size × bytes: keys and values), the cache of a context
// and a batch, how many users fit in a memory, and what a million tokens
// cost at a measured speed and an hourly price. Every figure carries its
// formula with the numbers filled in, so a page (or a lesson) shows the
// working, not only the answer.
package memcalc

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/quantize"
)

// Shape is what the arithmetic needs of a model.
type Shape struct {
	Name                    string
	Params                  float64 // weights, counted
	Layers, Heads, KVHeads  int
	HeadDim, Vocab, Context int
	// Layout is the model's tensors (nil for the round example): with it
	// the weights' bytes follow llama.cpp's per-tensor rule, which mixes
	// types (the output matrix in Q6_K, and more under Q4_K_M and Q5_K_M).
	Layout *quantize.Layout
}

// llama is a published llama-family shape with its tensors (an output
// matrix of its own, as these models have).
func llama(name string, params float64, embd, ffn, layers, heads, kvHeads, vocab, ctx int) Shape {
	l := quantize.LlamaLayout(embd, ffn, layers, heads, kvHeads, embd/heads, vocab, false)
	return Shape{Name: name, Params: params, Layers: layers, Heads: heads, KVHeads: kvHeads, HeadDim: embd / heads, Vocab: vocab, Context: ctx, Layout: &l}
}

// Presets are well-known public model shapes (their published
// configurations), and a round 70 B parameters on Llama 2 70B's shape
// (the arithmetic's easy example: 140 GB at F16).
var Presets = []Shape{
	{Name: "Round 70B (Llama 2 70B shape)", Params: 70e9, Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Vocab: 32000, Context: 4096},
	llama("Llama 2 7B", 6.74e9, 4096, 11008, 32, 32, 32, 32000, 4096),
	llama("Llama 2 13B", 13.0e9, 5120, 13824, 40, 40, 40, 32000, 4096),
	llama("Llama 2 70B", 68.98e9, 8192, 28672, 80, 64, 8, 32000, 4096),
	llama("Llama 3 8B", 8.03e9, 4096, 14336, 32, 32, 8, 128256, 8192),
	llama("Llama 3 70B", 70.6e9, 8192, 28672, 80, 64, 8, 128256, 8192),
	llama("Mistral 7B", 7.24e9, 4096, 14336, 32, 32, 8, 32000, 32768),
}

// Preset finds a preset by name.
func Preset(name string) (Shape, bool) {
	if strings.EqualFold(name, "70B (the seed's example)") { // its first name, in older links
		name = Presets[0].Name
	}
	for _, p := range Presets {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Shape{}, false
}

// FromModel is a loaded model's shape (its weights counted from its file).
func FromModel(name string, m *model.Model) Shape {
	c := m.Config
	l := quantize.LayoutOf(m.File)
	return Shape{Name: name, Params: float64(m.Params()), Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Vocab: c.Vocab, Context: c.ContextLen, Layout: &l}
}

// BitsPerWeight is a type's storage per weight, its scales included
// (block bytes × 8 ÷ block values: Q4_0 is 4.5, Q8_0 8.5).
func BitsPerWeight(t quant.Type) float64 {
	return float64(t.BlockBytes()*8) / float64(t.BlockElems())
}

// Figure is one computed quantity with its working.
type Figure struct {
	Name    string
	Value   float64
	Unit    string
	Formula string // the formula with the numbers filled in
}

func (f Figure) String() string { return fmt.Sprintf("%s = %s", f.Name, f.Formula) }

// Inputs are a calculation's settings.
type Inputs struct {
	Weights quant.Type // the weights' type
	// Target is a conversion's name when it is not one type (Q4_K_M,
	// Q5_K_M); empty means Weights.
	Target       string
	KVBytes      float64 // bytes per cached value (2: F16 as most servers; 4: this engine's F32)
	Context      int     // tokens cached per user
	Batch        int     // users at once
	MemoryGB     float64 // the accelerator's memory (decimal GB)
	TokensPerSec float64 // measured decoding throughput, all users together
	PricePerHour float64 // what the machine costs an hour, in US dollars
}

// Calculate is every figure for a shape.
func Calculate(s Shape, in Inputs) []Figure {
	weights, weightsFormula := weightBytes(s, in)
	kvTok := 2 * float64(s.Layers) * float64(s.KVHeads) * float64(s.HeadDim) * in.KVBytes
	kvUser := kvTok * float64(in.Context)
	kvBatch := kvUser * float64(max(in.Batch, 1))
	out := []Figure{
		{"weights", weights, "bytes", weightsFormula},
		{"KV cache per token", kvTok, "bytes", fmt.Sprintf("2 (K and V) × %d layers × %d KV heads × %d head size × %s bytes = %s", s.Layers, s.KVHeads, s.HeadDim, num(in.KVBytes), size(kvTok))},
		{"KV cache per user", kvUser, "bytes", fmt.Sprintf("%s per token × %d tokens of context = %s", size(kvTok), in.Context, gb(kvUser))},
		{"KV cache of the batch", kvBatch, "bytes", fmt.Sprintf("%s per user × %s = %s", gb(kvUser), users(max(in.Batch, 1)), gb(kvBatch))},
		{"memory in use", weights + kvBatch, "bytes", fmt.Sprintf("%s of weights + %s of cache = %s", gb(weights), gb(kvBatch), gb(weights+kvBatch))},
	}
	if s.KVHeads < s.Heads {
		mha := kvTok * float64(s.Heads) / float64(s.KVHeads)
		out = append(out, Figure{"KV cache per token without GQA", mha, "bytes",
			fmt.Sprintf("with all %d heads keeping keys and values: %s (%d query heads share each KV head)", s.Heads, size(mha), s.Heads/s.KVHeads)})
	}
	if in.MemoryGB > 0 {
		mem := in.MemoryGB * 1e9
		out = append(out, usersThatFit(mem, weights, kvUser))
	}
	if in.TokensPerSec > 0 && in.PricePerHour > 0 {
		cost := in.PricePerHour / (in.TokensPerSec * 3600) * 1e6
		out = append(out, Figure{"cost per million tokens", cost, "US dollars", fmt.Sprintf("%s an hour ÷ (%s tokens/s × 3,600 s) × 1,000,000 = %s per million tokens", money(in.PricePerHour), num(in.TokensPerSec), money(cost))})
	}
	return out
}

// weightBytes is the weights' size and its working: with the shape's
// tensors, each at the type llama.cpp's rule gives it for the target;
// without, every parameter at the one type.
func weightBytes(s Shape, in Inputs) (float64, string) {
	target := cmp.Or(in.Target, in.Weights.String())
	if s.Layout == nil || !slices.Contains(quantize.Targets, target) {
		bits := BitsPerWeight(in.Weights)
		w := s.Params * bits / 8
		return w, fmt.Sprintf("%s parameters × %s bits (%s) ÷ 8 = %s", count(s.Params), num(bits), in.Weights, gb(w))
	}
	mix := s.Layout.MixOf(target)
	values, bytes := mix.Total()
	types := slices.Collect(maps.Keys(mix.Values))
	slices.SortFunc(types, func(a, b quant.Type) int { return cmp.Compare(mix.Bytes[b], mix.Bytes[a]) })
	var parts []string
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s in %s × %s bits", billions(mix.Values[t]), t, num(BitsPerWeight(t))))
	}
	return bytes, fmt.Sprintf("%s values, each tensor at the type llama.cpp's quantizer gives it for %s: %s, ÷ 8 = %s",
		count(values), target, strings.Join(parts, " + "), gb(bytes))
}

// billions writes a value count in billions (millions below one).
func billions(v float64) string {
	if v < 1e9 {
		return fmt.Sprintf("%.2f M", v/1e6)
	}
	return fmt.Sprintf("%.2f B", v/1e9)
}

// usersThatFit is how many users' caches fit in mem bytes beside the
// weights; when the weights alone do not fit, it says so, and how many
// such memories would hold them.
func usersThatFit(mem, weights, kvUser float64) Figure {
	switch {
	case mem < weights:
		return Figure{"users that fit", 0, "users", fmt.Sprintf("none: the weights alone (%s) do not fit in the %s of memory, so not one user fits; split them over at least %s such memories, or store them in fewer bits",
			gb(weights), gb(mem), count(math.Ceil(weights/mem)))}
	case mem == weights:
		return Figure{"users that fit", 0, "users", fmt.Sprintf("none: the weights alone (%s) fill all %s of memory, so no user's cache fits", gb(weights), gb(mem))}
	}
	users := 0.0
	if kvUser > 0 {
		users = math.Floor((mem - weights) / kvUser)
	}
	return Figure{"users that fit", users, "users", fmt.Sprintf("(%s − %s of weights) ÷ %s per user = %s", gb(mem), gb(weights), gb(kvUser), count(users))}
}

// Find is the figure of a name (zero when absent).
func Find(fs []Figure, name string) Figure {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return Figure{}
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return count(v)
	}
	return fmt.Sprintf("%.4g", v)
}

// count writes a whole number with thousands separators.
func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// gb writes bytes in decimal gigabytes (as the seed documents count: 140 GB).
func gb(b float64) string {
	if b < 1e9 {
		return fmt.Sprintf("%.2f MB", b/1e6)
	}
	return fmt.Sprintf("%.2f GB", b/1e9)
}

// size writes a small byte count in KiB (exact powers of two read well).
func size(b float64) string {
	if b < 1024 {
		return fmt.Sprintf("%.0f bytes", b)
	}
	return fmt.Sprintf("%s bytes (%.0f KiB)", count(b), b/1024)
}

// users is a count of users in English.
func users(n int) string {
	if n == 1 {
		return "1 user"
	}
	return strconv.Itoa(n) + " users"
}

// Count writes a parameter count in full with thousands separators
// (70,000,000,000), as the arithmetic does.
func Count(v float64) string { return count(v) }

// money writes an amount in US dollars: $2, $0.5556.
func money(v float64) string { return "$" + fmt.Sprintf("%.4g", v) }
