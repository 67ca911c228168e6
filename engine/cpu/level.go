package cpu

import (
	"fmt"
	"os"
	"strings"
)

// The kernels are chosen once, at start, by the CPU's features. LevelEnv
// caps them at a lower vector level, so every level can be tested and
// measured on one machine (a machine with AVX-512 runs its AVX2 and
// portable kernels too) — as users' CPUs without AVX-512 run them:
//
//	STEPTHROUGH_CPU=generic   the portable Go kernels only
//	STEPTHROUGH_CPU=avx2      AVX2, FMA and F16C at most (no AVX-512, no VNNI)
//	STEPTHROUGH_CPU=avx512    everything the CPU has (the same as unset)
//
// and on arm64 (levelNames there):
//
//	STEPTHROUGH_CPU=generic   the portable Go kernels only
//	STEPTHROUGH_CPU=neon      NEON (Advanced SIMD) at most, without the dot-product instructions
//	STEPTHROUGH_CPU=dotprod   everything the CPU has (the same as unset)
//
// A value it does not know caps nothing, and Level says so.
const LevelEnv = "STEPTHROUGH_CPU"

// The levels, lowest first (on arm64 the two above generic are levelNEON
// and levelDotProd).
const (
	levelGeneric = iota
	levelAVX2
	levelAVX512
)

// levelCap is the highest level the kernels may use; levelBad the value
// of LevelEnv when it named no level.
var levelCap, levelBad = parseLevel(os.Getenv(LevelEnv))

func parseLevel(v string) (int, string) {
	if v == "" {
		return levelAVX512, ""
	}
	for i, name := range levelNames {
		if strings.EqualFold(v, name) {
			return i, ""
		}
	}
	return levelAVX512, v
}

// allows reports whether kernels of the level may run (the CPU must also
// have it).
func allows(level int) bool { return levelCap >= level }

// Level names the vector level the kernels use here: the CPU's features as
// LevelEnv caps them ("avx512+vnni", "avx512", "avx2" or "generic"; on
// arm64 "neon+dotprod", "neon" or "generic").
func Level() string {
	s := kernelLevel()
	if levelBad != "" {
		last := len(levelNames) - 1
		s += fmt.Sprintf(" (%s=%q is not a level: write %s or %s)", LevelEnv, levelBad, strings.Join(levelNames[:last], ", "), levelNames[last])
	} else if levelCap < levelAVX512 {
		s += fmt.Sprintf(" (capped by %s)", LevelEnv)
	}
	return s
}
