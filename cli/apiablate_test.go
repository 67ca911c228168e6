package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/models"
	"stepthrough/server"
)

// An intervention through the API's "stepthrough" extension gives the
// logits `logits --ablate` writes: the completion's first token and its
// top log-probabilities are the CLI's last row's, for heads, an MLP and
// a scaled head; the same intervention left out gives other numbers.
func TestAPIAblateEqualsCLI(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lesson.gguf")
	if err := os.WriteFile(path, models.Lesson, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := server.New(server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	const prompt = "Once upon a time"
	for _, ablate := range []string{"L1H2", "L2mlp;L3H1", "L4H5*0.5"} {
		t.Run(ablate, func(t *testing.T) {
			cli := lastLogprobs(t, path, prompt, dir, "--ablate", ablate)
			plain := lastLogprobs(t, path, prompt, dir)
			top, chosen := apiLogprobs(t, ts.URL, prompt, ablate)
			ids := map[string]int32{}
			for _, id := range sample.TopN(cli, 5) {
				ids[m.Tokenizer.Display(id)] = id
			}
			if len(top) != 5 || len(ids) != 5 {
				t.Fatalf("the API's top %v, the CLI's %v", top, ids)
			}
			moved := false
			for text, lp := range top {
				id, ok := ids[text]
				// to float32's rounding of the logits (a log-probability near
				// −12 is a few units of 1e-6 apart when the API's prompt
				// reaches its last position in another batch than the CLI's:
				// on an AVX2-only CPU 2.4e-6), far below an ablation's 1e-4
				if !ok || math.Abs(lp-cli[id]) > 1e-6*max(1, math.Abs(lp)) {
					t.Errorf("%q: the API's logprob %g, the CLI's %g (in its top 5: %v)", text, lp, cli[id], ok)
				}
				moved = moved || math.Abs(lp-plain[id]) > 1e-4
			}
			if first := sample.TopN(cli, 1)[0]; chosen != m.Tokenizer.Display(first) {
				t.Errorf("the API chose %q greedily, the CLI's logits %q", chosen, m.Tokenizer.Display(first))
			}
			if !moved {
				t.Errorf("%s changed none of the top log-probabilities", ablate)
			}
		})
	}
}

// lastLogprobs runs `logits --out` and returns the last position's
// log-probabilities.
func lastLogprobs(t *testing.T, path, prompt, dir string, args ...string) []float64 {
	t.Helper()
	out := filepath.Join(dir, "logits.bin")
	if _, errOut, code := run(t, append([]string{"logits", "--model", path, "--prompt", prompt, "--out", out}, args...)...); code != 0 {
		t.Fatalf("logits %v: %s", args, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]float32, len(b)/4)
	if err := binary.Read(bytes.NewReader(b), binary.LittleEndian, all); err != nil {
		t.Fatal(err)
	}
	vocab := 1024 // the lesson model's
	row := all[len(all)-vocab:]
	lse := sample.LogSumExp(row)
	lp := make([]float64, vocab)
	for i, x := range row {
		lp[i] = float64(x) - lse
	}
	return lp
}

// apiLogprobs asks /v1/completions for one greedy token with ablate in
// the extension, and returns its top log-probabilities and the token.
func apiLogprobs(t *testing.T, base, prompt, ablate string) (map[string]float64, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "lesson.gguf", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 5,
		"stepthrough": map[string]any{"ablate": ablate}})
	res, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r struct {
		Choices []struct {
			Logprobs struct {
				Tokens      []string             `json:"tokens"`
				TopLogprobs []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil || res.StatusCode != http.StatusOK || len(r.Choices) != 1 || len(r.Choices[0].Logprobs.Tokens) != 1 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	return r.Choices[0].Logprobs.TopLogprobs[0], r.Choices[0].Logprobs.Tokens[0]
}
