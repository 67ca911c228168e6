package spec

import (
	"math"
	"strconv"
	"strings"

	"stepthrough/engine/sample"
)

// param is one sampler setting and how every codec spells it.
type param struct {
	Name  string // canonical: lanes, error messages, and flags unless Flag is set
	Key   string // URL queries, forms and lesson files
	Flag  string // the command line's flag when it differs from Name
	Usage string
	get   func(*sample.Params) string
	set   func(*sample.Params, string) error
}

func (p param) flag() string {
	if p.Flag != "" {
		return p.Flag
	}
	return p.Name
}

func fstr(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func number(name string, dst *float64, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return &Error{Param: name, Value: v, Allowed: "not a number"}
	}
	*dst = f
	return nil
}

func whole(name string, dst *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return &Error{Param: name, Value: v, Allowed: "not a whole number"}
	}
	*dst = n
	return nil
}

// params are the sampler settings in the order forms show them.
var params = []param{
	{"temperature", "temperature", "", "temperature (0: greedy)",
		func(p *sample.Params) string { return fstr(p.Temperature) },
		func(p *sample.Params, v string) error { return number("temperature", &p.Temperature, v) }},
	{"top-k", "top_k", "", "keep the k most likely tokens (0: all)",
		func(p *sample.Params) string { return strconv.Itoa(p.TopK) },
		func(p *sample.Params, v string) error { return whole("top-k", &p.TopK, v) }},
	{"top-p", "top_p", "", "nucleus: keep the smallest set reaching this probability (1: all)",
		func(p *sample.Params) string { return fstr(p.TopP) },
		func(p *sample.Params, v string) error { return number("top-p", &p.TopP, v) }},
	{"min-p", "min_p", "", "keep tokens with p >= min-p × the top p (0: all)",
		func(p *sample.Params) string { return fstr(p.MinP) },
		func(p *sample.Params, v string) error { return number("min-p", &p.MinP, v) }},
	{"typical-p", "typical_p", "", "locally typical sampling mass (1: off)",
		func(p *sample.Params) string { return fstr(p.TypicalP) },
		func(p *sample.Params, v string) error { return number("typical-p", &p.TypicalP, v) }},
	{"repeat-penalty", "repeat_penalty", "", "penalty for repeated tokens (1: off)",
		func(p *sample.Params) string { return fstr(p.RepeatPenalty) },
		func(p *sample.Params, v string) error { return number("repeat-penalty", &p.RepeatPenalty, v) }},
	{"repeat-last-n", "repeat_last_n", "", "tokens the penalties look back over (0: off, -1: all)",
		func(p *sample.Params) string { return strconv.Itoa(p.RepeatLastN) },
		func(p *sample.Params, v string) error { return whole("repeat-last-n", &p.RepeatLastN, v) }},
	{"frequency-penalty", "frequency_penalty", "", "subtract count × this from a repeated token's logit",
		func(p *sample.Params) string { return fstr(p.FrequencyPenalty) },
		func(p *sample.Params, v string) error { return number("frequency-penalty", &p.FrequencyPenalty, v) }},
	{"presence-penalty", "presence_penalty", "", "subtract this from a repeated token's logit",
		func(p *sample.Params) string { return fstr(p.PresencePenalty) },
		func(p *sample.Params, v string) error { return number("presence-penalty", &p.PresencePenalty, v) }},
	{"seed", "seed", "", "random seed (unset or -1: a fresh seed, reported)",
		func(p *sample.Params) string {
			if !p.SeedSet {
				return ""
			}
			return strconv.FormatUint(p.Seed, 10)
		}, setSeed},
	{"order", "order", "sampler-order", "llama.cpp, transformers, or a list such as penalties,top-k,top-p,min-p,temperature",
		func(p *sample.Params) string { return OrderString(p.Order) },
		func(p *sample.Params, v string) error {
			o, err := sample.ParseOrder(strings.TrimSpace(v))
			if err != nil {
				return err // names the parameter and what is allowed
			}
			p.Order = o
			return nil
		}},
}

func setSeed(p *sample.Params, v string) error {
	v = strings.TrimSpace(v)
	if v == "" || v == "-1" {
		p.Seed, p.SeedSet = 0, false
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return &Error{Param: "seed", Value: v, Allowed: "a whole number from 0 to 18446744073709551615, or empty (-1) for a fresh one"}
	}
	p.Seed, p.SeedSet = n, true
	return nil
}

// OrderString names an order: "llama.cpp", "transformers", or the steps
// joined by commas.
func OrderString(o []sample.Step) string {
	eq := func(a, b []sample.Step) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	switch {
	case o == nil || eq(o, sample.OrderLlamaCpp):
		return "llama.cpp"
	case eq(o, sample.OrderTransformers):
		return "transformers"
	}
	s := make([]string, len(o))
	for i, x := range o {
		s[i] = string(x)
	}
	return strings.Join(s, ",")
}

// byKey and byName find a parameter by its query key or canonical name.
func byKey(k string) (param, bool) {
	for _, p := range params {
		if p.Key == k {
			return p, true
		}
	}
	return param{}, false
}

func byName(n string) (param, bool) {
	for _, p := range params {
		if p.Name == n {
			return p, true
		}
	}
	return param{}, false
}

// SamplerKeys are the query and form keys of the sampler settings, in
// form order.
func SamplerKeys() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.Key
	}
	return out
}
