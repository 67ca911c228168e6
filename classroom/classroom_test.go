package classroom

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"stepthrough/engine/sample"
	"stepthrough/lessons"
	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

func TestCodes(t *testing.T) {
	for _, c := range []string{"", "ABC", "ABCDE0", "ABCDEFG", "<script>"} {
		if _, ok := NormalizeCode(c); ok {
			t.Errorf("NormalizeCode(%q) accepted", c)
		}
	}
	if c, ok := NormalizeCode(" abcdef "); !ok || c != "ABCDEF" {
		t.Errorf("a typed code: %q %v", c, ok)
	}
	seen := map[string]bool{}
	for range 1000 {
		c := newCode()
		if _, ok := NormalizeCode(c); !ok || seen[c] {
			t.Fatalf("newCode gave %q (valid %v, repeated %v)", c, ok, seen[c])
		}
		seen[c] = true
	}
}

func TestStoreRejectsCorruptState(t *testing.T) {
	st, err := OpenBolt(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	state := State{Lesson: "seeds", LessonStep: 2, Run: spec.Default("lesson.gguf")}
	state.Run.Prompt = "Once"
	if _, err := st.SaveRoom(t.Context(), Record{Code: "ABCDEF", SecretHash: "h", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 2, "s1", " white"); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 2, "s1", " brown"); err != nil { // a changed answer replaces the first
		t.Fatal(err)
	}
	r, err := st.LoadRoom(t.Context(), "ABCDEF")
	if err != nil || r.State.LessonStep != 2 || r.State.Run.Prompt != "Once" || r.Answers[2]["s1"] != " brown" || len(r.Answers[2]) != 1 {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
	if err := st.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRooms).Bucket([]byte("ABCDEF")).Put(keyState, []byte(`{"lesson": 5`))
	}); err != nil {
		t.Fatal(err)
	}
	// A room whose state cannot be read comes back (its answers kept) with
	// the damage named, not replayed.
	r, err = st.LoadRoom(t.Context(), "ABCDEF")
	if err != nil || r.Answers[2]["s1"] != " brown" || r.State.Broken == "" {
		t.Fatalf("corrupt state: %+v, %v", r, err)
	}
	if got := strings.Join(r.Damage, "; "); !strings.Contains(got, "checksum does not match") || !strings.Contains(got, "not readable JSON") {
		t.Errorf("corrupt state's damage: %q", got)
	}
	if _, err := st.LoadRoom(t.Context(), "ZZZZZZ"); err != ErrNoRoom {
		t.Errorf("missing room: %v", err)
	}
}

// A room saved by the first classroom (form strings, no version) loads
// with the same run, seed and view.
func TestLegacyStateLoads(t *testing.T) {
	old := `{"lesson":"seeds","lesson_step":1,"settings":{"Prompt":"The cat","Model":"lesson.gguf","Backend":"auto","Temperature":"0.7","TopK":"40","TopP":"0.95","MinP":"0.05","TypicalP":"1","RepeatPenalty":"1","RepeatLastN":"64","FreqPen":"0","PresPen":"0","Seed":"42","Order":"llama.cpp","MaxTokens":"16"},"step":2,"stage":3,"head":1,"scores":true,"view_temperature":0.7,"revealed":{"1":true}}`
	s, err := UnmarshalState([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Run
	if s.Lesson != "seeds" || s.LessonStep != 1 || !s.Revealed[1] || r.Prompt != "The cat" || r.Sampler.Temperature != 0.7 || r.Sampler.Seed != 42 ||
		!r.Sampler.SeedSet || r.MaxTokens != 16 || r.View.Token != 2 || r.View.Stage != 3 || r.View.Head != 1 || !r.View.Scores {
		t.Errorf("legacy state: %+v", s)
	}
	b, _ := s.Marshal()
	if back, err := UnmarshalState(b); err != nil || back.Run.Sampler.Seed != 42 || back.Version != stateVersion {
		t.Errorf("re-saved: %+v, %v", back, err)
	}
	if _, err := UnmarshalState([]byte(`{"version":99}`)); err == nil {
		t.Error("a newer version: want error")
	}
}

// FuzzRoomMessage: any bytes from a room's WebSocket are either refused
// with an error or give an action that side may send; never a panic.
func FuzzRoomMessage(f *testing.F) {
	for _, seed := range []string{`{"action":"answer","answer":" Par"}`, `{"action":"lesson-step","to":"3"}`, `{"action":"reveal","HEADERS":{}}`, `[]`, `{"action":5}`, `{"action":"run","prompt":"` + strings.Repeat("x", 50) + `"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, instructor := range []bool{false, true} {
			m, err := ParseMessage(msg, instructor)
			if err != nil {
				continue
			}
			known := studentActions
			if instructor {
				known = instructorActions
			}
			if !known[m.Action] {
				t.Fatalf("accepted unknown action %q", m.Action)
			}
			m.Get("answer")
		}
	})
}

func lessonSession(t *testing.T, run spec.Run) *session.Session {
	t.Helper()
	reg := modelstest.Lesson(t)
	se := session.New("t", "", reg)
	t.Cleanup(se.Close)
	if err := se.Open(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	return se
}

// TestPollRows checks the class histogram on real engine state: answers
// counted per token (typed words become the token they are), the model's
// probabilities beside them, probability answers in tenths, choices in
// their order.
func TestPollRows(t *testing.T) {
	run := spec.Default("lesson.gguf")
	run.Prompt, run.Sampler.Temperature, run.Sampler.TopK, run.Sampler.TopP, run.Sampler.MinP = "The capital of France is", 1, 0, 1, 0
	run.Sampler.Seed, run.Sampler.SeedSet = 1, true
	run.View.StageName = "logits"
	se := lessonSession(t, run)
	st, tk, ok := se.Current()
	if !ok {
		t.Fatal("no trace")
	}
	probs := sample.Probabilities(st.Logits.Logits, 1)
	par := tk.EncodeIDs(" Par", false)
	if len(par) != 1 {
		t.Fatalf(`" Par" is %d tokens`, len(par))
	}

	nt := &lessons.Question{Kind: "next-token"}
	typed := map[string]string{}
	for i, raw := range []string{"Par", " Par", "Par ", "L"} {
		a, err := lessons.CheckAnswer(tk, nt, raw)
		if err != nil {
			t.Fatal(err)
		}
		typed[fmt.Sprint("s", i)] = a
	}
	rows := PollRows(st, tk, nt, typed, true)
	byAnswer := map[string]views.PollRow{}
	for _, r := range rows {
		byAnswer[r.Answer] = r
	}
	p := byAnswer[" Par"]
	if p.Count != 3 || !p.Correct || !p.HasModelP || math.Abs(p.ModelP-float64(probs[par[0]])) > 1e-7 || math.Abs(p.Share-0.75) > 1e-9 {
		t.Errorf(`" Par" row: %+v (model p %v)`, p, probs[par[0]])
	}
	if rows[0].Answer != " Par" {
		t.Errorf("rows not by count: first %q", rows[0].Answer)
	}
	if len(rows) < 5 {
		t.Errorf("the model's top tokens should be listed even when nobody chose them: %d rows", len(rows))
	}
	if live := PollRows(st, tk, nt, typed, false); len(live) != 2 || live[0].HasModelP || live[0].Correct {
		t.Errorf("before the reveal the rows carry no model numbers: %+v", live)
	}

	pq := &lessons.Question{Kind: "probability"}
	rows = PollRows(st, tk, pq, map[string]string{"a": "0.95", "b": "0.99", "c": "0.5"}, true)
	if len(rows) != 10 || rows[0].Answer != "0–10%" || rows[9].Answer != "90–100%" || rows[9].Count != 2 || !rows[9].Correct || rows[5].Count != 1 {
		t.Errorf("probability bins: %+v", rows)
	}

	cq := &lessons.Question{Kind: "choice", Choices: []string{"first", "second", "third"}, Answer: "second"}
	rows = PollRows(st, tk, cq, map[string]string{"a": "third", "b": "third"}, true)
	if len(rows) != 3 || rows[0].Answer != "first" || rows[2].Count != 2 || !rows[1].Correct || rows[2].Correct {
		t.Errorf("choice rows: %+v", rows)
	}
}

// FuzzCheckAnswer: a student's answer is validated against each kind of
// question without panicking, and what is accepted is short, valid text.
func FuzzCheckAnswer(f *testing.F) {
	reg := modelstest.Lesson(f)
	m, err := reg.Get("lesson.gguf")
	if err != nil {
		f.Fatal(err)
	}
	tk := m.Tokenizer
	qs := []*lessons.Question{
		{Kind: "next-token"}, {Kind: "probability"}, {Kind: "survivors"},
		{Kind: "choice", Choices: []string{"a", " b"}, Answer: "a"}, {Kind: "next-token", Choices: []string{" Par", " L"}},
	}
	for _, seed := range []string{" Par", "white", "0.5", "42%", "7", "", " b", "\xff", strings.Repeat("é", 40)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, q := range qs {
			a, err := lessons.CheckAnswer(tk, q, raw)
			if err != nil {
				continue
			}
			if len(a) > lessons.MaxAnswerBytes+8 || !utf8.ValidString(a) || a == "" {
				t.Fatalf("%s: accepted %q as %q", q.Kind, raw, a)
			}
			lessons.Judge(q.Kind, "0.5", a)
		}
	})
}

// Engine work in one room holds no lock another room needs: while room A's
// goroutine is busy, room B serves its page and A can still be looked up.
func TestBusyRoomBlocksNoOther(t *testing.T) {
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Config{Engines: reg, Lessons: all})
	t.Cleanup(cl.Close)
	a, _, err := cl.Create(t.Context(), "x", "tokens", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := cl.Create(t.Context(), "y", "seeds", nil)
	if err != nil {
		t.Fatal(err)
	}
	release, busy := make(chan struct{}), make(chan struct{})
	a.post(func() { close(busy); <-release }) // room A is busy (as with a long engine run)
	defer close(release)
	<-busy
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := b.StudentPage(ctx); err != nil {
		t.Errorf("room B while room A is busy: %v", err)
	}
	if r, err := cl.Lookup(ctx, a.Code()); err != nil || r != a {
		t.Errorf("looking up the busy room: %v", err)
	}
	short, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel2()
	if _, err := a.StudentPage(short); err == nil {
		t.Error("the busy room answered while its goroutine was held")
	}
}

// A damaged store is refused at start-up, in one line, with a copy kept;
// an empty file starts fresh; a newer schema is refused.
func TestStoreNoticesDamage(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenBolt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	run := spec.Default("lesson.gguf")
	run.Prompt = strings.Repeat("x", 1500)
	for i := range 200 { // enough rooms to span many pages
		if _, err := st.SaveRoom(t.Context(), Record{Code: fmt.Sprintf("R%05d", i), SecretHash: "h", Created: now, Expires: now.Add(time.Hour)}, State{Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	// a page in the middle of the file that holds rooms, not a header
	var page int64
	st.db.View(func(tx *bolt.Tx) error {
		n := int(tx.Size() / int64(tx.DB().Info().PageSize))
		for id := n / 2; id < n && page == 0; id++ {
			if info, err := tx.Page(id); err == nil && info != nil && info.Type == "leaf" {
				page = int64(id)
			}
		}
		return nil
	})
	ps := int64(st.db.Info().PageSize)
	st.Close()
	path := filepath.Join(dir, BoltFile)
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 40000 || page == 0 {
		t.Fatalf("store of %d bytes, a leaf at page %d: %v", len(b), page, err)
	}
	for i := page * ps; i < (page+1)*ps; i++ {
		b[i] ^= 0x5a
	}
	os.WriteFile(path, b, 0o600)
	_, err = OpenBolt(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "damaged") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a damaged store: %v", err)
	}
	copies, _ := filepath.Glob(path + ".damaged-*")
	if len(copies) != 1 || !strings.Contains(err.Error(), copies[0]) {
		t.Errorf("the damaged store's copy: %v (error %v)", copies, err)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, BoltFile), nil, 0o600)
	if st, err := OpenBolt(empty, nil); err != nil {
		t.Errorf("an empty file: %v", err)
	} else {
		st.Close()
	}

	newer := t.TempDir()
	st, _ = OpenBolt(newer, nil)
	st.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, be64(99)) })
	st.Close()
	if _, err := OpenBolt(newer, nil); err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("a newer schema: %v", err)
	}
}

// A stored room whose run cannot be replayed is quarantined: it loads,
// the reason is saved (so it is not replayed on every load) and shown to
// the instructor; the room works again once the instructor moves it on.
func TestQuarantinedState(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenBolt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := spec.Default("gone.gguf")
	run.Prompt = "Once"
	now := time.Now()
	if _, err := st.SaveRoom(t.Context(), Record{Code: "QQQQQQ", SecretHash: hashSecret("k"), Created: now, Expires: now.Add(time.Hour)}, State{Run: run}); err != nil {
		t.Fatal(err)
	}
	reg := modelstest.Lesson(t)
	cl := New(Config{Engines: reg, Store: st})
	t.Cleanup(cl.Close)
	r, err := cl.Lookup(t.Context(), "QQQQQQ")
	if err != nil {
		t.Fatal(err)
	}
	var broken string
	r.do(t.Context(), func() { broken = r.state.Broken })
	saved, err := st.LoadRoom(t.Context(), "QQQQQQ")
	if err != nil || broken == "" || !strings.Contains(broken, "gone.gguf") || saved.State.Broken != broken {
		t.Errorf("quarantine: %q, saved %q (%v)", broken, saved.State.Broken, err)
	}
	if _, err := r.StudentPage(t.Context()); err != nil {
		t.Errorf("a quarantined room still serves its page: %v", err)
	}
}
