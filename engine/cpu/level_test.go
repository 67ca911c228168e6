package cpu

import (
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		bad  string
	}{
		{"", levelAVX512, ""},
		{levelNames[levelGeneric], levelGeneric, ""},
		{strings.ToUpper(levelNames[levelAVX2]), levelAVX2, ""}, // AVX2, NEON on arm64
		{levelNames[levelAVX512], levelAVX512, ""},
		{"sse4", levelAVX512, "sse4"},
	} {
		if got, bad := parseLevel(c.in); got != c.want || bad != c.bad {
			t.Errorf("parseLevel(%q) = %d, %q; want %d, %q", c.in, got, bad, c.want, c.bad)
		}
	}
}

// Level names what runs, within the cap: CI runs this package under each
// STEPTHROUGH_CPU value, so the cap is checked where it is set.
func TestLevelWithinCap(t *testing.T) {
	got := Level()
	order := map[string]int{"generic": levelGeneric, "avx2": levelAVX2, "avx512": levelAVX512, "avx512+vnni": levelAVX512,
		"neon": levelAVX2, "neon+dotprod": levelAVX512}
	name, _, _ := strings.Cut(got, " ")
	lv, ok := order[name]
	if !ok || lv > levelCap {
		t.Errorf("Level() = %q with the cap at %s", got, levelNames[levelCap])
	}
	if levelCap < levelAVX512 && !strings.Contains(got, "capped by "+LevelEnv) {
		t.Errorf("Level() = %q does not say it is capped", got)
	}
	t.Logf("kernels: %s", got)
}
