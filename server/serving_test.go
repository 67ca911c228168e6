package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"stepthrough/engine/sample"
	"stepthrough/engine/serve"
	"stepthrough/views"
)

func servingServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// postServing starts a load and returns the run's path (or the status and
// error line when refused).
func postServing(t *testing.T, ts *httptest.Server, form url.Values, origin string) (string, int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/serving/runs", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther {
		return resp.Header.Get("Location"), resp.StatusCode, ""
	}
	doc, _ := goquery.NewDocumentFromReader(resp.Body)
	return "", resp.StatusCode, doc.Find(`[data-testid="error"]`).Text()
}

func servingForm(users, prompt, minTok, maxTok, seqs int, policy, cache, chunked, compare string) url.Values {
	return url.Values{"model": {"lesson.gguf"}, "users": {fmt.Sprint(users)}, "rate": {"0"}, "prompt": {fmt.Sprint(prompt)}, "min": {fmt.Sprint(minTok)},
		"max": {fmt.Sprint(maxTok)}, "seqs": {fmt.Sprint(seqs)}, "policy": {policy}, "cache": {cache}, "chunked": {chunked}, "compare": {compare}, "temperature": {"0"}}
}

type servingEvent struct {
	T    string   `json:"t"`
	S    int      `json:"s"`
	U    int      `json:"u"`
	X    string   `json:"x"`
	I    int      `json:"i"`
	P    [][4]int `json:"p"`
	Held int      `json:"held"`
	KV   int      `json:"kv"`
	R, W int
}

// readEvents reads a run's event stream to its end.
func readEvents(t *testing.T, ts *httptest.Server, path string) []servingEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: content type %q", ct)
	}
	var evs []servingEvent
	sc := bufio.NewScanner(resp.Body)
	closing := false
	for sc.Scan() {
		line := sc.Text()
		if line == "event: close" {
			closing = true
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if closing {
			return evs
		}
		var e servingEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		evs = append(evs, e)
	}
	t.Fatalf("the event stream ended without a close event (%v)", sc.Err())
	return nil
}

// A load under two settings streams every step and token over SSE; the
// page then shows both measured, the same greedy text for every user
// under both (batching changes when work is done, never what is computed)
// and each user's text equal to the tokens streamed.
func TestServingRunStreamsAndMeasures(t *testing.T) {
	_, ts := servingServer(t)
	path, code, msg := postServing(t, ts, servingForm(6, 16, 4, 12, 3, "continuous", "paged", "on", "static,contiguous,on"), ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	evs := readEvents(t, ts, path)
	streamed := map[[2]int]string{}
	steps := map[int]int{}
	for _, e := range evs {
		switch e.T {
		case "tok":
			streamed[[2]int{e.S, e.U}] += e.X
		case "step":
			steps[e.S]++
			n := 0
			for _, p := range e.P {
				n += p[1]
			}
			if n == 0 || len(e.P) > 3 {
				t.Errorf("step %+v", e)
			}
		}
	}
	if steps[0] == 0 || steps[1] == 0 {
		t.Fatalf("steps per setting: %v", steps)
	}
	doc := get(t, ts.URL+path)
	if doc.Find(`[data-testid="run"]`).AttrOr("data-done", "") != "true" || doc.Find(`[data-testid="result"]`).Length() != 2 || doc.Find(`[data-testid="verdict"]`).Length() != 1 {
		t.Fatalf("run page: %s", doc.Find("main").Text())
	}
	doc.Find(`tr[data-user]`).Each(func(i int, row *goquery.Selection) {
		a, b := row.Find(`[data-setting="0"]`).Text(), row.Find(`[data-setting="1"]`).Text()
		if a == "" || a != b {
			t.Errorf("user %d: %q under one setting, %q under the other", i+1, a, b)
		}
		if a != streamed[[2]int{0, i}] || b != streamed[[2]int{1, i}] {
			t.Errorf("user %d: the page's text differs from the streamed tokens", i+1)
		}
	})
	for _, name := range []string{"timeline", "steps", "latency"} {
		if n := doc.Find(`[data-testid="chart-` + name + `"] rect`).Length(); n == 0 {
			t.Errorf("chart %s has no bars", name)
		}
	}
	ttft := doc.Find(`[data-testid="figure"][data-name="time to first token, p50 / p95"]`).First().Text()
	if !strings.HasSuffix(ttft, " ms") {
		t.Errorf("TTFT figure %q", ttft)
	}
}

// The same load batched and then one user at a time: two results named
// by how many run at once, each user's greedy reply the same under both
// (what "Many users, one model" sends students to see), and the verdict
// comparing the two.
func TestServingBatchedAgainstOneAtATime(t *testing.T) {
	_, ts := servingServer(t)
	path, code, msg := postServing(t, ts, servingForm(4, 16, 6, 6, 4, "continuous", "contiguous", "on", views.ServingOneAtATime), ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	readEvents(t, ts, path)
	doc := get(t, ts.URL+path)
	var names []string
	doc.Find(`[data-testid="result"]`).Each(func(_ int, r *goquery.Selection) { names = append(names, r.AttrOr("data-setting", "")) })
	want := []string{"continuous batching · contiguous KV · chunked prefill · 4 at once", "continuous batching · contiguous KV · chunked prefill · one at a time"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("the two settings (-want +got):\n%s", diff)
	}
	if v := doc.Find(`[data-testid="verdict"]`).Text(); !strings.Contains(v, "one at a time") {
		t.Errorf("the verdict does not compare the two: %q", v)
	}
	doc.Find(`tr[data-user]`).Each(func(i int, row *goquery.Selection) {
		a, b := row.Find(`[data-setting="0"]`).Text(), row.Find(`[data-setting="1"]`).Text()
		if a == "" || a != b {
			t.Errorf("user %d: %q batched, %q one at a time", i+1, a, b)
		}
	})
}

// The serving page says what it measures and what each group of fields
// does; the load's size, how it is served and the comparison stay in
// view, the rest is folded under "More settings".
func TestServingPageExplainsItsFields(t *testing.T) {
	_, ts := servingServer(t)
	doc := get(t, ts.URL+"/serving")
	intro := doc.Find(`[data-testid="serving-intro"]`).Text()
	for _, says := range []string{"measures", "time to first token", "The load", "How it is served", "Then the same load under"} {
		if !strings.Contains(intro, says) {
			t.Errorf("the introduction does not say %q", says)
		}
	}
	form := doc.Find(`form[action="/serving/runs"]`)
	var shown, folded []string
	form.Find(`input[name], select[name]`).Each(func(_ int, f *goquery.Selection) {
		if f.Closest(`details`).Length() > 0 {
			folded = append(folded, f.AttrOr("name", ""))
		} else {
			shown = append(shown, f.AttrOr("name", ""))
		}
	})
	if diff := cmp.Diff([]string{"model", "users", "rate", "seqs", "policy", "compare"}, shown); diff != "" {
		t.Errorf("fields in view (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"prompt", "shared", "min", "max", "ignore_eos", "stop", "temperature", "cache", "chunked"}, folded); diff != "" {
		t.Errorf("folded fields (-want +got):\n%s", diff)
	}
	if form.Find(`select[name="compare"] option[value="`+views.ServingOneAtATime+`"]`).Length() != 1 {
		t.Error("no way to compare a batch with one user at a time")
	}
}

// stopAcrossTokens picks a stop string that user 1 of a 16-token-prompt
// load meets across token boundaries (greedy), and the text before it.
func stopAcrossTokens(t *testing.T, s *Server) (stop, before string) {
	t.Helper()
	lm, err := s.reg.Engine("lesson.gguf", "auto")
	if err != nil {
		t.Fatal(err)
	}
	ld := serve.Load{PromptTokens: 16}
	sess, _ := lm.NewSession(0)
	defer sess.Close()
	p := sample.Defaults()
	p.Temperature, p.Seed, p.SeedSet = 0, 1, true
	smp, _ := sample.New(p)
	var pieces []string
	sess.Generate(context.Background(), ld.Prompt(lm, 0), 24, smp, func(id int32) error {
		pieces = append(pieces, string(lm.Model.Tokenizer.Bytes(id)))
		return nil
	})
	full := strings.Join(pieces, "")
	if len(pieces) < 5 || len(pieces[2]) < 2 {
		t.Fatalf("the lesson model's reply %q gives no stop string that spans tokens", full)
	}
	// from inside the third token to inside the fifth
	at := len(pieces[0]) + len(pieces[1]) + len(pieces[2])/2
	end := len(pieces[0]) + len(pieces[1]) + len(pieces[2]) + len(pieces[3]) + max(1, len(pieces[4])/2)
	stop = full[at:end]
	if strings.Index(full, stop) != at {
		t.Fatalf("stop %q occurs earlier in %q", stop, full)
	}
	return stop, full[:at]
}

// A stop string that the model writes across token boundaries ends that
// user's reply just before it; nothing of it is streamed.
func TestServingStopAcrossTokens(t *testing.T) {
	s, ts := servingServer(t)
	stop, before := stopAcrossTokens(t, s)
	form := servingForm(3, 16, 24, 24, 3, "continuous", "contiguous", "on", "")
	form.Set("stop", stop)
	path, code, msg := postServing(t, ts, form, ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	evs := readEvents(t, ts, path)
	var streamed string
	for _, e := range evs {
		if e.T == "tok" && e.U == 0 {
			streamed += e.X
		}
	}
	if streamed != before {
		t.Errorf("stop %q: streamed %q, want %q", stop, streamed, before)
	}
	cell := get(t, ts.URL+path).Find(`tr[data-user="1"] [data-setting="0"]`)
	if cell.Text() != before || cell.AttrOr("data-finish", "") != "stop" {
		t.Errorf("the page shows %q (%s)", cell.Text(), cell.AttrOr("data-finish", ""))
	}
}

// Wrong input is refused in one line; a load from another site is
// refused; one load runs at a time.
func TestServingRefusals(t *testing.T) {
	_, ts := servingServer(t)
	for name, f := range map[string]func(url.Values){
		"no users":         func(v url.Values) { v.Set("users", "0") },
		"too many users":   func(v url.Values) { v.Set("users", "65") },
		"words":            func(v url.Values) { v.Set("prompt", "many") },
		"from above to":    func(v url.Values) { v.Set("min", "20"); v.Set("max", "10") },
		"unknown model":    func(v url.Values) { v.Set("model", "../etc/passwd") },
		"unknown policy":   func(v url.Values) { v.Set("policy", "fastest") },
		"unknown compare":  func(v url.Values) { v.Set("compare", "a,b") },
		"negative rate":    func(v url.Values) { v.Set("rate", "-1") },
		"NaN temperature":  func(v url.Values) { v.Set("temperature", "NaN") },
		"long stop":        func(v url.Values) { v.Set("stop", strings.Repeat("x", 80)) },
		"past the context": func(v url.Values) { v.Set("prompt", "1024"); v.Set("max", "512") },
	} {
		form := servingForm(4, 16, 4, 8, 2, "continuous", "contiguous", "on", "")
		f(form)
		_, code, msg := postServing(t, ts, form, ts.URL)
		if code != http.StatusBadRequest || msg == "" || strings.Contains(msg, "\n") {
			t.Errorf("%s: %d %q", name, code, msg)
		}
	}
	if _, code, _ := postServing(t, ts, servingForm(4, 16, 4, 8, 2, "continuous", "contiguous", "on", ""), "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-site POST: %d", code)
	}
	big := servingForm(64, 64, 400, 400, 16, "continuous", "contiguous", "on", "static,contiguous,on")
	big.Set("ignore_eos", "on")
	if _, code, msg := postServing(t, ts, big, ts.URL); code != http.StatusSeeOther {
		t.Fatalf("a big load: %d %s", code, msg)
	}
	if _, code, msg := postServing(t, ts, servingForm(2, 8, 2, 2, 2, "continuous", "contiguous", "on", ""), ts.URL); code != http.StatusTooManyRequests || !strings.Contains(msg, "already running") {
		t.Errorf("a second load at once: %d %q", code, msg)
	}
	getStatus(t, ts.URL+"/serving/runs/nope", http.StatusNotFound)
}

// Explorer users stay responsive while a 32-user load runs: an Explorer
// step waits for at most the serving step in progress (passes of one
// model take turns), not for the load. Measured, and logged for the note.
// A load that ends while the Explorer is measured is followed by another,
// so every step is measured against one however fast the machine is.
func TestExplorerDuringLoad(t *testing.T) {
	s, ts := servingServer(t)
	measure := func(before func()) []time.Duration {
		se, _ := s.sessions.New("explorer")
		c := dial(t, ts, se.ID(), ts.URL)
		if d := exchange(t, c, `{"action":"run","prompt":"The capital of France is","temperature":"0","model":"lesson.gguf","seed":"1","HEADERS":{}}`); stage(d) != "tokenize" {
			t.Fatalf("run: %s", d.Text())
		}
		var lat []time.Duration
		for i := range 40 {
			time.Sleep(60 * time.Millisecond) // a student's pace, under the connection's message limit
			before()
			start := time.Now()
			if d := exchange(t, c, `{"action":"step"}`); stage(d) == "" {
				h, _ := d.Html()
				t.Fatalf("step %d rendered no stage: %.600s", i, h)
			}
			lat = append(lat, time.Since(start))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat
	}
	idle := measure(func() {})
	var run string
	loads, nsteps := 0, 0
	load := func() { // start a load and wait until it decodes
		form := servingForm(32, 32, 470, 470, 32, "continuous", "contiguous", "on", "")
		form.Set("ignore_eos", "on")
		path, code, msg := postServing(t, ts, form, ts.URL)
		for try := 0; code == http.StatusTooManyRequests && try < 500; try++ {
			time.Sleep(10 * time.Millisecond) // the ended run lets go of the server just after its end
			path, code, msg = postServing(t, ts, form, ts.URL)
		}
		if code != http.StatusSeeOther {
			t.Fatalf("POST: %d %s", code, msg)
		}
		run, loads = strings.TrimPrefix(path, "/serving/runs/"), loads+1
		for {
			evs, done, _ := s.serving.get(run).since(0)
			if done || slices.ContainsFunc(evs, func(b []byte) bool { return strings.Contains(string(b), `"t":"step"`) }) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	steps := func() (n int, done bool) {
		evs, done, _ := s.serving.get(run).since(0)
		for _, b := range evs {
			if strings.Contains(string(b), `"t":"step"`) {
				n++
			}
		}
		return n, done
	}
	load()
	loaded := measure(func() {
		if n, done := steps(); done {
			nsteps += n
			load()
		}
	})
	n, _ := steps()
	nsteps += n
	if nsteps == 0 {
		t.Fatal("no serving step ran while the Explorer was measured")
	}
	pct := func(l []time.Duration, p int) float64 { return ms(l[(len(l)-1)*p/100]) }
	t.Logf("Explorer step over the WebSocket, idle: p50 %.1f ms, p95 %.1f ms; during 32-user loads (%d loads, %d serving steps): p50 %.1f ms, p95 %.1f ms",
		pct(idle, 50), pct(idle, 95), loads, nsteps, pct(loaded, 50), pct(loaded, 95))
}

// The same events reach a WebSocket client, which can resume part way.
func TestServingWebSocket(t *testing.T) {
	_, ts := servingServer(t)
	path, code, msg := postServing(t, ts, servingForm(4, 16, 6, 6, 2, "continuous", "contiguous", "on", ""), ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	sse := readEvents(t, ts, path)
	read := func(from int) []servingEvent {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+path+"/ws?from="+fmt.Sprint(from), http.Header{"Origin": {ts.URL}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var evs []servingEvent
		for {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, b, err := c.ReadMessage()
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				return evs
			}
			if err != nil {
				t.Fatalf("after %d events: %v", len(evs), err)
			}
			var e servingEvent
			json.Unmarshal(b, &e)
			evs = append(evs, e)
		}
	}
	if ws := read(0); len(ws) != len(sse) || ws[len(ws)-1].T != "end" {
		t.Errorf("%d events over the WebSocket, %d over SSE", len(ws), len(sse))
	}
	if ws := read(5); len(ws) != len(sse)-5 {
		t.Errorf("resumed at 5: %d events, want %d", len(ws), len(sse)-5)
	}
}

// "Measuring honestly" shows loadgen's real output for its load, each
// setting twice, and the checklist points into it.
func TestHonestBenchmarkPage(t *testing.T) {
	_, ts := servingServer(t)
	doc := get(t, ts.URL+"/serving/benchmarking")
	out := doc.Find(`[data-testid="output"]`).Text()
	for _, want := range []string{"model: lesson.gguf", "hardware: ", "backend: ", "load: 16 users (Poisson, 50 a second), 32 prompt tokens and 8 to 48 generated each", "TTFT p50 / p95 ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "| continuous | on |"); n != 2 || strings.Count(out, "| static | on |") != 2 {
		t.Errorf("%d continuous rows (want 2 of each):\n%s", n, out)
	}
	if n := doc.Find(`[data-testid="checklist"] li`).Length(); n < 8 {
		t.Errorf("%d checklist items", n)
	}
	getStatus(t, ts.URL+"/serving/benchmarking?model=nope.gguf", http.StatusBadRequest)
}
