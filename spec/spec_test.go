package spec

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
)

// full is a run that sets every field away from its default.
func full() Run {
	r := Default("lesson.gguf")
	r.Prompt, r.Backend, r.MaxTokens = "  The capital of France is", "cpu", 7
	p := &r.Sampler
	p.Temperature, p.TopK, p.TopP, p.MinP, p.TypicalP = 0.7, 12, 0.9, 0.1, 0.95
	p.RepeatPenalty, p.RepeatLastN, p.FrequencyPenalty, p.PresencePenalty = 1.1, -1, 0.25, -0.5
	p.Seed, p.SeedSet = 18446744073709551615, true
	p.Order = []sample.Step{sample.Temperature, sample.TopK, sample.MinP}
	r.Special, r.Tools = true, "calc"
	if err := r.SetInterventions("L2H1;L1U7*0.5", "L1:happy day|sad night*4", "Once upon a time, a cat sat."); err != nil {
		panic(err)
	}
	r.View = View{Token: 3, Stage: 5, Head: 2, Scores: true, Layer: -1, Temperature: 1.5}
	return r
}

// fullDraft is full() decoding speculatively (which runs without tools).
func fullDraft() Run {
	r := full()
	r.Tools, r.Draft, r.DraftK = "", "lesson-draft.gguf", 7
	r.Ablate, r.Steer, r.MeanOver = nil, nil, "" // interventions run without a draft
	return r
}

// runs are the runs each round trip carries, by name.
func runs() []struct {
	name string
	run  Run
} {
	return []struct {
		name string
		run  Run
	}{{"every field set", full()}, {"speculative", fullDraft()}, {"defaults", Default("x.gguf")}}
}

func TestQueryRoundTrip(t *testing.T) {
	for _, tc := range runs() {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run
			got, err := FromQuery(r.Query(), Default(""))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(r, got); diff != "" {
				t.Errorf("query round trip of %s (-want +got):\n%s", r.Query().Encode(), diff)
			}
		})
	}
}

func TestFormRoundTrip(t *testing.T) {
	for _, tc := range runs() {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run
			form := r.Form()
			got, err := FromForm(func(k string) (string, bool) { v, ok := form[k]; return v, ok }, Default(""))
			if err != nil {
				t.Fatal(err)
			}
			r.View = Default("").View // the form carries settings, not the view
			if diff := cmp.Diff(r, got); diff != "" {
				t.Errorf("form round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLessonRoundTrip(t *testing.T) {
	var got Run
	for _, r := range []Run{full(), fullDraft()} {
		form := r.Form()
		got = Default("")
		for _, k := range LessonKeys() {
			v, ok := form[k]
			if !ok {
				continue // not set by this run (a draft's k without a draft)
			}
			if err := SetLesson(&got, k, v); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		got.Prompt, got.View = r.Prompt, r.View
		if !reflect.DeepEqual(got, r) {
			t.Errorf("lesson round trip:\n got %+v\nwant %+v", got, r)
		}
	}
	if err := SetLesson(&got, "top_p", "lots"); err == nil || !strings.Contains(err.Error(), "top-p") {
		t.Errorf("bad lesson value: %v", err)
	}
	if err := SetLesson(&got, "colour", "red"); err == nil {
		t.Error("unknown lesson key: want error")
	}
}

// A later lesson step switches an earlier step's intervention off with
// "none", as it does a steering or a draft.
func TestLessonAblateNone(t *testing.T) {
	r := Default("")
	for _, tc := range []struct{ in, want string }{
		{"L4H1 + L3mlp", "L4H1;L3mlp"},
		{"None", ""},
		{"L4H1", "L4H1"},
		{" none ", ""},
	} {
		if err := SetLesson(&r, "ablate", tc.in); err != nil {
			t.Fatalf("ablate %q: %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, r.Ablate.String()); diff != "" {
			t.Errorf("ablate %q (-want +got):\n%s", tc.in, diff)
		}
	}
	if err := SetLesson(&r, "ablate", "nothing"); err == nil {
		t.Error(`ablate "nothing": want an error naming the written forms`)
	}
	if err := SetLesson(&r, "mean_over", " None "); err != nil || r.MeanOver != "" {
		t.Errorf(`mean_over "None": %q, %v`, r.MeanOver, err)
	}
	r.MeanOver = strings.Repeat("a", MaxMeanOverChars+1)
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "mean over") {
		t.Errorf("a reference text of %d bytes: %v", len(r.MeanOver), err)
	}
}

func TestLaneRoundTrip(t *testing.T) {
	p := full().Sampler
	lane := Lane(p)
	got := sample.Defaults()
	for _, kv := range strings.Split(lane, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if ok, err := SetLane(&got, k, v); !ok || err != nil {
			t.Fatalf("%s: known %v, %v", kv, ok, err)
		}
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("lane round trip %q:\n got %+v\nwant %+v", lane, got, p)
	}
	if ok, _ := SetLane(&got, "beam", "3"); ok {
		t.Error("beam is a lane key, not a sampler setting")
	}
}

func TestFlagsRoundTrip(t *testing.T) {
	p := full().Sampler
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	get := Flags(fs)
	var args []string
	for _, prm := range params {
		args = append(args, "--"+prm.flag()+"="+prm.get(&p))
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	got, err := get()
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("flags round trip %v: got %+v (%v), want %+v", args, got, err, p)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	get = Flags(fs)
	fs.Parse(nil)
	if got, err := get(); err != nil || !reflect.DeepEqual(got, sample.Defaults()) {
		t.Errorf("no flags: %+v, %v; want llama.cpp's defaults", got, err)
	}
}

func TestStoredRoundTrip(t *testing.T) {
	r := full()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("stored round trip %s: %+v, %v", b, got, err)
	}
	plain, err := Default("lesson.gguf").Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unmarshal(append([]byte(`{"ablate":"",`), plain[1:]...)); err != nil || got.Ablate != nil {
		t.Errorf(`"ablate":"" read as %v, %v; want none`, got.Ablate, err)
	}
	for _, bad := range []string{`{}`, `{"version":99}`, `{"version":1,"backend":"gpu","max_tokens":1}`, `nope`,
		`{"version":1,"ablate":"L0H1"}`, `{"version":1,"steer":"L1:happy"}`, `{"version":1,"ablate":"` + strings.Repeat("L1H1;", 200) + `"}`} {
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("Unmarshal(%s): want error", bad)
		}
	}
}

// Every invalid value is refused with one line naming the parameter, and
// the base run is returned unchanged.
// The prompt's limit counts characters, as the prompt box does: 2,000
// two-byte characters fit, one more is refused naming the count.
func TestPromptLimitInCharacters(t *testing.T) {
	if err := CheckPrompt(strings.Repeat("é", MaxPromptChars)); err != nil {
		t.Errorf("%d characters (%d bytes): %v", MaxPromptChars, 2*MaxPromptChars, err)
	}
	err := CheckPrompt(strings.Repeat("猫", MaxPromptChars+1))
	if err == nil || !strings.Contains(err.Error(), "2001 characters; the limit is 2000") {
		t.Errorf("one character over: %v", err)
	}
}

func TestValidationNamesTheParameter(t *testing.T) {
	base := Default("m")
	tests := []struct{ key, value, name string }{
		{"temperature", "NaN", "temperature"},
		{"temperature", "-1", "temperature"},
		{"top_k", "1.5", "top-k"},
		{"top_p", "2", "top-p"},
		{"min_p", "x", "min-p"},
		{"typical_p", "-0.1", "typical-p"},
		{"repeat_penalty", "0", "repeat-penalty"},
		{"repeat_last_n", "-2", "repeat-last-n"},
		{"frequency_penalty", "Inf", "frequency-penalty"},
		{"seed", "-5", "seed"},
		{"order", "top-k,top-k", "sampler-order"},
		{"backend", "gpu", "backend"},
		{"max_tokens", "0", "max tokens"},
		{"max_tokens", "100000", "max tokens"},
		{"prompt", strings.Repeat("x", MaxPromptChars+1), "prompt"},
		{"prompt", strings.Repeat("é", MaxPromptChars+1), "prompt"},
		{"prompt", "\xff", "prompt"},
		{"step", "-1", "token"},
		{"token", "0", "token"},
		{"token", "x", "token"},
		{"head", "x", "head"},
		{"tools", "shell", "tools"},
		{"special", "maybe", "special"},
	}
	for _, tt := range tests {
		got, err := FromQuery(url.Values{tt.key: {tt.value}}, base)
		var se *Error
		var pe *sample.ParamError
		switch {
		case err == nil:
			t.Errorf("%s=%q: want error", tt.key, tt.value)
			continue
		case errors.As(err, &se) && se.Param == tt.name, errors.As(err, &pe) && pe.Param == tt.name:
		default:
			t.Errorf("%s=%q: error %q does not name %q", tt.key, tt.value, err, tt.name)
		}
		if strings.Contains(err.Error(), "\n") || !reflect.DeepEqual(got, base) {
			t.Errorf("%s=%q: error %q, run changed %v", tt.key, tt.value, err, !reflect.DeepEqual(got, base))
		}
	}
}

func FuzzQuery(f *testing.F) {
	f.Add(full().Query().Encode())
	f.Add("prompt=hi&temperature=0&seed=1&order=top-k,temperature")
	f.Add("step=99999999999999999999&stage=-1&head=%ff")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := FromQuery(q, Default("m"))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("FromQuery accepted an invalid run: %v", err)
		}
		back, err := FromQuery(r.Query(), Default("m"))
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", raw, back, err, r)
		}
	})
}

// Links count token steps from 1, as the page does ("token step 3 of 5"
// is token=3); older links' step= counted from 0 and still open the same
// view.
func TestTokenStepCountsFromOne(t *testing.T) {
	for _, tt := range []struct {
		query string
		token int // View.Token, from 0
	}{
		{"token=3", 2},
		{"step=2", 2},
		{"token=1&step=7", 0}, // token wins
	} {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			r, err := FromQuery(q, Default(""))
			if err != nil {
				t.Fatal(err)
			}
			if r.View.Token != tt.token {
				t.Errorf("View.Token %d, want %d", r.View.Token, tt.token)
			}
			back := r.Query()
			if got, want := back.Get("token"), strconv.Itoa(tt.token+1); got != want || back.Has("step") {
				t.Errorf("the link writes token=%q (step %q), want token=%s", got, back.Get("step"), want)
			}
		})
	}
}

// Checked is Validate handing back what it read: the edits, the steering
// and the mean ablation's text; a run Validate refuses is refused with
// the same error, whether its interventions or another field is at fault.
func TestCheckedReadsTheInterventions(t *testing.T) {
	bad := func(f func(r *Run)) Run { r := full(); f(&r); return r }
	cases := []struct {
		name string
		r    Run
		want Interventions
		err  string
	}{
		{"none", Default("lesson.gguf"), Interventions{}, ""},
		{"all", full(), Interventions{
			Edits: &intervene.Set{Edits: []intervene.Edit{
				{Layer: 1, Site: intervene.Head, Index: 0, Pos: -1, Op: intervene.Zero},
				{Layer: 0, Site: intervene.Unit, Index: 6, Pos: -1, Op: intervene.Scale, Factor: 0.5}}},
			Sources: engine.EditSources{MeanOver: "Once upon a time, a cat sat.", Steer: &intervene.Steer{Layer: 0, Toward: "happy day", Away: "sad night", Strength: 4}},
		}, ""},
		{"too many edits", bad(func(r *Run) {
			for range intervene.MaxEdits {
				r.Ablate = r.Ablate.Plus(intervene.Edit{Layer: 0, Site: intervene.MLP, Pos: -1})
			}
		}), Interventions{}, "ablate"},
		{"ablate beside a draft", bad(func(r *Run) { r.Draft, r.DraftK, r.Tools, r.Steer = "lesson-draft.gguf", 4, "", nil }), Interventions{}, "ablate"},
		{"steer beside a draft", bad(func(r *Run) { r.Draft, r.DraftK, r.Tools, r.Ablate = "lesson-draft.gguf", 4, "", nil }), Interventions{}, "steer"},
		{"bad sampler", bad(func(r *Run) { r.Sampler.TopP = 2 }), Interventions{}, "top"},
		{"bad view", bad(func(r *Run) { r.View.Head = -1 }), Interventions{}, "head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.r.Checked()
			if verr := c.r.Validate(); fmt.Sprint(verr) != fmt.Sprint(err) {
				t.Errorf("Checked's error %v, Validate's %v", err, verr)
			}
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one naming %q", err, c.err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("interventions (-want +got):\n%s", diff)
			}
		})
	}
}

// Keeping applies each field that reads on its own and leaves the others
// as base has them: what the form shows after a refused link.
func TestKeeping(t *testing.T) {
	base := Default("lesson.gguf")
	q := url.Values{"prompt": {"hi"}, "max_tokens": {"8"}, "top_k": {"5"}, "top_p": {"2"}, "ablate": {"L0H1"}, "steer": {"L2:a|b*3"}}
	got := Keeping(QueryGetter(q), base)
	want := base
	want.Prompt, want.MaxTokens, want.Sampler.TopK = "hi", 8, 5
	want.Sampler.TopP = 2 // read, though Validate refuses it: the form shows it to fix
	if err := want.SetInterventions("", "L2:a|b*3", ""); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Keeping (-want +got):\n%s", diff)
	}
}
