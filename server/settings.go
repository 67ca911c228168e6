package server

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepthrough/engine/sample"
	"stepthrough/views"
)

// Limits on what a user may ask for.
const (
	maxPromptBytes = 2000
	maxNewTokens   = 512
)

// defaultSettings are llama.cpp's sampler defaults and 32 new tokens.
func defaultSettings(modelName string) views.Settings {
	return views.Settings{Prompt: "", Model: modelName, Backend: "auto", Temperature: "0.8", TopK: "40", TopP: "0.95", MinP: "0.05",
		TypicalP: "1", RepeatPenalty: "1", RepeatLastN: "64", FreqPen: "0", PresPen: "0", Seed: "", Order: "llama.cpp", MaxTokens: "32"}
}

// settingKeys maps form/query names to settings fields.
var settingKeys = map[string]func(*views.Settings) *string{
	"prompt":            func(s *views.Settings) *string { return &s.Prompt },
	"model":             func(s *views.Settings) *string { return &s.Model },
	"backend":           func(s *views.Settings) *string { return &s.Backend },
	"temperature":       func(s *views.Settings) *string { return &s.Temperature },
	"top_k":             func(s *views.Settings) *string { return &s.TopK },
	"top_p":             func(s *views.Settings) *string { return &s.TopP },
	"min_p":             func(s *views.Settings) *string { return &s.MinP },
	"typical_p":         func(s *views.Settings) *string { return &s.TypicalP },
	"repeat_penalty":    func(s *views.Settings) *string { return &s.RepeatPenalty },
	"repeat_last_n":     func(s *views.Settings) *string { return &s.RepeatLastN },
	"frequency_penalty": func(s *views.Settings) *string { return &s.FreqPen },
	"presence_penalty":  func(s *views.Settings) *string { return &s.PresPen },
	"seed":              func(s *views.Settings) *string { return &s.Seed },
	"order":             func(s *views.Settings) *string { return &s.Order },
	"max_tokens":        func(s *views.Settings) *string { return &s.MaxTokens },
}

// apply copies the known keys present in get into s.
func applySettings(s *views.Settings, get func(string) (string, bool)) {
	for k, field := range settingKeys {
		if v, ok := get(k); ok {
			*field(s) = strings.TrimSpace(v)
			if k == "prompt" {
				*field(s) = v // spaces are part of a prompt
			}
		}
	}
}

// parsed are validated settings.
type parsed struct {
	params    sample.Params
	maxTokens int
}

// validate checks every field and explains the first bad one.
func validate(s views.Settings) (parsed, error) {
	var p parsed
	if len(s.Prompt) > maxPromptBytes {
		return p, fmt.Errorf("the prompt is %d bytes; the limit is %d", len(s.Prompt), maxPromptBytes)
	}
	if !utf8.ValidString(s.Prompt) {
		return p, fmt.Errorf("the prompt is not valid UTF-8")
	}
	switch s.Backend {
	case "auto", "cpu", "vulkan":
	default:
		return p, fmt.Errorf("backend %q: choose auto, cpu or vulkan", s.Backend)
	}
	num := func(name, v string) (float64, error) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a number", name, v)
		}
		return x, nil
	}
	integer := func(name, v string) (int, error) {
		x, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s %q is not a whole number", name, v)
		}
		return x, nil
	}
	pp := sample.Defaults()
	var err error
	if pp.Temperature, err = num("temperature", s.Temperature); err != nil {
		return p, err
	}
	if pp.TopK, err = integer("top-k", s.TopK); err != nil {
		return p, err
	}
	if pp.TopP, err = num("top-p", s.TopP); err != nil {
		return p, err
	}
	if pp.MinP, err = num("min-p", s.MinP); err != nil {
		return p, err
	}
	if pp.TypicalP, err = num("typical-p", s.TypicalP); err != nil {
		return p, err
	}
	if pp.RepeatPenalty, err = num("repeat penalty", s.RepeatPenalty); err != nil {
		return p, err
	}
	if pp.RepeatLastN, err = integer("repeat last n", s.RepeatLastN); err != nil {
		return p, err
	}
	if pp.FrequencyPenalty, err = num("frequency penalty", s.FreqPen); err != nil {
		return p, err
	}
	if pp.PresencePenalty, err = num("presence penalty", s.PresPen); err != nil {
		return p, err
	}
	if s.Seed != "" && s.Seed != "-1" {
		if pp.Seed, err = strconv.ParseUint(s.Seed, 10, 64); err != nil {
			return p, fmt.Errorf("seed %q: a whole number from 0 to 18446744073709551615, or empty for a fresh one", s.Seed)
		}
		pp.SeedSet = true
	}
	if pp.Order, err = sample.ParseOrder(s.Order); err != nil {
		return p, err
	}
	if err := pp.Validate(); err != nil {
		return p, err
	}
	if p.maxTokens, err = integer("max tokens", s.MaxTokens); err != nil {
		return p, err
	}
	if p.maxTokens < 1 || p.maxTokens > maxNewTokens {
		return p, fmt.Errorf("max tokens %d: choose 1 to %d", p.maxTokens, maxNewTokens)
	}
	p.params = pp
	return p, nil
}

// query writes settings (with the seed actually used) and the position as
// URL parameters.
func query(s views.Settings, seed uint64, step, stage int) string {
	v := url.Values{}
	for k, field := range settingKeys {
		if val := *field(&s); val != "" {
			v.Set(k, val)
		}
	}
	v.Set("seed", strconv.FormatUint(seed, 10))
	v.Set("step", strconv.Itoa(step))
	v.Set("stage", strconv.Itoa(stage))
	return "/?" + v.Encode()
}
