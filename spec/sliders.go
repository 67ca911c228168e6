package spec

import (
	"strconv"
	"strings"
)

// A slider of the softmax view: the temperature and top-p the viewer
// tries without rerunning (0: the run's own). Links, forms and the
// Explorer's slider actions all read them here, with one set of bounds.
type slider struct {
	key, param string
	lo, hi     float64
	field      func(*View) *float64
}

var sliders = []slider{
	{"view_temperature", "view temperature", 0.05, 3, func(w *View) *float64 { return &w.Temperature }},
	{"view_top_p", "view top-p", 0.01, 1, func(w *View) *float64 { return &w.TopP }},
}

// check refuses a value outside the slider's range (0 is "the run's").
func (s slider) check(v float64) error {
	if v != 0 && !(v >= s.lo && v <= s.hi) {
		return &Error{Param: s.param, Value: fstr(v), Allowed: "choose " + fstr(s.lo) + " to " + fstr(s.hi)}
	}
	return nil
}

// read sets the slider from get when it has the key; required says the
// key must be there (an action that moves this slider).
func (s slider) read(get Getter, w *View, required bool) error {
	v, ok := get(s.key)
	if !ok || v == "" {
		if required {
			return &Error{Param: s.param, Value: `""`, Allowed: "choose " + fstr(s.lo) + " to " + fstr(s.hi)}
		}
		return nil
	}
	var f float64
	if err := number(s.param, &f, v); err != nil {
		return err
	}
	if err := s.check(f); err != nil {
		return err
	}
	*s.field(w) = f
	return nil
}

// SliderRange is the range a slider of the softmax view moves in
// ("view_temperature" or "view_top_p"; 0, 0 for any other key).
func SliderRange(key string) (lo, hi float64) {
	for _, s := range sliders {
		if s.key == key {
			return s.lo, s.hi
		}
	}
	return 0, 0
}

// SetSlider moves one slider of w ("view_temperature" or "view_top_p")
// to the value get holds for it, as the Explorer's slider actions do;
// w is unchanged on an error.
func SetSlider(get Getter, key string, w *View) error {
	for _, s := range sliders {
		if s.key == key {
			return s.read(get, w, true)
		}
	}
	return &Error{Param: "slider", Value: key, Allowed: "view_temperature or view_top_p"}
}

// slidersFrom reads whichever sliders get holds.
func slidersFrom(get Getter, w *View) error {
	for _, s := range sliders {
		if err := s.read(get, w, false); err != nil {
			return err
		}
	}
	return nil
}

// checkSliders validates the sliders of a view.
func checkSliders(w View) error {
	for _, s := range sliders {
		if err := s.check(*s.field(&w)); err != nil {
			return err
		}
	}
	return nil
}

// StageAt reads a click on the model map or the pipeline strip: a stage
// by name, with its 1-based layer or sampler filter ("0" or absent where
// none applies). The view it returns names the stage, its layer 0-based
// (-1: any) and its filter 1-based (0: any).
func StageAt(get Getter) (View, error) {
	w := View{Layer: -1}
	name, _ := get("stage")
	if name == "" || len(name) > 16 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz") != "" {
		return View{}, &Error{Param: "stage", Value: strconv.Quote(name), Allowed: "a stage name such as attention, softmax or sampler"}
	}
	w.StageName = name
	for _, f := range []struct {
		key string
		dst *int
		off int
	}{{"layer", &w.Layer, -1}, {"filter", &w.Filter, 0}} {
		v, ok := get(f.key)
		if !ok || v == "" || v == "0" {
			continue
		}
		var n int
		if err := whole(f.key, &n, v); err != nil {
			return View{}, err
		}
		if n < 1 || n > 1<<16 {
			return View{}, &Error{Param: f.key, Value: v, Allowed: "counts from 1, as on the page"}
		}
		*f.dst = n + f.off
	}
	return w, nil
}

// Pick is what the attention panel's controls choose: a layer (0-based,
// as the page's selects send it; -1: unchanged), a head (0-based; -1:
// unchanged) and whether the pre-softmax scores are drawn.
type Pick struct {
	Layer, Head int
	Scores      bool
}

// PickFrom reads the attention panel's controls.
func PickFrom(get Getter) (Pick, error) {
	p := Pick{Layer: -1, Head: -1}
	for _, f := range []struct {
		key string
		dst *int
	}{{"layer", &p.Layer}, {"head", &p.Head}} {
		v, ok := get(f.key)
		if !ok || v == "" {
			continue
		}
		if err := whole(f.key, f.dst, v); err != nil {
			return Pick{}, err
		}
		if *f.dst < 0 || *f.dst > 1<<16 {
			return Pick{}, &Error{Param: f.key, Value: v, Allowed: "an index from 0, as the page's controls send it"}
		}
	}
	_, p.Scores = get("scores")
	return p, nil
}
