package server

import (
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// The reliability suite's third pass: one link must never take the server
// down, and a model whose numbers are not finite never reaches a render.

// overflowLink is the 119-character link of finding 1: one MLP scaled by
// 10⁴ ten times (10⁴⁰, past float32), which made every logit NaN and
// crashed a room's render, again after every restart.
var overflowLink = strings.TrimSuffix(strings.Repeat("L1mlp*10000;", 10), ";")

// Finding 1: the link is refused where it is read, naming the site, on
// every page that takes it; a room cannot be started from it; and a room
// an older server saved with it loads as quarantined after a restart, its
// instructor told why, the server still up.
func TestReliabilityOverflowingLink(t *testing.T) {
	if len(overflowLink) != 119 {
		t.Fatalf("the link is %d characters", len(overflowLink))
	}
	dir := t.TempDir()
	a := newAbuseServer(t, Config{DataDir: dir})
	q := url.Values{"prompt": {"The capital of France is"}, "ablate": {overflowLink}}.Encode()
	lane := url.Values{"prompt": {"The capital of France is"}, "n": {"4"}, "lane": {"greedy", "greedy,ablate=" + overflowLink}}.Encode()
	for _, path := range []string{"/?" + q, "/export.svg?" + q, "/compare?" + lane, "/compare.json?" + lane} {
		status, b := getPage(t, a.ts.URL+path)
		if status >= 500 || strings.Contains(b, "NaN") || !strings.Contains(b, "already edits that site") {
			t.Errorf("GET %.60s: %d, want the link refused naming the repeated site: %.300s", path, status, b)
		}
	}
	req, _ := http.NewRequest("POST", a.ts.URL+"/rooms", strings.NewReader(url.Values{"explorer": {"/?" + q}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther || resp.StatusCode >= 500 || !strings.Contains(string(b), "already edits that site") {
		t.Errorf("a room from the link: %s, want it refused naming why: %.300s", resp.Status, b)
	}

	// a room saved with the link by a server before this fix
	code, key := a.roomEditedOnDisk(t, dir, 1, func(t *testing.T, room *bolt.Bucket) {
		editState(t, room, func(state map[string]any) { state["run"].(map[string]any)["ablate"] = overflowLink })
		if err := room.Put([]byte("state_sum"), []byte{}); err != nil { // saved before checksums
			t.Fatal(err)
		}
	})
	b2 := newAbuseServer(t, Config{DataDir: dir})
	for range 3 { // students' tabs reconnect by themselves: every load is survived
		if status, page := getPage(t, b2.ts.URL+"/rooms/"+code); status != http.StatusOK {
			t.Fatalf("GET /rooms/%s after the restart: %d %.200s", code, status, page)
		}
	}
	teach := dialRoomWith(t, b2.ts.URL, code, "key="+key, http.Header{})
	m := teach.wait(`saved state was damaged`)
	if !strings.Contains(m, "already edits that sit") {
		t.Errorf("the instructor is not told what is wrong with the saved run: %.600s", m)
	}
	student := follower(t, b2.ts.URL, code)
	teach.send(map[string]string{"action": "lesson-step", "to": "2"}) // the instructor moves on; the class follows
	student.wait(`data-lesson-step="2"`)
	if status, _ := getPage(t, b2.ts.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz: %d", status)
	}
}

// hostileModel writes a llama model whose weights at tensor name are all
// v (NaN, an infinity, or a finite value large enough to overflow).
func hostileModel(t *testing.T, dir, file, name string, v float32) {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 32, Layers: 1, Heads: 2, FFN: 64, Vocab: 600, Context: 64, Type: quant.F32})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	out := gguf.NewWriter()
	for _, kv := range f.KV {
		out.MustSet(kv.Key, kv.Value.V)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := append([]byte(nil), f.TensorData(ti)...)
		if ti.Name == name {
			for j := 0; j+4 <= len(data); j += 4 {
				binary.LittleEndian.PutUint32(data[j:], math.Float32bits(v))
			}
		}
		if err := out.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.WriteFile(filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

// Finding 2: a model whose weights hold NaN is refused when it is asked
// for, naming the tensor; one whose finite weights overflow answers every
// page, a room and the API with an error naming where, never a 500 or a
// NaN in JSON, and the server stays up.
func TestReliabilityNonFiniteModels(t *testing.T) {
	dir := t.TempDir()
	hostileModel(t, dir, "nan.gguf", "blk.0.ffn_down.weight", float32(math.NaN()))
	hostileModel(t, dir, "huge.gguf", "output_norm.weight", 3e38)
	a := newAbuseServer(t, Config{ModelsDirs: []string{dir}})
	for _, c := range []struct{ file, want string }{
		{"nan.gguf", "tensor blk.0.ffn_down.weight holds a NaN"},
		{"huge.gguf", "the final norm and output projection first produced"},
	} {
		q := url.Values{"prompt": {"Once upon a time"}, "model": {c.file}}.Encode()
		for _, path := range []string{"/?" + q, "/export.svg?" + q, "/compare.json?" + q + "&n=3&lane=greedy&lane=beam=2"} {
			status, b := getPage(t, a.ts.URL+path)
			if status >= 500 || strings.Contains(b, "NaN,") || !strings.Contains(b, c.want) {
				t.Errorf("%s: GET %.40s: %d, want an error saying %q: %.300s", c.file, path, status, c.want, b)
			}
		}
		// the model is unusable, not the server broken: 503, naming it and why
		status, b, _ := a.apiPost(t, "/v1/completions", `{"model":"`+c.file+`","prompt":"Once upon a time","max_tokens":3,"logprobs":2}`, "192.0.2.9", nil)
		if status != http.StatusServiceUnavailable || !strings.Contains(b, `"model_unavailable"`) || !strings.Contains(b, c.file) || strings.Contains(b, "unsupported value") {
			t.Errorf("%s: the API answered %d %.300s, want 503 model_unavailable naming the model", c.file, status, b)
		}
		req, _ := http.NewRequest("POST", a.ts.URL+"/rooms", strings.NewReader(url.Values{"explorer": {"/?" + q}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther || resp.StatusCode >= 500 {
			t.Errorf("%s: a room on the model: %s, want it refused", c.file, resp.Status)
		}
	}
	if status, _ := getPage(t, a.ts.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz: %d", status)
	}
}
