package classroom

import (
	"encoding/json"
	"fmt"
	"strconv"

	"stepthrough/engine/spec"
)

// stateVersion is the version of the stored room state. Version 1 (the
// first classroom) stored the Explorer's form strings untagged; it is read
// and converted, so rooms saved before the run spec keep their state.
const stateVersion = 2

// State is everything needed to rebuild a room, saved after every
// instructor action.
type State struct {
	Version    int    `json:"version"`
	Lesson     string `json:"lesson,omitempty"` // empty: a room started from the Explorer
	LessonStep int    `json:"lesson_step"`
	// Run is the room's run with the seed actually drawn and the view
	// (token step, stage, head, scores, slider): opening it rebuilds the
	// room exactly.
	Run      spec.Run     `json:"run"`
	Revealed map[int]bool `json:"revealed,omitempty"` // lesson steps whose question is revealed
	// Broken says why the run could not be replayed the last time the
	// room was loaded: it is not replayed again until the instructor
	// moves the room on.
	Broken string `json:"broken,omitempty"`
}

// Marshal is the stored form.
func (s State) Marshal() ([]byte, error) {
	s.Version = stateVersion
	s.Run.Version = spec.Version
	return json.Marshal(s)
}

// UnmarshalState reads a stored state (this version or the first) and
// validates its run.
func UnmarshalState(b []byte) (State, error) {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return State{}, fmt.Errorf("stored room state is corrupt: %w", err)
	}
	switch {
	case probe.Version == 0:
		return legacyState(b)
	case probe.Version > stateVersion:
		return State{}, fmt.Errorf("stored room state has version %d, newer than this server's %d", probe.Version, stateVersion)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("stored room state is corrupt: %w", err)
	}
	if err := s.Run.Validate(); err != nil {
		return State{}, fmt.Errorf("stored room state is corrupt: %w", err)
	}
	return s, nil
}

// legacyState converts the first classroom's state (form strings).
func legacyState(b []byte) (State, error) {
	var old struct {
		Lesson     string            `json:"lesson"`
		LessonStep int               `json:"lesson_step"`
		Settings   map[string]string `json:"settings"`
		Step       int               `json:"step"`
		Stage      int               `json:"stage"`
		Head       int               `json:"head"`
		Scores     bool              `json:"scores"`
		ViewTemp   float64           `json:"view_temperature"`
		Revealed   map[int]bool      `json:"revealed"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return State{}, fmt.Errorf("stored room state is corrupt: %w", err)
	}
	keys := map[string]string{"Prompt": "prompt", "Model": "model", "Backend": "backend", "Temperature": "temperature", "TopK": "top_k", "TopP": "top_p",
		"MinP": "min_p", "TypicalP": "typical_p", "RepeatPenalty": "repeat_penalty", "RepeatLastN": "repeat_last_n", "FreqPen": "frequency_penalty",
		"PresPen": "presence_penalty", "Seed": "seed", "Order": "order", "MaxTokens": "max_tokens"}
	form := map[string]string{"step": strconv.Itoa(old.Step), "stage": strconv.Itoa(old.Stage), "head": strconv.Itoa(old.Head + 1)} // links count heads from 1
	for k, v := range old.Settings {
		if key, ok := keys[k]; ok {
			form[key] = v
		}
	}
	if old.Scores {
		form["scores"] = "1"
	}
	r, err := spec.FromForm(func(k string) (string, bool) { v, ok := form[k]; return v, ok }, spec.Default(""))
	if err != nil {
		return State{}, fmt.Errorf("stored room state (version 1): %w", err)
	}
	if old.ViewTemp >= 0.05 && old.ViewTemp <= 3 {
		r.View.Temperature = old.ViewTemp
	}
	return State{Version: stateVersion, Lesson: old.Lesson, LessonStep: old.LessonStep, Run: r, Revealed: old.Revealed}, nil
}
