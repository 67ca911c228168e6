package cpu

// levelNames names the levels for LevelEnv, lowest first: on arm64 the
// portable kernels, NEON (Advanced SIMD, which every arm64 CPU has) and
// NEON with the dot-product instructions (SDOT, ARMv8.2's optional
// DotProd: Apple M1 and later, Cortex-A76 and later, Graviton 2 and later).
var levelNames = []string{"generic", "neon", "dotprod"}

// The arm64 levels by name.
const (
	levelNEON    = levelAVX2
	levelDotProd = levelAVX512
)
