package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// quantlens prints one row per layer, each drift a finite relative error
// above 0 with a cosine near 1, and Q4_0 strays further than Q8_0.
func TestQuantLensCommand(t *testing.T) {
	mean := map[string]float64{}
	for _, typ := range []string{"Q8_0", "Q4_0"} {
		out, errOut, code := run(t, "quantlens", "--model", stories(t), "--type", typ, "--prompt", "Once upon a time there was a cat", "--json")
		if code != 0 {
			t.Fatalf("quantlens %s: %s", typ, errOut)
		}
		var r QuantLensResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Layers) != 5 || r.Tokens < 5 {
			t.Fatalf("%s: %d layers, %d tokens", typ, len(r.Layers), r.Tokens)
		}
		for _, l := range r.Layers {
			if !(l.AttnRelErr > 0 && l.MLPRelErr > 0 && l.MLPRelErr < 1 && l.Cosine > 0.5 && l.Cosine <= 1) || math.IsNaN(l.WorstJS) || l.LensAgree > l.Positions {
				t.Errorf("%s layer %d: %+v", typ, l.Layer, l)
			}
			mean[typ] += l.MLPRelErr / 5
		}
	}
	if mean["Q4_0"] <= mean["Q8_0"] {
		t.Errorf("mean relative error: Q4_0 %g, Q8_0 %g", mean["Q4_0"], mean["Q8_0"])
	}
	out, errOut, code := run(t, "quantlens", "--model", stories(t), "--type", "Q8_0")
	if code != 0 || !strings.Contains(out, "layer  attn rel.err") || !strings.Contains(out, "final: mean KL") {
		t.Errorf("table: exit %d, %q, %q", code, out, errOut)
	}
	for _, bad := range [][]string{{"--type", "Q3_Z"}, {"--prompt", strings.Repeat("once upon a time ", 100)}} {
		if _, errOut, code := run(t, append([]string{"quantlens", "--model", stories(t)}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
