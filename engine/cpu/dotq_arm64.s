//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"
#include "dotq_macros_arm64.h"

// The int8 dot kernels (dotq_arm64.h) twice: with SDOT (ARMv8.2
// DotProd) and with SMULL, SMLAL2 and SADALP, which every arm64 CPU has.
// The int16 products of two value pairs stay below 2^15: |w| ≤ 128 and
// |x| ≤ 127, so each pair sums to at most 32512.

// For Q5_0's high bits: the byte of the word each value's bit is in (the
// values 0–15, 16–31), and the bit in that byte.
DATA q5bits<>+0(SB)/8, $0x0000000000000000
DATA q5bits<>+8(SB)/8, $0x0101010101010101
DATA q5bits<>+16(SB)/8, $0x0202020202020202
DATA q5bits<>+24(SB)/8, $0x0303030303030303
DATA q5bits<>+32(SB)/8, $0x8040201008040201
DATA q5bits<>+40(SB)/8, $0x8040201008040201
GLOBL q5bits<>(SB), RODATA|NOPTR, $48

#define DOT16(acc, w, x, t) VSDOT(acc, w, x)
#define KQ80 ·dotQ8_0Q80SDOT(SB)
#define KQ40 ·dotQ4_0Q80SDOT(SB)
#define KQ50 ·dotQ5_0Q80SDOT(SB)
#define KQ4K ·dotQ4_KQ8SDOT(SB)
#define KQ5K ·dotQ5_KQ8SDOT(SB)
#define KQ6K ·dotQ6_KQ8SDOT(SB)
#include "dotq_arm64.h"
#undef DOT16
#undef KQ80
#undef KQ40
#undef KQ50
#undef KQ4K
#undef KQ5K
#undef KQ6K

#define DOT16(acc, w, x, t) \
	VSMULL8H(t, w, x) \
	VSMLAL28H(t, w, x) \
	VSADALP4S(acc, t)
#define KQ80 ·dotQ8_0Q80NEON(SB)
#define KQ40 ·dotQ4_0Q80NEON(SB)
#define KQ50 ·dotQ5_0Q80NEON(SB)
#define KQ4K ·dotQ4_KQ8NEON(SB)
#define KQ5K ·dotQ5_KQ8NEON(SB)
#define KQ6K ·dotQ6_KQ8NEON(SB)
#include "dotq_arm64.h"
