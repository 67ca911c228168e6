package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An offered model whose file is broken: the API answers 503
// model_unavailable naming the model, and no page or API answer shows the
// file's path on the server.
func TestBrokenModelNamedNotPathed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("GGUF\x03\x00\x00\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(mustNew(t, Config{ModelsDirs: []string{dir}, Embedded: lessonModels()}).Handler())
	t.Cleanup(ts.Close)
	type apiAnswer struct {
		Status  int
		Type    string
		Code    string
		Param   string
		Message string
	}
	const msg = `The model "broken.gguf" is offered but cannot be loaded (model broken.gguf failed to load: broken.gguf: gguf: at byte 8: file ends inside tensor count (needs 8 bytes, 7 left)): choose another model`
	for _, tt := range []struct {
		name, path, body string
		want             apiAnswer
	}{
		{"chat", "/v1/chat/completions", `{"model":"broken.gguf","messages":[{"role":"user","content":"hi"}]}`,
			apiAnswer{http.StatusServiceUnavailable, "model_unavailable", "model_unavailable", "model", msg}},
		{"completions", "/v1/completions", `{"model":"broken.gguf","prompt":"hi"}`,
			apiAnswer{http.StatusServiceUnavailable, "model_unavailable", "model_unavailable", "model", msg}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(ts.URL+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct {
					Message, Type string
					Code, Param   *string
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			got := apiAnswer{resp.StatusCode, e.Type, deref(e.Code), deref(e.Param), e.Message}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("patching page", func(t *testing.T) {
		resp, err := http.Get(ts.URL + "/patching?" + url.Values{"model": {"broken.gguf"}, "clean": {"a b"}, "corrupt": {"a c"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if page := string(b); strings.Contains(page, dir) || !strings.Contains(page, "model broken.gguf failed to load") {
			t.Errorf("the page shows the path %s or does not name broken.gguf:\n%s", dir, page)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
