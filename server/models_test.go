package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/hfhub"
	"stepthrough/hfhub/hubtest"
)

// modelsHub is a fake Hub with one small model, and a server whose Hub
// client pulls from it into a fresh cache.
func modelsHub(t *testing.T, key string) (*hubtest.Hub, *httptest.Server, string, []byte) {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	hub := hubtest.New(t)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": w.Bytes(), "README.md": []byte("# tiny")})
	cache := t.TempDir()
	client := &hfhub.Client{Endpoint: hub.URL(), Cache: hfhub.Cache{Dir: cache}, Stall: time.Minute, Backoff: time.Millisecond, HeadBytes: 4 << 10}
	s := mustNew(t, Config{Embedded: lessonModels(), Hub: client, API: APIConfig{Key: key}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return hub, ts, cache, w.Bytes()
}

// postForm sends a form as the page's htmx would (same origin), with the key
// when given.
func postForm(t *testing.T, u string, form url.Values, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// progressOf reads a status fragment's progress.
func progressOf(t *testing.T, html string) (state string, done, total int64, text string) {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Find(`[data-testid="pull-progress"]`)
	state, _ = p.Attr("data-state")
	d, _ := p.Attr("data-done")
	tt, _ := p.Attr("data-total")
	done, _ = strconv.ParseInt(d, 10, 64)
	total, _ = strconv.ParseInt(tt, 10, 64)
	return state, done, total, strings.TrimSpace(p.Find(`[data-testid="pull-text"]`).Text())
}

// waitPull polls the status endpoint until until says yes.
func waitPull(t *testing.T, base, ref string, until func(state string, done int64) bool) (string, int64, int64, string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/models/pull/status?ref=" + url.QueryEscape(ref))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		state, done, total, text := progressOf(t, string(b))
		if until(state, done) {
			return state, done, total, text
		}
		if time.Now().After(deadline) {
			t.Fatalf("pull of %s: still %s at %d of %d (%s)", ref, state, done, total, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The Models page pulls through its endpoints: progress while the bytes
// arrive (stalled mid-way), a cancel, a second pull that continues and
// completes; the model is then listed and answers a completion; a delete
// removes its link and blob; a request joins the running pull.
func TestModelsPullCancelDelete(t *testing.T) {
	hub, ts, cache, data := modelsHub(t, "")
	const ref = "org/tiny-GGUF:Q8_0"
	half := len(data) / 2
	hub.Stall(1, half)
	if code, body := postForm(t, ts.URL+"/models/pull", url.Values{"ref": {ref}}, ""); code != http.StatusOK || !strings.Contains(body, `data-state="running"`) {
		t.Fatalf("pull: %d %s", code, body)
	}
	// a second request joins the first (its tag in another case): the same pull, still stalled
	if code, body := postForm(t, ts.URL+"/models/pull", url.Values{"ref": {"org/tiny-GGUF:q8_0"}}, ""); code != http.StatusOK || !strings.Contains(body, `data-state="running"`) {
		t.Fatalf("a second pull: %d %s", code, body)
	}
	state, done, total, text := waitPull(t, ts.URL, ref, func(_ string, done int64) bool { return done >= int64(half) })
	if state != "running" || done != int64(half) || total != int64(len(data)) || !strings.Contains(text, hfhub.Size(int64(half))+" of "+hfhub.Size(int64(len(data)))) {
		t.Fatalf("stalled mid-way: %s %d/%d %q", state, done, total, text)
	}
	cdn := 0
	for _, r := range hub.Requests() {
		if r.Server == "cdn" && (r.Range == "" || strings.HasSuffix(r.Range, "-")) {
			cdn++
		}
	}
	if cdn != 1 {
		t.Errorf("%d downloads for two requests: the second did not join the first", cdn)
	}
	code, body := postForm(t, ts.URL+"/models/pull/cancel", url.Values{"ref": {ref}}, "")
	if state, _, _, text := progressOf(t, body); code != http.StatusOK || state != "cancelled" || !strings.Contains(text, "Cancelled") {
		t.Fatalf("cancel: %d %s %q", code, state, text)
	}
	if strings.Contains(get(t, ts.URL+"/models").Text(), ref) {
		t.Errorf("a cancelled pull is listed")
	}
	// again: it continues from the bytes kept, and completes
	if code, _ := postForm(t, ts.URL+"/models/pull", url.Values{"ref": {ref}}, ""); code != http.StatusOK {
		t.Fatalf("pull again: %d", code)
	}
	state, done, _, text = waitPull(t, ts.URL, ref, func(state string, _ int64) bool { return state != "running" })
	if state != "done" || done != int64(len(data)) || !strings.Contains(text, "offered as "+ref) {
		t.Fatalf("pull again: %s %d %q", state, done, text)
	}
	for _, r := range hub.Requests() {
		if r.Server == "cdn" && strings.HasSuffix(r.Range, "-") && r.Range != "bytes="+strconv.Itoa(half)+"-" {
			t.Errorf("the second pull asked %s, not the rest after the cancelled one's %d bytes", r.Range, half)
		}
	}
	// listed at once, from the cache, with a delete button; usable by the API
	doc := get(t, ts.URL+"/models")
	row := doc.Find(`[data-testid="model-row"][data-model="` + ref + `"]`)
	if row.Length() != 1 || !strings.Contains(row.Text(), "Hugging Face cache") || !strings.Contains(row.Text(), "llama") || row.Find(`[data-testid="delete"]`).Length() != 1 {
		t.Fatalf("the pulled model's row: %q", row.Text())
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"`+ref+`","prompt":"the cat","max_tokens":3,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Model string `json:"model"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || c.Model != ref || c.Usage.CompletionTokens == 0 {
		t.Fatalf("a completion with the pulled model: %d %+v %v", resp.StatusCode, c, err)
	}
	// and the Explorer runs it
	q := url.Values{"prompt": {"the cat"}, "temperature": {"0"}, "model": {ref}, "backend": {"cpu"}}
	if doc := get(t, ts.URL+"/?"+q.Encode()); doc.Find(`select[name="model"] option[selected]`).AttrOr("value", "") != ref || doc.Find("[data-current-stage]").Length() == 0 {
		t.Errorf("the Explorer with the pulled model: selected %q", doc.Find(`select[name="model"] option[selected]`).AttrOr("value", ""))
	}
	// the Models page's link to the model opens the Explorer with it chosen
	link := get(t, ts.URL+"/models").Find(`th[scope="row"] a`).FilterFunction(func(_ int, a *goquery.Selection) bool { return a.Text() == ref }).AttrOr("href", "")
	if link == "" {
		t.Fatalf("the Models page has no link to %s", ref)
	}
	if doc := get(t, ts.URL+link); doc.Find(`select[name="model"] option[selected]`).AttrOr("value", "") != ref || doc.Find(`[data-testid="error"]`).Length() != 0 {
		t.Errorf("the Models page's link %s: the Explorer chose %q (error %q)", link, doc.Find(`select[name="model"] option[selected]`).AttrOr("value", ""), doc.Find(`[data-testid="error"]`).Text())
	}
	if doc := getStatus(t, ts.URL+"/?model=no-such.gguf", http.StatusBadRequest); !strings.Contains(doc.Find(`[data-testid="error"]`).Text(), "no-such.gguf") {
		t.Errorf("a link to a model not offered: error %q", doc.Find(`[data-testid="error"]`).Text())
	}
	// delete: the link and its blob go, the model is no longer offered
	blobs, _ := filepath.Glob(filepath.Join(cache, "models--org--tiny-GGUF", "blobs", "*"))
	if code, _ := postForm(t, ts.URL+"/models/delete", url.Values{"name": {ref}}, ""); code != http.StatusSeeOther {
		t.Fatalf("delete: %d", code)
	}
	for _, b := range blobs {
		if _, err := os.Stat(b); err == nil {
			t.Errorf("%s is left after the delete", b)
		}
	}
	if doc := get(t, ts.URL+"/models"); doc.Find(`[data-model="`+ref+`"]`).Length() != 0 || !strings.Contains(get(t, ts.URL+"/models?notice=x").Text(), "Models") {
		t.Errorf("the deleted model is still listed")
	}
	if code, _ := postForm(t, ts.URL+"/models/delete", url.Values{"name": {"lesson.gguf"}}, ""); code != http.StatusNotFound {
		t.Errorf("deleting an embedded model: %d, want 404", code)
	}
	if code, _ := postForm(t, ts.URL+"/models/pull", url.Values{"ref": {"../../etc"}}, ""); code != http.StatusBadRequest {
		t.Errorf("a bad reference: %d, want 400", code)
	}
}

// With an API key, pulls, cancels and deletes without it are refused with
// a message saying so; from another website's page, refused too.
func TestModelsNeedKey(t *testing.T) {
	hub, ts, _, _ := modelsHub(t, "sesame")
	for _, p := range []struct{ path, field string }{{"/models/pull", "ref"}, {"/models/pull/cancel", "ref"}, {"/models/delete", "name"}} {
		code, body := postForm(t, ts.URL+p.path, url.Values{p.field: {"org/tiny-GGUF"}}, "")
		if code != http.StatusUnauthorized || !strings.Contains(body, "API key") {
			t.Errorf("POST %s without the key: %d %s", p.path, code, body)
		}
	}
	if len(hub.Requests()) != 0 {
		t.Errorf("a refused pull asked the Hub")
	}
	if doc := get(t, ts.URL+"/models"); doc.Find(`[data-testid="key-form"]`).Length() != 1 {
		t.Errorf("the page does not ask for the key")
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/models/pull", strings.NewReader("ref=org%2Ftiny-GGUF"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Authorization", "Bearer sesame")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a pull from another site: %d, want 403", resp.StatusCode)
	}
	if code, body := postForm(t, ts.URL+"/models/pull", url.Values{"ref": {"org/tiny-GGUF"}}, "sesame"); code != http.StatusOK || !strings.Contains(body, "pull-progress") {
		t.Errorf("a pull with the key: %d %s", code, body)
	}
}

// A model pulled into the cache beside a running server (stepthrough pull
// in another terminal) is offered by the API's model list and the Models
// page without a restart.
func TestModelPulledBesideTheServer(t *testing.T) {
	hub, ts, cache, _ := modelsHub(t, "")
	const ref = "org/tiny-GGUF:Q8_0"
	if strings.Contains(get(t, ts.URL+"/models").Text(), ref) {
		t.Fatalf("%s offered before any pull", ref)
	}
	r, err := hfhub.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	beside := &hfhub.Client{Endpoint: hub.URL(), Cache: hfhub.Cache{Dir: cache}, Stall: time.Minute, Backoff: time.Millisecond, HeadBytes: 4 << 10}
	if _, err := beside.Pull(context.Background(), hfhub.Request{Ref: r}, hfhub.Options{}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"id":"`+ref+`"`) {
		t.Errorf("/v1/models after a pull beside the server: %s", body)
	}
	if doc := get(t, ts.URL+"/models"); doc.Find(`[data-testid="model-row"][data-model="`+ref+`"]`).Length() != 1 {
		t.Errorf("the Models page does not list %s pulled beside it", ref)
	}
}
