package spec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func getter(m map[string]string) Getter {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// A slider action moves one slider within the bounds links are held to;
// anything else is one error naming it, and the view is unchanged.
func TestSetSlider(t *testing.T) {
	cases := []struct {
		name, key, value string
		want             View
		err              string
	}{
		{name: "temperature", key: "view_temperature", value: "0.7", want: View{Temperature: 0.7, TopP: 0.5}},
		{name: "top-p", key: "view_top_p", value: "0.9", want: View{Temperature: 1, TopP: 0.9}},
		{name: "too cold", key: "view_temperature", value: "0.01", err: "view temperature"},
		{name: "NaN", key: "view_top_p", value: "NaN", err: "not a number"},
		{name: "top-p above 1", key: "view_top_p", value: "1.5", err: "choose 0.01 to 1"},
		{name: "missing", key: "view_temperature", err: "choose 0.05 to 3"},
		{name: "no such slider", key: "view_min_p", value: "0.1", err: "view_temperature or view_top_p"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := View{Temperature: 1, TopP: 0.5}
			m := map[string]string{}
			if c.value != "" {
				m[c.key] = c.value
			}
			err := SetSlider(getter(m), c.key, &w)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				c.want = View{Temperature: 1, TopP: 0.5}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, w); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
		})
	}
}

// A click names a stage with its 1-based layer or filter; "0" or nothing
// is "any".
func TestStageAt(t *testing.T) {
	cases := []struct {
		name string
		form map[string]string
		want View
		err  string
	}{
		{name: "attention layer 2", form: map[string]string{"stage": "attention", "layer": "2"}, want: View{StageName: "attention", Layer: 1}},
		{name: "sampler filter 3", form: map[string]string{"stage": "sampler", "filter": "3", "layer": "0"}, want: View{StageName: "sampler", Layer: -1, Filter: 3}},
		{name: "softmax", form: map[string]string{"stage": "softmax"}, want: View{StageName: "softmax", Layer: -1}},
		{name: "no stage", form: map[string]string{}, err: "a stage name"},
		{name: "odd stage", form: map[string]string{"stage": "../etc"}, err: "a stage name"},
		{name: "negative layer", form: map[string]string{"stage": "mlp", "layer": "-2"}, err: "counts from 1"},
		{name: "huge filter", form: map[string]string{"stage": "sampler", "filter": "99999999"}, err: "counts from 1"},
		{name: "word layer", form: map[string]string{"stage": "mlp", "layer": "two"}, err: "not a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := StageAt(getter(c.form))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("StageAt (-want +got):\n%s", diff)
			}
		})
	}
}

// The attention panel's controls: 0-based indices as the selects send
// them, -1 for a control not sent; garbage is refused naming it.
func TestPickFrom(t *testing.T) {
	cases := []struct {
		name string
		form map[string]string
		want Pick
		err  string
	}{
		{name: "layer and head", form: map[string]string{"layer": "0", "head": "3", "scores": "1"}, want: Pick{Layer: 0, Head: 3, Scores: true}},
		{name: "head alone", form: map[string]string{"head": "2"}, want: Pick{Layer: -1, Head: 2}},
		{name: "nothing", form: map[string]string{}, want: Pick{Layer: -1, Head: -1}},
		{name: "negative layer", form: map[string]string{"layer": "-9"}, err: "an index from 0"},
		{name: "word head", form: map[string]string{"head": "two"}, err: "not a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PickFrom(getter(c.form))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("PickFrom (-want +got):\n%s", diff)
			}
		})
	}
}
