package present

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/views"
)

// The data equivalents stay within a step's 30 KB on a 151,936-token
// vocabulary (Qwen's) and a long prompt: the softmax, sample, KV, embed,
// logits and MLP steps, whose tables grow with the vocabulary or the
// prompt, fit; the attention step's table keeps to its bounds (its
// other pictures grow with the prompt's square and are logged).
func TestStepFragmentsOnAWideVocabulary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: synthesizes a 40 MB model")
	}
	w, err := model.Synthesize(model.SynthOptions{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 151936, Context: 512, Tied: true, Type: quant.F32, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := w.WriteFile(filepath.Join(dir, "wide.gguf")); err != nil {
		t.Fatal(err)
	}
	reg := registry.New([]string{dir})
	t.Cleanup(reg.Close)
	se := session.New("sizes", "", reg)
	defer se.Close()
	r := run(strings.Repeat("Once upon a time there was a little girl who lived in a village near the forest. ", 3))
	r.Model = "wide.gguf"
	if err := se.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	fits := map[string]bool{"softmax": true, "sample": true, "kv": true, "embed": true, "logits": true, "mlp": true}
	var log []string
	for range 200 {
		e := Explorer(se)
		if e.Step > 1 || e.End {
			break
		}
		var b bytes.Buffer
		if err := views.ExplorerView(e).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		kb := float64(b.Len()) / 1024
		if fits[e.Current.Name] && kb > 30 {
			t.Errorf("token step %d, %s: a %.1f KB fragment, over the 30 KB budget", e.Step, e.Current.Label, kb)
		}
		if a, ok := e.Panel.(*views.AttentionPanel); ok {
			doc, err := goquery.NewDocumentFromReader(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			rows := doc.Find(`[data-testid="attn-row"]`)
			if n, cells := rows.Length(), rows.Find("td").Length(); n == 0 || n > len(a.Cells) || cells > 1000 {
				t.Errorf("token step %d, %s: a table of %d rows, %d cells, for %d query rows", e.Step, e.Current.Label, n, cells, len(a.Cells))
			}
		}
		log = append(log, fmt.Sprintf("%s %.1f", e.Current.Label, kb))
		if err := se.Act(context.Background(), "step", nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("fragments (KB): %s", strings.Join(log, ", "))
}
