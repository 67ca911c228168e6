package present

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/trace"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/views"
)

// Every family steps through every stage of the Explorer: each stage has
// a panel and a label, the view renders, and the model map names the
// family's differences.
func TestFamiliesStepThroughEveryStage(t *testing.T) {
	dir := t.TempDir()
	shapes := []model.SynthOptions{
		{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 128, Tied: true},
		{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 128},
		{Arch: "gemma2", Embd: 64, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 128, Tied: true, Window: 4},
		{Arch: "gemma3", Embd: 64, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 128, Tied: true, Window: 4, SWAPeriod: 3, FinalSoftcap: 30, RopeBase: 1e6},
		{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, FFN: 96, Vocab: 700, Context: 128, FusedQKV: true},
	}
	for _, o := range shapes {
		o.Type = quant.F32
		w, err := model.Synthesize(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(filepath.Join(dir, o.Arch+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New([]string{dir})
	t.Cleanup(reg.Close)
	for _, o := range shapes {
		t.Run(o.Arch, func(t *testing.T) {
			se := session.New("s", "", reg)
			defer se.Close()
			r := run("the little cat saw a big red ball and the dog")
			r.Model = o.Arch + ".gguf"
			if err := se.Run(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			checkFamilyMap(t, o, Explorer(se).Map)
			seen := map[string]bool{}
			for i := 0; i < 200; i++ {
				e := Explorer(se)
				if e.Panel == nil || e.Current.Label == "" {
					t.Fatalf("stage %+v: no panel or label", e.Current)
				}
				var b bytes.Buffer
				if err := views.ExplorerView(e).Render(context.Background(), &b); err != nil {
					t.Fatalf("stage %s: render: %v", e.Current.Name, err)
				}
				seen[e.Current.Name] = true
				if e.Step > 1 || e.End {
					break
				}
				if err := se.Act(context.Background(), "step", nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range []trace.Kind{trace.StageTokenize, trace.StageEmbed, trace.StageAttention, trace.StageMLP, trace.StageLogits,
				trace.StageSoftmax, trace.StageSampler, trace.StageSample, trace.StageKV} {
				if !seen[string(k)] {
					t.Errorf("no %s stage", k)
				}
			}
		})
	}
}

// checkFamilyMap: the map lists the family's differences with their
// reasons, marks local layers, and names the MLP and score it computes.
func checkFamilyMap(t *testing.T, o model.SynthOptions, m *views.ModelMap) {
	t.Helper()
	keys := map[string]bool{}
	for _, f := range m.Family {
		if f.Name == "" || f.Why == "" {
			t.Errorf("feature %+v without a name or a reason", f)
		}
		keys[f.Key] = true
	}
	want := map[string][]string{
		"qwen2": {"qkv-bias", "neox-rope", "tied-output"}, "qwen3": {"qk-norm", "head-size"},
		"gemma2": {"embed-scale", "post-norms", "geglu", "sliding-window", "attn-softcap", "final-softcap"},
		"gemma3": {"embed-scale", "qk-norm", "post-norms", "geglu", "sliding-window", "local-rope", "final-softcap"},
		"phi3":   {"fused-qkv", "fused-gate-up"},
	}[o.Arch]
	for _, k := range want {
		if !keys[k] {
			t.Errorf("the map lists %v; want %s", keys, k)
		}
	}
	var b bytes.Buffer
	if err := views.ModelMapView(m).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	locals := strings.Count(html, `class="part local"`)
	if o.Window > 0 && (locals == 0 || locals >= o.Layers) || o.Window == 0 && locals > 0 {
		t.Errorf("%d local layers drawn of %d (window %d)", locals, o.Layers, o.Window)
	}
	if strings.HasPrefix(o.Arch, "gemma") && !strings.Contains(html, "GeGLU") {
		t.Error("the map does not name gemma's GeGLU")
	}
	if o.Arch == "gemma2" && !strings.Contains(m.Score, "tanh") {
		t.Errorf("gemma2's score %q does not show the soft cap", m.Score)
	}
}
