package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"testing"
)

// Finding 6: the API's prefix cache confirmed other clients' prompts
// (a right guess of another client's prompt came back with more
// cached_tokens than a wrong one). Now a prompt's cached blocks are found
// only from its own scope: without a key, the same address; with one,
// anyone holding the key, from any address; a cache_salt narrows either.
// Each step asks the same long prompt and says whose blocks it should
// find.
func TestAPIPrefixCacheScoped(t *testing.T) {
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	type ask struct {
		name, from, salt string
		hit              bool // reads the prompt's full blocks from the cache
	}
	for _, tc := range []struct {
		name string
		key  string
		asks []ask
	}{
		{"no key: each address its own", "", []ask{
			{"A first", "10.0.0.1", "", false},
			{"B, the same prompt", "10.0.0.2", "", false},
			{"A again", "10.0.0.1", "", true},
			{"A with a salt", "10.0.0.1", "lab 1", false},
			{"B again finds its own", "10.0.0.2", "", true},
			{"A with the salt again", "10.0.0.1", "lab 1", true},
			{"B with A's salt", "10.0.0.2", "lab 1", false},
		}},
		{"one key: its holders share", "k-123", []ask{
			{"A first", "10.0.0.1", "", false},
			{"B with the key", "10.0.0.2", "", true},
			{"B with a salt", "10.0.0.2", "lab 1", false},
			{"A with the salt", "10.0.0.1", "lab 1", true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base, _ := apiServerOf(t, Config{TrustedProxies: []*net.IPNet{loop}, API: APIConfig{Key: tc.key}})
			for _, a := range tc.asks {
				prompt, cached := scopedAsk(t, base, tc.key, a.from, a.salt)
				want := 0
				if a.hit {
					want = (prompt - 1) / apiBlockSize * apiBlockSize // the last prompt token is always computed
				}
				if cached != want {
					t.Errorf("%s: cached_tokens %d of %d, want %d", a.name, cached, prompt, want)
				}
			}
		})
	}
}

// scopedAsk sends the long prompt as a client at address from (with the
// key and cache_salt when not empty) and returns the usage's prompt and
// cached tokens.
func scopedAsk(t *testing.T, base, key, from, salt string) (prompt, cached int) {
	t.Helper()
	body := map[string]any{"model": "lesson.gguf", "temperature": 0, "max_tokens": 2, "messages": []any{
		map[string]any{"role": "system", "content": "You are a helpful assistant for a class of students. Answer in one short sentence, and be kind, clear and exact. Never make up facts."},
		map[string]any{"role": "user", "content": "What is the capital of France?"}}}
	if salt != "" {
		body["cache_salt"] = salt
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", from)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s from %s: %s, %v", base, from, resp.Status, err)
	}
	return out.Usage.PromptTokens, out.Usage.PromptTokensDetails.CachedTokens
}
