package present

import (
	"strings"
	"testing"

	"stepthrough/engine/serve"
)

// A run says its load in words (how users arrive, a shared system
// prompt, what ends a reply) and lists every user with each setting's
// reply; the page links each recent run with its state.
func TestServingRunInWords(t *testing.T) {
	st := ServingState{ID: "r1", Model: "m.gguf", Names: []string{"continuous", "static"},
		Load:     serve.Load{Users: 2, Rate: 50, PromptTokens: 32, MinTokens: 8, MaxTokens: 48, SharedPrefix: 16, Stop: "\n"},
		Settings: []serve.Options{{MaxSeqs: 4, KVPositions: 256}},
		Texts:    [][]string{{"a", "b"}, {"c", "d"}}, Finish: [][]string{{"length", "stop"}, {"length", "length"}}}
	v := ServingRun(st)
	for _, want := range []string{"2 users arriving at random, 50 a second on average (Poisson)", "(its first 16 tokens the same system prompt for every user)",
		"a reply ends at its length or at the model's end of turn or before \"\\n\"", "on m.gguf with at most 4 running at once and 256 KV positions"} {
		if !strings.Contains(v.Load, want) {
			t.Errorf("load %q lacks %q", v.Load, want)
		}
	}
	if v.Title != "2 users on m.gguf: continuous vs static" || len(v.Users) != 2 || v.Users[1].Texts[1] != "d" || v.Users[1].Finish[0] != "stop" || v.MaxKV != 80 {
		t.Errorf("run: %+v", v)
	}
	st.Done = true
	p := ServingPage([]string{"m.gguf"}, DefaultServingForm("m.gguf"), []ServingState{st, {ID: "r2", Model: "m.gguf", Load: serve.Load{Users: 1}, Names: []string{"static"}}})
	if len(p.Runs) != 2 || p.Runs[0].Status != "done" || p.Runs[1].Status != "running" || p.Runs[0].URL != "/serving/runs/r1" || p.SweepURL != "/serving/sweep?model=m.gguf" {
		t.Errorf("page: %+v", p.Runs)
	}
}
