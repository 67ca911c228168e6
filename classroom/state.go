package classroom

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"stepthrough/spec"
)

// stateVersion is the version of the stored room state. Version 1 (the
// first classroom) stored the Explorer's form strings untagged; it is read
// and converted, so rooms saved before the run spec keep their state.
const stateVersion = 2

// State is everything needed to rebuild a room, saved after every
// instructor action.
type State struct {
	Version    int    `json:"version"`
	Lesson     string `json:"lesson"` // empty: a room started from the Explorer
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

// clone is a copy that shares nothing the room changes in place.
func (s State) clone() State {
	s.Revealed = maps.Clone(s.Revealed)
	return s
}

// Marshal is the stored form.
func (s State) Marshal() ([]byte, error) {
	s.Version = stateVersion
	s.Run.Version = spec.Version
	return json.Marshal(s)
}

// UnmarshalState reads a stored state (this version or the first) and
// validates its run; any damage ReadStored would name is an error.
func UnmarshalState(b []byte) (State, error) {
	s, damage := ReadStored(b, "")
	if len(damage) > 0 {
		return State{}, fmt.Errorf("stored room state is corrupt: %s", strings.Join(damage, "; "))
	}
	return s, nil
}

// stateSum is the checksum stored beside a state (hex SHA-256).
func stateSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// requiredKeys are the fields every stored state of this version has.
var requiredKeys = []string{"version", "lesson_step", "run"}

// ReadStored decodes a stored state against its checksum (empty: saved
// before checksums) and names each thing wrong with it: a checksum that
// does not match, JSON that does not parse, fields missing, unknown or of
// the wrong type, a run out of range. It returns what could be read; a
// state whose run cannot be trusted comes back with the default run and
// Broken set, so it is not replayed.
func ReadStored(b []byte, sum string) (State, []string) {
	var damage []string
	if sum != "" && stateSum(b) != sum {
		damage = append(damage, "its checksum does not match the one saved with it (the state was changed or damaged on disk)")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return brokenState(append(damage, "it is not readable JSON ("+clip(err.Error())+")"))
	}
	var version int
	if err := json.Unmarshal(fields["version"], &version); fields["version"] != nil && err != nil {
		return brokenState(append(damage, "its version is not a number"))
	}
	switch {
	case fields["version"] == nil && fields["run"] == nil && fields["settings"] != nil: // the first classroom's state
		s, err := legacyState(b)
		if err != nil {
			return brokenState(append(damage, clip(err.Error())))
		}
		return s, damage
	case version > stateVersion:
		return brokenState(append(damage, fmt.Sprintf("it has version %d, newer than this server's %d", version, stateVersion)))
	}
	required := requiredKeys
	if sum != "" { // saved with a checksum: by a server that always writes the lesson
		required = append(required[:len(required):len(required)], "lesson")
	}
	for _, k := range required {
		if fields[k] == nil {
			damage = append(damage, "the field "+strconv.Quote(k)+" is missing")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(stateKeys, k) {
			damage = append(damage, "it has an unknown field "+strconv.Quote(clip(k)))
		}
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		damage = append(damage, clip(err.Error()))
	}
	if err := strictRun(fields["run"], &s.Run); err != nil {
		damage = append(damage, "its run is damaged ("+clip(err.Error())+")")
		s.Run = spec.Default("")
		s.Broken = "the saved run was damaged: choose a lesson step or run a new prompt"
	}
	if s.LessonStep < 0 {
		damage = append(damage, fmt.Sprintf("its lesson step %d is negative", s.LessonStep))
		s.LessonStep = 0
	}
	s.Version = stateVersion
	return s, damage
}

// stateKeys are State's JSON field names, read from its tags: a field
// added to State is known here without a second list to keep.
var stateKeys = func() []string {
	t := reflect.TypeFor[State]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}()

// strictRun decodes a stored run refusing unknown fields, and validates it.
func strictRun(raw json.RawMessage, r *spec.Run) error {
	if raw == nil {
		return fmt.Errorf("missing")
	}
	var run spec.Run
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&run); err != nil {
		return err
	}
	if err := run.Validate(); err != nil {
		return err
	}
	*r = run
	return nil
}

// brokenState is a state that could not be read: the default run, not
// replayed, with what was wrong.
func brokenState(damage []string) (State, []string) {
	return State{Version: stateVersion, Run: spec.Default(""),
		Broken: "the saved state could not be read: choose a lesson step or run a new prompt"}, damage
}

// clip keeps a decoder's message short enough for one line.
func clip(s string) string { return truncate(strings.Join(strings.Fields(s), " "), 120) }

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
