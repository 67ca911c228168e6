package lessons

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"stepthrough/engine/quant"
)

// A Claim is a fact a step's narration states about the model, declared
// beside it with an "expect:" line so a test (and `stepthrough
// check-lesson`) verifies it against the engine: a retrain that changes
// the fact fails instead of leaving the narration untrue.
//
//	expect: top " Par"           the most likely next token (the logits' argmax)
//	expect: p " Par" > 0.9       a token's probability at temperature 1 (>, <, >=, <=)
//	expect: draws " brown"       the token this step's settings and seed draw
//	expect: tokens 6             the prompt's token count (BOS included)
//	expect: attends " Zor"       at this step's layer and head, the last
//	                             position's largest weight is on this token
//	expect: continues " Paris."  the text the run writes from this token step on
//	expect: calls "347+85"       the run calls the calculator with this
//	                             (the run's tools: calc executing it)
//	expect: length 40            the run samples this many tokens, the last
//	                             one ending generation
//	expect: pieces " big" 2      the tokenizer cuts this text into this many
//	                             tokens (no BOS)
//	expect: accepts 2            this token step's speculative round keeps
//	                             this many of its draft's guesses (0 allowed)
//	expect: rejects " ut"        its first rejected guess is this token
//	expect: weights "Round 70B (Llama 2 70B shape)" F16 140
//	                             the memory calculator puts that shape's
//	                             weights at this type in this many GB (10^9
//	                             bytes, to 2 decimals)
//	expect: batched 8            the step's run, served through the scheduler
//	                             in one batch with 7 other requests, writes
//	                             exactly the tokens it writes alone
//	expect: stop "The end" 3     the run's text contains this stop string,
//	                             its first occurrence spread over this many
//	                             tokens, and the stop matcher ends the
//	                             reply just before it
//	expect: kvbytes 1280         the step's model keeps this many bytes of
//	                             KV cache per token (F32 here); with a
//	                             preset's name, the calculator's at 2 bytes
//	expect: cost 2 1000 0.56     at 2 an hour and 1000 tokens a second a
//	                             million tokens cost this (to 2 decimals)
//	expect: context 512          the step's model holds this many positions
//	expect: blocks 16 4          the step's run served through the scheduler
//	                             with a paged cache of 16-position blocks
//	                             holds at most this many blocks
//	expect: shares 16 2          a second request whose prompt starts with
//	                             this step's prompt shares this many of its
//	                             full 16-position blocks
//	expect: cached 16 2          after a request with this step's prompt
//	                             ended, a later one that starts the same way
//	                             reads this many of its full 16-position
//	                             blocks from the prefix cache
//	expect: induction L4H5 > 0.3 the head's induction score (its mean weight
//	                             on the token after the previous occurrence
//	                             of the current one, over 8 random sequences
//	                             of 20 tokens read twice: `stepthrough heads`)
//	expect: copying < 0.1        how often greedy prediction copies the
//	                             repeated half of those sequences, with the
//	                             step's interventions (ablate:) applied
//	expect: restores 3 4 "The capital of Spain is" > 0.9
//	                             activation patching (the step's prompt
//	                             clean, this one corrupted): the residual
//	                             stream after layer 3 (from 1) at position 4
//	                             (from 0, BOS at 0, as the panels and the
//	                             patching grid count) restores this
//	                             fraction of the clean answer's lead
//	expect: holds Q8_0 14        the step's model stores this many tensors
//	expect: holds Q6_K ffn_down  in this type, or every tensor whose name
//	                             has this part (and there is one) in it
//	expect: kl < 0.02            the step's model (NAME@TYPE) against NAME:
//	                             the mean KL divergence of its next-token
//	                             distributions over the lesson corpus's
//	                             held-out text (models/README.md's table)
//	expect: prefill < 0.5        prefilling the step's prompt costs, per
//	                             prompt token, less than this fraction of
//	                             a decode step (both measured on the engine)
//	expect: kvcontext "Llama 2 70B" 4096 1.34
//	                             the memory calculator puts one user's KV
//	                             cache at this context (2 bytes a value) at
//	                             this many GB
//	expect: unseen "Zorvik"      the lesson models' training text never
//	                             contains this text
//	expect: drift 4 > 0.05       beside the step's other type (vs:), the
//	                             residual stream after layer 4 (its MLP) at
//	                             the pass's last position: the relative
//	                             error ‖other − own‖ / ‖own‖ (a fraction)
//	expect: cosine 4 > 0.99      there, the cosine similarity of the two
//	expect: driftmost 4          the layer after which that drift is largest
//	expect: vstop " sock"        the likeliest next token under the other type
//	expect: arch qwen3           the step's model's architecture
//	expect: feature qk-norm      the step's model has this way of differing
//	expect: lacks learned-positions  from llama's forward pass, or lacks it
//	                             (the keys `inspect` and the model map use)
type Claim struct {
	Line   int
	Kind   string  // one of ClaimKinds
	Text   string  // the token or text claimed
	Op     string  // for p: >, <, >=, <=
	Value  float64 // for p: the bound; for tokens, length and accepts: the count; for weights: GB
	Type   string  // for weights: the weights' type
	Price  float64 // for cost: the price an hour
	Rate   float64 // for cost: tokens a second
	Block  int     // for blocks, shares and cached: positions per block; for lens, lensrank and restores: the layer, from 1
	Pos    int     // for restores: the position, from 0 (BOS at 0, as the panels count)
	Head   string  // for induction: the head, written L4H5
	Part   string  // for holds: a part of tensor names (ffn_down), or "" for a count
	Tokens int     // for kvcontext: the context in tokens
}

// ClaimKinds are the supported claims.
var ClaimKinds = []string{"top", "p", "draws", "tokens", "attends", "continues", "calls", "length", "pieces", "accepts", "rejects", "weights", "batched", "stop", "kvbytes", "cost", "context", "blocks", "shares", "cached", "lens", "lensrank", "induction", "copying", "restores", "arch", "feature", "lacks", "holds", "kl", "prefill", "kvcontext", "unseen", "drift", "cosine", "driftmost", "vstop"}

func (c Claim) String() string {
	switch c.Kind {
	case "p":
		return fmt.Sprintf("p %q %s %g", c.Text, c.Op, c.Value)
	case "tokens", "length", "accepts":
		return fmt.Sprintf("%s %d", c.Kind, int(c.Value))
	case "pieces":
		return fmt.Sprintf("pieces %q %d", c.Text, int(c.Value))
	case "weights":
		return fmt.Sprintf("weights %q %s %g", c.Text, c.Type, c.Value)
	case "batched", "context":
		return fmt.Sprintf("%s %d", c.Kind, int(c.Value))
	case "blocks", "shares", "cached":
		return fmt.Sprintf("%s %d %d", c.Kind, c.Block, int(c.Value))
	case "stop":
		return fmt.Sprintf("stop %q %d", c.Text, int(c.Value))
	case "kvbytes":
		if c.Text == "" {
			return fmt.Sprintf("kvbytes %g", c.Value)
		}
		return fmt.Sprintf("kvbytes %q %g", c.Text, c.Value)
	case "cost":
		return fmt.Sprintf("cost %g %g %g", c.Price, c.Rate, c.Value)
	case "lens", "vstop":
		if c.Kind == "vstop" {
			return fmt.Sprintf("vstop %q", c.Text)
		}
		return fmt.Sprintf("lens %d %q", c.Block, c.Text)
	case "drift", "cosine":
		return fmt.Sprintf("%s %d %s %g", c.Kind, c.Block, c.Op, c.Value)
	case "driftmost":
		return fmt.Sprintf("driftmost %d", c.Block)
	case "lensrank":
		return fmt.Sprintf("lensrank %d %q %s %d", c.Block, c.Text, c.Op, int(c.Value))
	case "induction":
		return fmt.Sprintf("induction %s %s %g", c.Head, c.Op, c.Value)
	case "copying":
		return fmt.Sprintf("copying %s %g", c.Op, c.Value)
	case "restores":
		return fmt.Sprintf("restores %d %d %q %s %g", c.Block, c.Pos, c.Text, c.Op, c.Value)
	case "arch", "feature", "lacks":
		return c.Kind + " " + c.Text
	case "holds":
		if c.Part != "" {
			return fmt.Sprintf("holds %s %s", c.Type, c.Part)
		}
		return fmt.Sprintf("holds %s %d", c.Type, int(c.Value))
	case "kl", "prefill":
		return fmt.Sprintf("%s %s %g", c.Kind, c.Op, c.Value)
	case "kvcontext":
		return fmt.Sprintf("kvcontext %q %d %g", c.Text, c.Tokens, c.Value)
	}
	return fmt.Sprintf("%s %q", c.Kind, c.Text)
}

// parseClaim reads the value of an "expect:" line.
func parseClaim(line int, v string) (Claim, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
	rest = strings.TrimSpace(rest)
	c := Claim{Line: line, Kind: kind}
	count := func() error {
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > 4096 {
			return fmt.Errorf("expect %s %q: a count from 1", kind, rest)
		}
		c.Value = float64(n)
		return nil
	}
	text := func(s string) error { return textOf(&c, s) }
	switch kind {
	case "top", "draws", "attends", "continues", "calls", "rejects", "unseen", "vstop":
		return c, text(rest)
	case "drift", "cosine", "driftmost":
		return c, parseDrift(&c, rest)
	case "holds":
		return c, parseHolds(&c, rest)
	case "kl", "prefill":
		before, op, v, err := bound(kind, rest)
		if err == nil && before != "" {
			err = fmt.Errorf("expect %s: write %s < 0.5 (only a bound)", kind, kind)
		}
		c.Op, c.Value = op, v
		return c, err
	case "kvcontext":
		return c, parseKVContext(&c, rest)
	case "arch", "feature", "lacks":
		if rest == "" || strings.ContainsAny(rest, " \"") {
			return c, fmt.Errorf("expect %s %q: one name, unquoted (%s)", kind, rest, map[string]string{"arch": "arch qwen3", "feature": "feature qk-norm", "lacks": "lacks learned-positions"}[kind])
		}
		c.Text = rest
		return c, nil
	case "tokens", "length", "context":
		return c, count()
	case "blocks", "shares", "cached":
		f := strings.Fields(rest)
		if len(f) != 2 {
			return c, fmt.Errorf("expect %s: write %s 16 3 (positions per block, then blocks)", kind, kind)
		}
		b, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || b < 1 || b > 1024 || n < 0 || n > 4096 {
			return c, fmt.Errorf("expect %s %q: a block size from 1 to 1024 and a count of blocks", kind, rest)
		}
		c.Block, c.Value = b, float64(n)
		return c, nil
	case "batched":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 2 || n > 64 {
			return c, fmt.Errorf("expect batched %q: how many requests share the passes, 2 to 64", rest)
		}
		c.Value = float64(n)
		return c, nil
	case "stop":
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			return c, fmt.Errorf("expect stop: write stop \"The end\" 3 (the stop text, then how many tokens it spans)")
		}
		text, n := rest[:i], rest[i+1:]
		rest = n
		if err := count(); err != nil {
			return c, err
		}
		return c, textOf(&c, text)
	case "kvbytes":
		f := strings.Fields(rest)
		if len(f) == 0 {
			return c, fmt.Errorf("expect kvbytes: write kvbytes 1280 (the step's model) or kvbytes \"Llama 2 70B\" 327680 (a preset at 2 bytes a value)")
		}
		b, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil || b <= 0 {
			return c, fmt.Errorf("expect kvbytes: %q is not a number of bytes", f[len(f)-1])
		}
		c.Value = b
		if len(f) > 1 {
			return c, textOf(&c, strings.Join(f[:len(f)-1], " "))
		}
		return c, nil
	case "cost":
		f := strings.Fields(rest)
		var v [3]float64
		for i := range v {
			if len(f) != 3 {
				break
			}
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(x) || x <= 0 {
				return c, fmt.Errorf("expect cost: %q is not a positive number", f[i])
			}
			v[i] = x
		}
		if len(f) != 3 {
			return c, fmt.Errorf("expect cost: write cost 2 1000 0.56 (price an hour, tokens a second, cost of a million tokens)")
		}
		c.Price, c.Rate, c.Value = v[0], v[1], v[2]
		return c, nil
	case "weights":
		f := strings.Fields(rest)
		if len(f) < 3 {
			return c, fmt.Errorf("expect weights: write weights \"Round 70B (Llama 2 70B shape)\" F16 140 (a preset, a type, GB)")
		}
		gb, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil || gb <= 0 {
			return c, fmt.Errorf("expect weights: %q is not a number of GB", f[len(f)-1])
		}
		c.Type, c.Value = f[len(f)-2], gb
		return c, textOf(&c, strings.Join(f[:len(f)-2], " "))
	case "accepts":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || n > 16 {
			return c, fmt.Errorf("expect accepts %q: a count of guesses from 0 to 16", rest)
		}
		c.Value = float64(n)
		return c, nil
	case "pieces":
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			return c, fmt.Errorf("expect pieces: write pieces \" big\" 2 (the text, then its token count)")
		}
		text, n := rest[:i], rest[i+1:]
		rest = n
		if err := count(); err != nil {
			return c, err
		}
		return c, textOf(&c, text)
	case "lens", "lensrank":
		return c, parseLens(&c, rest)
	case "induction", "copying", "restores":
		return c, parseMechanism(&c, rest)
	case "p":
		i := strings.LastIndexAny(rest, "<>")
		if i < 0 {
			return c, fmt.Errorf("expect p: write p \" token\" > 0.5 (or <, >=, <=)")
		}
		op, num := rest[i:i+1], rest[i+1:]
		if strings.HasPrefix(num, "=") {
			op, num = op+"=", num[1:]
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return c, fmt.Errorf("expect p: the bound %q is not a probability from 0 to 1", strings.TrimSpace(num))
		}
		c.Op, c.Value = op, f
		return c, text(rest[:i])
	}
	return c, fmt.Errorf("expect %q: one of %s", kind, strings.Join(ClaimKinds, ", "))
}

// parseDrift reads a claim about the drift beside another type: drift 4
// > 0.05 and cosine 4 > 0.99 (the layer from 1, then a bound), driftmost
// 4 (a layer).
func parseDrift(c *Claim, rest string) error {
	layer, bnd, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(layer)
	if err != nil || n < 1 || n > 1024 {
		return fmt.Errorf("expect %s %q: the layer, from 1 (%s)", c.Kind, layer, map[string]string{"drift": "drift 4 > 0.05", "cosine": "cosine 4 > 0.99", "driftmost": "driftmost 4"}[c.Kind])
	}
	c.Block = n
	if c.Kind == "driftmost" {
		if strings.TrimSpace(bnd) != "" {
			return fmt.Errorf("expect driftmost: only a layer (driftmost 4)")
		}
		return nil
	}
	before, op, v, err := bound(c.Kind, bnd)
	if err == nil && before != "" {
		err = fmt.Errorf("expect %s: write %s 4 > 0.05 (a layer, then a bound)", c.Kind, c.Kind)
	}
	c.Op, c.Value = op, v
	return err
}

// parseLens reads a logit-lens claim: lens 4 " Par" (the likeliest token
// after layer 4 at the step's last position), lensrank 1 " Par" > 100
// (that token's rank there, from 1, against a bound).
func parseLens(c *Claim, rest string) error {
	layer, rest, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(layer)
	if err != nil || n < 1 || n > 1024 {
		return fmt.Errorf("expect %s %q: the layer, from 1, then the token", c.Kind, layer)
	}
	c.Block = n
	if c.Kind == "lens" {
		return textOf(c, rest)
	}
	i := strings.LastIndexAny(rest, "<>")
	if i < 0 {
		return fmt.Errorf("expect lensrank: write lensrank 1 \" Par\" > 100 (the layer, the token, a bound on its rank)")
	}
	op, num := rest[i:i+1], rest[i+1:]
	if strings.HasPrefix(num, "=") {
		op, num = op+"=", num[1:]
	}
	r, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || r < 1 || r > 1<<20 {
		return fmt.Errorf("expect lensrank: the bound %q is not a rank from 1", strings.TrimSpace(num))
	}
	c.Op, c.Value = op, float64(r)
	return textOf(c, rest[:i])
}

func textOf(c *Claim, s string) error {
	c.Text = unquote(strings.TrimSpace(s))
	if c.Text == "" {
		return fmt.Errorf("expect %s: name the token or text, quoted to keep spaces", c.Kind)
	}
	return nil
}

// Holds reports whether probability p satisfies a p claim's bound.
func (c Claim) Holds(p float64) bool {
	switch c.Op {
	case ">":
		return p > c.Value
	case "<":
		return p < c.Value
	case ">=":
		return p >= c.Value
	case "<=":
		return p <= c.Value
	}
	return false
}

// bound splits "… > 0.5" into what comes before the comparison, the
// comparison and a fraction from 0 to 1.
func bound(kind, rest string) (before, op string, v float64, err error) {
	i := strings.LastIndexAny(rest, "<>")
	if i < 0 {
		return "", "", 0, fmt.Errorf("expect %s: end with a bound: > 0.5 (or <, >=, <=)", kind)
	}
	op, num := rest[i:i+1], rest[i+1:]
	if strings.HasPrefix(num, "=") {
		op, num = op+"=", num[1:]
	}
	v, err = strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
		return "", "", 0, fmt.Errorf("expect %s: the bound %q is not a fraction from 0 to 1", kind, strings.TrimSpace(num))
	}
	return strings.TrimSpace(rest[:i]), op, v, nil
}

var headRE = regexp.MustCompile(`^L([1-9][0-9]{0,3})H([1-9][0-9]{0,3})$`)

// parseMechanism reads the claims about a mechanism: induction L4H5 > 0.3,
// copying < 0.1, restores 3 4 "corrupted prompt" > 0.9.
func parseMechanism(c *Claim, rest string) error {
	before, op, v, err := bound(c.Kind, rest)
	if err != nil {
		return err
	}
	c.Op, c.Value = op, v
	switch c.Kind {
	case "induction":
		if !headRE.MatchString(before) {
			return fmt.Errorf("expect induction %q: write induction L4H5 > 0.3 (a head, then a bound)", before)
		}
		c.Head = before
	case "copying":
		if before != "" {
			return fmt.Errorf("expect copying: write copying < 0.1 (only a bound)")
		}
	case "restores":
		f := strings.SplitN(before, " ", 3)
		if len(f) != 3 {
			return fmt.Errorf("expect restores: write restores 3 4 \"corrupted prompt\" > 0.9 (a layer from 1, a position from 0, a prompt, a bound)")
		}
		layer, err1 := strconv.Atoi(f[0])
		pos, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || layer < 1 || layer > 1024 || pos < 0 || pos > 4096 {
			return fmt.Errorf("expect restores %q %q: a layer from 1 and a position from 0 (BOS at 0, as the panels count)", f[0], f[1])
		}
		c.Block, c.Pos = layer, pos
		return textOf(c, f[2])
	}
	return nil
}

// parseHolds reads a claim about the types the step's model stores:
// holds Q8_0 14 (that many tensors in Q8_0), holds Q6_K ffn_down (every
// tensor whose name has ffn_down in it is Q6_K).
func parseHolds(c *Claim, rest string) error {
	f := strings.Fields(rest)
	if len(f) != 2 {
		return fmt.Errorf("expect holds: write holds Q8_0 14 (a type, then a count of tensors) or holds Q6_K ffn_down (a type, then a part of tensor names)")
	}
	t, err := quant.ParseType(f[0])
	if err != nil {
		return fmt.Errorf("expect holds: %w", err)
	}
	c.Type = t.String()
	if n, err := strconv.Atoi(f[1]); err == nil {
		if n < 0 || n > 1<<16 {
			return fmt.Errorf("expect holds %s %d: a count of tensors from 0", c.Type, n)
		}
		c.Value = float64(n)
		return nil
	}
	if strings.ContainsAny(f[1], "\"") {
		return fmt.Errorf("expect holds %s %s: a part of tensor names, unquoted (ffn_down, token_embd)", c.Type, f[1])
	}
	c.Part = f[1]
	return nil
}

// parseKVContext reads kvcontext "Llama 2 70B" 4096 1.34: a preset, a
// context in tokens, and one user's KV cache there in GB.
func parseKVContext(c *Claim, rest string) error {
	f := strings.Fields(rest)
	if len(f) < 3 {
		return fmt.Errorf("expect kvcontext: write kvcontext \"Llama 2 70B\" 4096 1.34 (a preset, tokens of context, GB)")
	}
	n, err1 := strconv.Atoi(f[len(f)-2])
	gb, err2 := strconv.ParseFloat(f[len(f)-1], 64)
	if err1 != nil || err2 != nil || n < 1 || n > 1<<24 || gb <= 0 || math.IsNaN(gb) {
		return fmt.Errorf("expect kvcontext: %q %q: a context in tokens from 1 and a positive number of GB", f[len(f)-2], f[len(f)-1])
	}
	c.Tokens, c.Value = n, gb
	return textOf(c, strings.Join(f[:len(f)-2], " "))
}
