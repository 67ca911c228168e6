package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// field is one run setting beside the sampler's (params.go) and how the
// form, query and lesson codecs spell it: a new setting is one entry here
// (and its Run field and check in Validate).
type field struct {
	Key string // URL queries, forms and lesson files
	// get is the value as a form shows it; "" leaves it out of a link and
	// of Form unless always is set
	get    func(*Run) string
	always bool
	// set reads a value into r (forms, queries and lessons)
	set func(r *Run, v string) error
	// lesson, when set, checks at once what a lesson file set (a form's
	// values wait for Validate, which sees them all)
	lesson func(r *Run, v string) error
}

// fields are the settings beside the sampler's, in the order a lesson's
// error lists them.
var fields = []field{
	{Key: "max_tokens", always: true,
		get: func(r *Run) string { return strconv.Itoa(r.MaxTokens) },
		set: func(r *Run, v string) error { return whole("max tokens", &r.MaxTokens, v) }},
	{Key: "model", always: true,
		get: func(r *Run) string { return r.Model },
		set: func(r *Run, v string) error { r.Model = strings.TrimSpace(v); return nil }},
	{Key: "backend", always: true,
		get: func(r *Run) string { return r.Backend },
		set: func(r *Run, v string) error { r.Backend = strings.TrimSpace(v); return nil }},
	{Key: "special",
		get: func(r *Run) string { return yes(r.Special) },
		set: func(r *Run, v string) error { return flag01("special", &r.Special, v) }},
	{Key: "tools",
		get: func(r *Run) string { return r.Tools },
		set: func(r *Run, v string) error { r.Tools = toolName(v); return nil },
		lesson: func(r *Run, v string) error {
			if !slices.Contains(ToolNames, r.Tools) {
				return &Error{Param: "tools", Value: v, Allowed: "choose calc or none"}
			}
			return nil
		}},
	{Key: "draft",
		get: func(r *Run) string { return r.Draft },
		set: func(r *Run, v string) error { r.Draft = draftName(v); r.defaultDraftK(); return nil }},
	{Key: "draft_k",
		get: func(r *Run) string {
			if r.Draft == "" {
				return ""
			}
			return strconv.Itoa(r.DraftK)
		},
		set: func(r *Run, v string) error {
			if strings.TrimSpace(v) == "" { // an emptied box: the default k
				return nil
			}
			return whole("draft k", &r.DraftK, v)
		},
		lesson: func(r *Run, v string) error {
			if err := whole("draft k", &r.DraftK, v); err != nil {
				return err
			}
			if r.DraftK < 1 || r.DraftK > MaxDraftK {
				return &Error{Param: "draft k", Value: v, Allowed: fmt.Sprintf("choose 1 to %d", MaxDraftK)}
			}
			return nil
		}},
	{Key: "ablate",
		get: func(r *Run) string { return r.Ablate.String() },
		set: (*Run).setAblate},
	{Key: "steer",
		get: func(r *Run) string {
			if r.Steer == nil {
				return ""
			}
			return r.Steer.String()
		},
		set: (*Run).setSteer},
	{Key: "mean_over",
		get: func(r *Run) string { return r.MeanOver },
		set: func(r *Run, v string) error { r.setMeanOver(v); return nil }},
}

// yes writes a yes/no setting as a form or link does: "1", or "" for no.
func yes(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// fieldKeys are the fields' keys in order.
func fieldKeys() []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.Key
	}
	return keys
}

// fieldByKey is the field with this key.
func fieldByKey(key string) (field, bool) {
	i := slices.IndexFunc(fields, func(f field) bool { return f.Key == key })
	if i < 0 {
		return field{}, false
	}
	return fields[i], true
}
