package lessons

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/models"
)

// readmeExample is the complete example in README.md.
func readmeExample(t testing.TB) []byte {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "```")
	return []byte(strings.TrimPrefix(parts[len(parts)-2], "\n"))
}

func lessonModel(t *testing.T) *model.Model {
	f, err := gguf.Parse(models.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestREADMEExample(t *testing.T) {
	l, err := Parse("README.md", readmeExample(t))
	if err != nil {
		t.Fatal(err)
	}
	if l.Title != "Logits and softmax" || l.Model != "lesson.gguf" || len(l.Steps) != 3 {
		t.Fatalf("%+v", l)
	}
	s0, s1, s2 := l.Steps[0], l.Steps[1], l.Steps[2]
	if s0.Run.Prompt != "The capital of France is" || s0.Run.Sampler.Temperature != 1 || !s0.Run.Sampler.SeedSet || s0.Run.Sampler.Seed != 1 || !strings.Contains(s0.Notes, "Ask the room") {
		t.Errorf("step 1 %+v", s0)
	}
	if s1.Run.Prompt != s0.Run.Prompt || s1.Stage != "logits" || s1.Highlight[0] != " Par" || s1.Question.Kind != "next-token" || len(s1.Question.Choices) != 3 {
		t.Errorf("step 2 %+v %+v", s1, s1.Question)
	}
	if s2.Question.Kind != "choice" || s2.Question.Answer != "Spreads probability over more tokens" || !strings.Contains(s2.Narration, "sum to 1") || !strings.Contains(s2.After, "closer") || strings.Contains(s2.Narration, "closer") {
		t.Errorf("step 3 %+v", s2.Question)
	}
	if err := Check(l, lessonModel(t)); err != nil {
		t.Errorf("check against lesson.gguf: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	head := "---\ntitle: T\nmodel: lesson.gguf\n---\n"
	for _, tt := range []struct {
		src  string
		line int
		want string
	}{
		{"title: T\n", 1, "front matter"},
		{"---\ntitle: T\n", 2, "not closed"},
		{"---\nmodel: m\n---\n## S\nprompt: x\n", 1, "no title"},
		{"---\ntitle: T\n---\n## S\nprompt: x\n", 1, "names no model"},
		{"---\ntitle: T\ncolour: red\n---\n", 3, "unknown front matter key"},
		{"---\ntitle: T\nlevel: expert\n---\n", 3, "level"},
		{head, 4, "no steps"},
		{head + "hello\n", 5, "before the first step"},
		{head + "## S\n", 5, "needs a prompt"},
		{head + "## S\nprompt: x\nstage: vibes\n", 7, "stage \"vibes\""},
		{head + "## S\nprompt: x\ntoken: -1\n", 7, "token"},
		{head + "## S\nprompt: x\nseed: abc\n", 7, "seed"},
		{head + "## S\nprompt: x\nsource: " + strings.Repeat("x", MaxSourceBytes+1) + "\n", 7, "source: at most"},
		{head + "## S\nprompt: x\nlayer: 2\n", 5, "layer and head apply"},
		{head + "## S\nprompt: x\n? guess: what\n", 7, "kind one of"},
		{head + "## S\nprompt: x\n? choice: what\n- a\n- b\n", 5, "marked"},
		{head + "## S\nprompt: x\n? choice: q\n- (x) a\n- (x) b\n", 9, "two answers"},
		{head + "## S\nprompt: x\n? choice: q\n- (x) a\n- " + strings.Repeat("b", MaxAnswerBytes+1) + "\n", 9, "could not be picked"},
		{head + "## S\nprompt: x\n? choice: q\n? choice: r\n", 8, "at most one question"},
		{head + "## S\nprompt: x\nA byte \x8a alone.\n", 7, "not valid UTF-8"},
		{"---\ntitle: \"\\xff\"\nmodel: m\n---\n", 2, "not valid UTF-8"},
		{head + "## S\nprompt: x\n? next-token: q\n- \" Sa\"\n- \"\\x8a\"\n", 9, "not valid UTF-8"},
		{head + "## S\nprompt: x\n? choice: q\n- (x) \"\\xe7\\x8c\"\n- b\n", 8, "not valid UTF-8"},
		{head + "## S\nprompt: x\ntemperature:\n", 7, "no value"},
		{head + "## S\nprompt: x\npatch: \"\"\n", 7, "the corrupted prompt"},
		{head + "## S\nprompt: x\ntemperature: hot\n", 7, "invalid temperature hot"},
		{head + "## S\nprompt: x\ntop_p: 3\n## T\n", 5, "invalid top-p 3"},
		{head + "## S\nprompt: x\nbackend: gpu\n", 5, "backend"},
		{head + "## S\nprompt: x\norder: top-k,top-k\n", 7, "sampler-order"},
		{head + "## S\nprompt: x\n" + strings.Repeat("y", MaxLineBytes+1) + "\n", 7, "too long"},
	} {
		_, err := Parse("t.md", []byte(tt.src))
		e, ok := err.(*Error)
		if !ok || e.Line != tt.line || !strings.Contains(e.Msg, tt.want) {
			t.Errorf("%q: error %v, want line %d mentioning %q", tt.src, err, tt.line, tt.want)
		}
	}
	if _, err := Parse("big.md", make([]byte, MaxBytes+1)); err == nil {
		t.Error("oversized file: want error")
	}
}

func TestCheckAgainstModel(t *testing.T) {
	m := lessonModel(t)
	src := "---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\nstage: attention\nlayer: 9\n"
	l, err := Parse("t.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(l, m); err == nil || !strings.Contains(err.Error(), "t.md:5: layer 9") {
		t.Errorf("layer beyond the model: %v", err)
	}
	l, _ = Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\nhighlight: \" Paris\"\n"))
	if err := Check(l, m); err == nil || !strings.Contains(err.Error(), "2 tokens") {
		t.Errorf("multi-token highlight: %v", err)
	}
	for _, d := range []string{"self:4", "self:0", "self:x"} {
		l, err = Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\ndraft: "+d+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(l, m); err == nil || !strings.Contains(err.Error(), "t.md:5: draft") {
			t.Errorf("draft %s: %v", d, err)
		}
	}
	l, _ = Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\ndraft: self:3\ntoken: 1\nstage: accept\nexpect: accepts 2\n"))
	if err := Check(l, m); err != nil {
		t.Errorf("a self:3 draft on a 4-layer model: %v", err)
	}
	l, err = Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\nexpect: weights \"Round 70B (Llama 2 70B shape)\" Q4_0 39.38\n"))
	if err != nil || l.Steps[0].Claims[0].Text != "Round 70B (Llama 2 70B shape)" || l.Steps[0].Claims[0].Type != "Q4_0" || l.Steps[0].Claims[0].Value != 39.38 {
		t.Errorf("a weights claim: %+v %v", l, err)
	}
	if _, err := Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\nexpect: weights 70B\n")); err == nil {
		t.Error("a weights claim without type and GB: no error")
	}
	l, _ = Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\nexpect: accepts 2\n"))
	if err := Check(l, m); err == nil || !strings.Contains(err.Error(), "needs draft") {
		t.Errorf("an accepts claim without a draft: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(readmeExample(f))
	f.Add([]byte("---\ntitle: T\nmodel: m\n---\n## S\nprompt: \"x\"\n? choice: q\n- (x) a\n- b\n> note\n"))
	f.Add([]byte("---\ntitle: \"\\x8a\"\nmodel: m\n---\n## S\nprompt: x\n? choice: q \xe7\n- (x) \"\\xe7\"\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse("fuzz.md", data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		if l.Title == "" || l.Model == "" || len(l.Steps) == 0 || len(l.Steps) > MaxSteps {
			t.Fatalf("accepted an incomplete lesson: %+v", l)
		}
		for _, s := range l.Steps {
			if s.Run.Prompt == "" || !contains(stageNames(), s.Stage) || s.Run.Validate() != nil {
				t.Fatalf("accepted step %+v", s)
			}
			if q := s.Question; q != nil && !utf8.ValidString(q.Text+q.Answer+strings.Join(q.Choices, "")) {
				t.Fatalf("accepted a question that is not UTF-8: %+v", q)
			}
		}
		if !utf8.ValidString(l.Title + l.Summary + l.Level + l.Duration + l.Model) {
			t.Fatalf("accepted front matter that is not UTF-8: %+v", l)
		}
	})
}

func TestBuiltinLessonsParseAndCheck(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 {
		t.Fatalf("%d built-in lessons", len(all))
	}
	m := lessonModel(t)
	for name, l := range all {
		if err := Check(l, m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Prompt, settings and seed carry forward; a step overrides only what it names.
func TestStepsCarryForward(t *testing.T) {
	src := "---\ntitle: t\nmodel: m.gguf\n---\n## a\nprompt: \"hi\"\ntemperature: 1\ntop_k: 3\nseed: 7\n## b\nseed: 8\n## c\ntemperature: 0\n"
	l, err := Parse("t.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		prompt string
		temp   float64
		topk   int
		seed   uint64
	}{{"hi", 1, 3, 7}, {"hi", 1, 3, 8}, {"hi", 0, 3, 8}}
	for i, w := range want {
		r := l.Steps[i].Run
		if r.Prompt != w.prompt || r.Sampler.Temperature != w.temp || r.Sampler.TopK != w.topk || r.Sampler.Seed != w.seed || !r.Sampler.SeedSet || r.Model != "m.gguf" {
			t.Errorf("step %d: %+v; want %+v", i+1, r, w)
		}
	}
}

// Every built-in lesson is on the suggested path once, and the path
// starts with what inference is.
func TestSuggestedPath(t *testing.T) {
	b, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	names := Names(b)
	if len(names) != len(b) || names[0] != "what-is-inference" {
		t.Fatalf("path %v", names)
	}
	seen := map[string]bool{}
	for _, k := range Path {
		if seen[k] {
			t.Errorf("%s twice on the path", k)
		}
		seen[k] = true
		if _, ok := b[k]; !ok {
			t.Errorf("the path names %s, which is not a built-in lesson", k)
		}
	}
	for k := range b {
		if !seen[k] {
			t.Errorf("built-in lesson %s is not on the suggested path", k)
		}
	}
}

// Every choice of every built-in lesson can be picked (CheckAnswer
// accepts it as itself), and no title or summary keeps the quotes that
// protect a colon in the front matter.
func TestBuiltinChoicesAndTitles(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tk := lessonModel(t).Tokenizer
	for _, name := range Names(all) {
		l := all[name]
		t.Run(name, func(t *testing.T) {
			for _, v := range []string{l.Title, l.Summary} {
				if strings.HasPrefix(v, `"`) || strings.HasSuffix(v, `"`) {
					t.Errorf("front matter value %s shows its quotes", v)
				}
			}
			for i, st := range l.Steps {
				if st.Question == nil {
					continue
				}
				for _, c := range st.Question.Choices {
					if got, err := CheckAnswer(tk, st.Question, c); err != nil || got != c {
						t.Errorf("step %d: choice %q (%d bytes) picked as %q, %v", i+1, c, len(c), got, err)
					}
				}
			}
		})
	}
	l, err := Parse("q.md", []byte("---\ntitle: \"Many users, one model: batching\"\nmodel: lesson.gguf\n---\n## S\nprompt: x\n"))
	if err != nil || l.Title != "Many users, one model: batching" {
		t.Errorf("quoted title parsed as %q, %v", l.Title, err)
	}
}
