//go:build !arm64

package cpu

// levelNames names the levels for LevelEnv, lowest first.
var levelNames = []string{"generic", "avx2", "avx512"}
