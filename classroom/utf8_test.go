package classroom

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/lessons"
	"stepthrough/models/modelstest"
	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/views"
)

// The lesson whose first step's top list holds a byte token (id 138, the
// byte 0x8a) on its model: Reveal there once sent every client a frame
// that was not UTF-8.
const byteLesson = "the-head-that-copies"

// byteRoom is a room on byteLesson with its model, the model's own
// tokenizer, its 256 byte tokens and the step's top token.
type byteRoom struct {
	r     *Room
	m     *model.Model
	tk    *tokenizer.Tokenizer
	bytes [256]int32 // the token whose text is that one byte
	top   int32
}

func newByteRoom(t testing.TB) *byteRoom {
	t.Helper()
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Config{Engines: reg, Lessons: all})
	t.Cleanup(cl.Close)
	r, _, err := cl.Create(t.Context(), "x", byteLesson, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := reg.Get(all[byteLesson].Model)
	if err != nil {
		t.Fatal(err)
	}
	b := &byteRoom{r: r, m: m, tk: m.Tokenizer}
	seen := 0
	for id := range int32(b.tk.Len()) {
		if d := b.tk.Display(id); len(d) == 1 && b.tk.Type(id) != tokenizer.TypeControl {
			b.bytes[d[0]], seen = id, seen+1
		}
	}
	if seen != 256 {
		t.Fatalf("%s has %d byte tokens, want 256", all[byteLesson].Model, seen)
	}
	ok := false
	r.do(t.Context(), func() {
		st, _, ran := r.se.Current()
		if ok = ran && r.se.Snapshot().Model == m && st.Logits != nil; ok {
			b.top = engine.Argmax(st.Logits.Logits)
		}
	})
	if !ok {
		t.Fatal("the room's session does not run the lesson's model at a step with logits")
	}
	return b
}

// as is the model's tokenizer with the step's top token and byte c's
// token exchanged: everywhere the trace holds the top token (the top
// list, the draw, the text written, the prompt), the views now show byte
// c, and the other way round.
func (b *byteRoom) as(t testing.TB, c byte) *tokenizer.Tokenizer {
	t.Helper()
	x, y := b.top, b.bytes[c]
	v := *b.tk.Vocab()
	v.Tokens = slices.Clone(v.Tokens)
	v.Tokens[x], v.Tokens[y] = v.Tokens[y], v.Tokens[x]
	if v.Types != nil {
		v.Types = slices.Clone(v.Types)
		v.Types[x], v.Types[y] = v.Types[y], v.Types[x]
	}
	if v.Scores != nil {
		v.Scores = slices.Clone(v.Scores)
		v.Scores[x], v.Scores[y] = v.Scores[y], v.Scores[x]
	}
	tk, err := tokenizer.New(&v)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Display(x); got != string([]byte{c}) {
		t.Fatalf("the swapped top token reads %q", got)
	}
	return tk
}

// with runs f on the room's goroutine with the model's tokenizer tk (the
// room's own afterwards) and returns what f rendered; f must not call t.
func (b *byteRoom) with(t testing.TB, tk *tokenizer.Tokenizer, f func() map[string][]byte) map[string][]byte {
	t.Helper()
	var out map[string][]byte
	err := b.r.do(t.Context(), func() {
		defer func() { b.m.Tokenizer = b.tk }()
		b.m.Tokenizer = tk
		out = f()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// roomOutputs is everything the room sends or serves at its step: the
// followers' frame, the instructor's, each student's answer line, the
// students' and the instructor's pages. It runs on the room's goroutine.
func (b *byteRoom) roomOutputs() map[string][]byte {
	r := b.r
	if err := r.render(); err != nil {
		return map[string][]byte{"render: " + err.Error(): nil}
	}
	out := map[string][]byte{"followers' frame": r.shown, "instructor's frame": r.teachExtras()}
	for s := range r.answers[r.state.LessonStep] {
		out["answer line of "+s] = r.pollMine(s)
	}
	p := r.teachControls()
	p.Room, p.Status = r.view(), r.statusView()
	out["instructor's page"] = render(views.TeachRoomPage(p))
	out["student's page"] = render(views.StudentRoomPage(views.StudentPage{Code: r.code, Room: p.Room, Status: p.Status}))
	return out
}

// explorerOutputs is what the Explorer shows at the session's stage: its
// fragment (an exploring student's, a tab's: the stage's panel, the text
// written so far, as a room's frame shows them) and the stage's SVG
// export; and whether it is the last stage of the step after the
// prompt's.
func explorerOutputs(se *session.Session) (map[string][]byte, bool) {
	e := present.Explorer(se)
	x := views.StageExport{Current: e.Current, Panel: e.Panel, Title: e.Current.Label}
	last := e.End || e.Step >= 1 && e.Current.Index == len(e.Stages)-1
	return map[string][]byte{
		"Explorer at " + e.Current.Label:   render(views.ExplorerView(e)),
		"SVG export of " + e.Current.Label: views.StageSVG(x),
	}, last
}

// mustBeUTF8 fails on an output that is not valid UTF-8 (or that could
// not be drawn), showing where.
func mustBeUTF8(t testing.TB, c byte, outs map[string][]byte) {
	t.Helper()
	for name, b := range outs {
		if b == nil || bytes.Contains(b, []byte("render failed")) {
			t.Fatalf("byte token 0x%02x: the %s was not drawn", c, name)
		}
		if utf8.Valid(b) {
			continue
		}
		i := 0
		for utf8.FullRune(b[i:]) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		t.Fatalf("byte token 0x%02x: the %s is not UTF-8 at byte %d: %q", c, name, i, b[max(0, i-80):min(len(b), i+20)])
	}
}

// Every byte token of the lesson model, put where the model's top token
// is (first in the top list, the engine's answer, the token drawn and
// written, in the prompt) and given as a student's answer (as a store
// could hold one), leaves every view valid UTF-8: the room's question,
// its reveal and poll, each student's answer line, the pages, and the
// Explorer's panels at every stage of the prompt's step and the next.
func TestByteTokensStayUTF8(t *testing.T) {
	b := newByteRoom(t)
	tks := make([]*tokenizer.Tokenizer, 256)
	for c := range tks {
		tks[c] = b.as(t, byte(c))
	}
	for _, revealed := range []bool{false, true} {
		for c, tk := range tks {
			outs := b.with(t, tk, func() map[string][]byte {
				b.r.answers[0] = map[string]string{"s1": " Sa", "s2": " gave", "s3": string([]byte{byte(c)})}
				b.r.state.Revealed = map[int]bool{0: revealed}
				return b.roomOutputs()
			})
			mustBeUTF8(t, byte(c), outs)
			if esc := fmt.Sprintf(`\x%02x`, c); revealed && c >= 0x80 && !bytes.Contains(outs["followers' frame"], []byte(esc)) {
				t.Fatalf("byte token 0x%02x: the reveal does not show the engine's answer as %s", c, esc)
			}
		}
	}
	stages := 1
	for ; ; stages++ {
		last := false
		for c, tk := range tks {
			outs := b.with(t, tk, func() (outs map[string][]byte) { outs, last = explorerOutputs(b.r.se); return outs })
			mustBeUTF8(t, byte(c), outs)
		}
		if last {
			break
		}
		var err error
		b.with(t, b.tk, func() map[string][]byte { err = b.r.se.Act(context.Background(), "step", nil); return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d stages, each with all 256 byte tokens", stages)
}

// FuzzByteTokenViews: whichever byte token the model puts first and
// whatever a student's stored answer holds, the room's views before and
// after the reveal and the Explorer at the step are valid UTF-8.
func FuzzByteTokenViews(f *testing.F) {
	for _, seed := range []struct {
		c      byte
		answer string
	}{{0x8a, " Sa"}, {0xe7, "\xe7\x8c"}, {'<', `"><script>`}, {0xff, "\x8a"}, {0x00, ""}} {
		f.Add(seed.c, seed.answer)
	}
	b := newByteRoom(f)
	f.Fuzz(func(t *testing.T, c byte, answer string) {
		for _, revealed := range []bool{false, true} {
			outs := b.with(t, b.as(t, c), func() map[string][]byte {
				b.r.answers[0] = map[string]string{"s1": answer, "s2": string([]byte{c})}
				b.r.state.Revealed = map[int]bool{0: revealed}
				outs := b.roomOutputs()
				e, _ := explorerOutputs(b.r.se)
				maps.Copy(outs, e)
				return outs
			})
			mustBeUTF8(t, c, outs)
		}
	})
}

// On byteLesson's first step the reveal lists the model's top tokens as
// the Explorer shows them, each with its probability: the byte token
// quoted ("\x8a"), the end-of-text token by its name; a student's answer
// matches the engine's on the raw text.
func TestRevealRowsShowTokensAsTheExplorer(t *testing.T) {
	b := newByteRoom(t)
	var rows []views.PollRow
	var probs []float32
	var mine []byte
	b.with(t, b.tk, func() map[string][]byte {
		st, tk, _ := b.r.se.Current()
		q := b.r.lesson.Steps[0].Question
		b.r.answers[0] = map[string]string{"s1": " Sa"}
		b.r.state.Revealed = map[int]bool{0: true}
		rows, probs = PollRows(st, tk, q, b.r.answers[0], true), sample.Probabilities(st.Logits.Logits, 1)
		mine = b.r.pollMine("s1")
		return nil
	})
	byLabel := map[string]views.PollRow{}
	for _, r := range rows {
		byLabel[r.Label] = r
	}
	for _, tt := range []struct {
		label, answer string
		id            int32
		count         int
		correct       bool
	}{
		{`" Sa"`, " Sa", b.top, 1, true},
		{`"\x8a"`, `"\x8a"`, b.bytes[0x8a], 0, false},
		{`"<|endoftext|>"`, "<|endoftext|>", b.tk.Vocab().EOS, 0, false},
	} {
		r, ok := byLabel[tt.label]
		if !ok || r.Answer != tt.answer || r.Count != tt.count || r.Correct != tt.correct || !r.HasModelP || r.ModelP != float64(probs[tt.id]) {
			t.Errorf("row %s: %+v (present %v), want answer %q, count %d, correct %v, model p %v", tt.label, r, ok, tt.answer, tt.count, tt.correct, probs[tt.id])
		}
	}
	if !bytes.Contains(mine, []byte("matches the engine")) {
		t.Errorf("a student who answered the top token: %s", mine)
	}
}
