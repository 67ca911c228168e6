package spec

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
)

// Getter reads one field of a query, a form or a message: its value and
// whether it was given.
type Getter func(key string) (string, bool)

// QueryGetter reads the first value of each query parameter.
func QueryGetter(q url.Values) Getter {
	return func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
}

// FromForm applies the fields get gives to base and validates the result:
// the codec of URL queries, the Explorer's settings form and its WebSocket
// messages. Fields not given keep base's values. The prompt keeps its
// spaces; other values are trimmed.
func FromForm(get Getter, base Run) (Run, error) {
	r := base
	r.Version = Version
	if v, ok := get("prompt"); ok {
		r.Prompt = v
	}
	for _, p := range params {
		if v, ok := get(p.Key); ok {
			if err := p.set(&r.Sampler, v); err != nil {
				return base, err
			}
		}
	}
	for _, f := range fields {
		if v, ok := get(f.Key); ok {
			if err := f.set(&r, v); err != nil {
				return base, err
			}
		}
	}
	r.defaultDraftK()
	if err := viewFrom(get, &r.View); err != nil {
		return base, err
	}
	if _, ok := get("scores"); ok {
		r.View.Scores = true
	}
	if v, ok := get("vs"); ok {
		r.View.Vs = VsName(v)
	}
	if err := slidersFrom(get, &r.View); err != nil {
		return base, err
	}
	if err := r.Validate(); err != nil {
		return base, err
	}
	return r, nil
}

// Keeping is base with each field get gives that reads applied on its
// own and the others left as base has them, unvalidated: what a form
// shows once FromForm refused the whole, so every setting the viewer gave
// that was fine stays, beside the one to fix.
func Keeping(get Getter, base Run) Run {
	r := base
	if v, ok := get("prompt"); ok {
		r.Prompt = v
	}
	for _, p := range params {
		if v, ok := get(p.Key); ok {
			x := r.Sampler
			if p.set(&x, v) == nil {
				r.Sampler = x
			}
		}
	}
	for _, f := range fields {
		if v, ok := get(f.Key); ok {
			x := r
			if f.set(&x, v) == nil {
				r = x
			}
		}
	}
	return r
}

// FromQuery is FromForm over a URL's query.
func FromQuery(q url.Values, base Run) (Run, error) { return FromForm(QueryGetter(q), base) }

// Query writes r as URL parameters that FromQuery reads back: every
// setting, the seed (give a run's drawn seed to make the link reproduce
// it), and the view (step, stage by name with its 1-based layer or
// filter, the 1-based head when not the first, scores when shown).
func (r Run) Query() url.Values {
	v := url.Values{}
	v.Set("prompt", r.Prompt)
	for _, p := range params {
		if s := p.get(&r.Sampler); s != "" {
			v.Set(p.Key, s)
		}
	}
	for _, f := range fields {
		if s := f.get(&r); s != "" || f.always {
			v.Set(f.Key, s)
		}
	}
	r.View.query(v)
	if r.View.Scores {
		v.Set("scores", "1")
	}
	if r.View.Temperature != 0 {
		v.Set("view_temperature", fstr(r.View.Temperature))
	}
	if r.View.TopP != 0 {
		v.Set("view_top_p", fstr(r.View.TopP))
	}
	return v
}

// Form is r's settings as the Explorer's form shows them, by form key.
func (r Run) Form() map[string]string {
	f := map[string]string{"prompt": r.Prompt}
	for _, fl := range fields {
		if v := fl.get(&r); v != "" || fl.always {
			f[fl.Key] = v
		}
	}
	for _, p := range params {
		f[p.Key] = p.get(&r.Sampler)
	}
	return f
}

// LessonKeys are the settings a lesson step may set, with the query keys:
// the sampler keys, then the other fields' (fields.go).
func LessonKeys() []string { return append(SamplerKeys(), fieldKeys()...) }

// FormKeys are the settings form's field names: the prompt and every
// setting a lesson step may set (FromForm reads them all).
func FormKeys() []string { return append([]string{"prompt"}, LessonKeys()...) }

// SetInterventions reads a run's interventions from their written forms
// (each as a link or a lesson writes it; "" is none), once.
func (r *Run) SetInterventions(ablate, steer, meanOver string) error {
	if err := r.setAblate(ablate); err != nil {
		return err
	}
	if err := r.setSteer(steer); err != nil {
		return err
	}
	r.setMeanOver(meanOver)
	return nil
}

// setAblate reads written interventions, once ("l1h2" is not read;
// "L1H2 + L3mlp" is L1H2 and L3mlp; "" or "none": no intervention, so a
// lesson step can switch off what an earlier one set).
func (r *Run) setAblate(v string) error {
	v = strings.TrimSpace(v)
	r.Ablate = nil
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	set := &intervene.Set{}
	if err := set.UnmarshalText([]byte(v)); err != nil {
		quoted := "" // a value too long to read is not echoed
		if len(v) <= intervene.MaxSetChars {
			quoted = strconv.Quote(v)
		}
		return &Error{Param: "ablate", Value: quoted, Allowed: err.Error()}
	}
	if len(set.Edits) > 0 {
		r.Ablate = set
	}
	return nil
}

// setSteer reads a written steering, once ("" or "none": no steering).
func (r *Run) setSteer(v string) error {
	v = strings.TrimSpace(v)
	r.Steer = nil
	if v == "" || strings.EqualFold(v, "none") {
		return nil
	}
	st := &intervene.Steer{}
	if err := st.UnmarshalText([]byte(v)); err != nil {
		return &Error{Param: "steer", Value: "", Allowed: err.Error()}
	}
	r.Steer = st
	return nil
}

// setMeanOver reads a mean ablation's reference text ("" or "none": heads
// and units switched off go to zero).
func (r *Run) setMeanOver(v string) {
	r.MeanOver = strings.TrimSpace(v)
	if strings.EqualFold(r.MeanOver, "none") {
		r.MeanOver = ""
	}
}

// draftName normalises a draft value ("none" is no draft).
func draftName(v string) string {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "none") {
		return ""
	}
	return v
}

// defaultDraftK gives a run with a draft and no k the default k, and a
// run without a draft no k.
func (r *Run) defaultDraftK() {
	switch {
	case r.Draft == "":
		r.DraftK = 0
	case r.DraftK == 0:
		r.DraftK = DefaultDraftK
	}
}

// flag01 reads a yes/no setting: 1, true, on or yes; 0, false, off, no or
// empty (an unchecked box).
func flag01(name string, dst *bool, v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "on", "yes":
		*dst = true
	case "0", "false", "off", "no", "":
		*dst = false
	default:
		return &Error{Param: name, Value: v, Allowed: "write 1 (on) or 0 (off)"}
	}
	return nil
}

// toolName normalises a tools value ("none" is no tool); Validate rejects
// unknown ones.
func toolName(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "none" {
		return ""
	}
	return v
}

// SetLesson applies one "key: value" setting line of a lesson file to r,
// validating the value (the lesson codec).
func SetLesson(r *Run, key, value string) error {
	if f, ok := fieldByKey(key); ok {
		if err := f.set(r, value); err != nil || f.lesson == nil {
			return err
		}
		return f.lesson(r, value)
	}
	p, ok := byKey(key)
	if !ok {
		return &Error{Param: key, Value: "", Allowed: "not a setting (" + strings.Join(LessonKeys(), ", ") + ")"}
	}
	return p.set(&r.Sampler, value)
}

// SetLane applies one key=value of a Compare lane ("top-p=0.9"): it
// reports whether key is a sampler setting, and an error for a bad value.
// Lanes join order steps with '>' as well as ','.
func SetLane(p *sample.Params, key, value string) (bool, error) {
	prm, ok := byName(key)
	if !ok {
		return false, nil
	}
	if key == "order" {
		value = strings.ReplaceAll(value, ">", ",")
	}
	return true, prm.set(p, value)
}

// Lane writes sampler settings as a Compare lane that SetLane reads back
// (seed included when set; order steps joined by '>').
func Lane(p sample.Params) string {
	var parts []string
	for _, prm := range params {
		v := prm.get(&p)
		if v == "" {
			continue
		}
		if prm.Name == "order" {
			v = strings.ReplaceAll(v, ",", ">")
		}
		parts = append(parts, prm.Name+"="+v)
	}
	return strings.Join(parts, ",")
}

// Flags registers the sampler settings on fs as --temperature, --top-k, …,
// --seed and --sampler-order, with llama.cpp's defaults; the returned
// function parses and validates them after fs.Parse.
func Flags(fs *flag.FlagSet) func() (sample.Params, error) {
	def := sample.Defaults()
	vals := map[string]*string{}
	for _, p := range params {
		d := p.get(&def)
		vals[p.Name] = fs.String(p.flag(), d, p.Usage)
	}
	return func() (sample.Params, error) {
		out := sample.Defaults()
		for _, p := range params {
			if err := p.set(&out, *vals[p.Name]); err != nil {
				return out, err
			}
		}
		return out, out.Validate()
	}
}

// Marshal is the stored form of r (JSON, with Version set).
func (r Run) Marshal() ([]byte, error) {
	r.Version = Version
	return json.Marshal(r)
}

// Unmarshal reads a stored run and validates it. Versions newer than this
// build are refused (an older server must not misread a newer room).
func Unmarshal(data []byte) (Run, error) {
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("stored run: %w", err)
	}
	if r.Ablate != nil && len(r.Ablate.Edits) == 0 { // "ablate":"" is none, as in a link
		r.Ablate = nil
	}
	switch {
	case r.Version == 0:
		return r, errors.New("stored run: no version")
	case r.Version > Version:
		return r, fmt.Errorf("stored run: version %d is newer than this server's %d", r.Version, Version)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("stored run: %w", err)
	}
	return r, nil
}

// viewFrom reads where a link stands: the token step counted from 1 as
// on the page (token=; older links wrote step= from 0); stage by name
// ("attention" with a 1-based layer, "sampler" with a 1-based filter)
// or, in older links, by index; and the 1-based head.
func viewFrom(get Getter, w *View) error {
	if v, ok := get("token"); ok && v != "" {
		var n int
		if err := whole("token", &n, v); err != nil {
			return err
		}
		if n < 1 {
			return &Error{Param: "token", Value: v, Allowed: "counts from 1, as on the page"}
		}
		w.Token = n - 1
	} else if v, ok := get("step"); ok && v != "" {
		if err := whole("step", &w.Token, v); err != nil {
			return err
		}
	}
	if v, ok := get("stage"); ok && v != "" {
		if v[0] >= '0' && v[0] <= '9' {
			if err := whole("stage", &w.Stage, v); err != nil {
				return err
			}
		} else {
			if len(v) > 16 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz") != "" {
				return &Error{Param: "stage", Value: strconv.Quote(v), Allowed: "a stage name such as attention, softmax or sampler"}
			}
			w.StageName, w.Layer = v, -1
		}
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"layer", &w.Layer}, {"filter", &w.Filter}, {"head", &w.Head}} {
		if v, ok := get(f.key); ok && v != "" {
			var n int
			if err := whole(f.key, &n, v); err != nil {
				return err
			}
			if n < 1 {
				return &Error{Param: f.key, Value: v, Allowed: "counts from 1, as on the page"}
			}
			*f.dst = n - 1
			if f.key == "filter" {
				*f.dst = n
			}
		}
	}
	return nil
}

// query writes the view: the stage by name, so a link lands on the same
// stage whichever token step it names.
func (w View) query(v url.Values) {
	v.Set("token", strconv.Itoa(w.Token+1))
	if w.StageName != "" {
		v.Set("stage", w.StageName)
		if w.Layer >= 0 && (w.StageName == "attention" || w.StageName == "mlp") {
			v.Set("layer", strconv.Itoa(w.Layer+1))
		}
		if w.Filter > 0 {
			v.Set("filter", strconv.Itoa(w.Filter))
		}
	} else {
		v.Set("stage", strconv.Itoa(w.Stage))
	}
	if w.Head > 0 {
		v.Set("head", strconv.Itoa(w.Head+1))
	}
	if w.Vs != "" {
		v.Set("vs", w.Vs)
	}
}
