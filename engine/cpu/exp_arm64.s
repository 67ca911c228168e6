//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The exponential and the activations four values at a time, each step
// expf's (exp.go) as the Go compiler makes it on arm64 — the reduction
// and the polynomial in fused multiply-adds (FMLS, FMLA), n rounded to
// nearest even (FRINTN) — so every value is expf's bit for bit. The
// constants come from expConsts (exp_arm64.go), loaded by LOADCONSTS.

// LOADCONSTS puts the constants at R9 into V16–V27 (one a register, in
// every lane): expLo, expHi, log2 e, ln 2's high and low parts, the six
// coefficients, and 1 (whose bits are 127<<23, the exponent bias).
#define LOADCONSTS \
	VLD1.P 16(R9), [V16.S4] \
	VLD1.P 16(R9), [V20.S4] \
	VLD1.P 16(R9), [V24.S4] \
	VDUP   V16.S[1], V17.S4 \
	VDUP   V16.S[2], V18.S4 \
	VDUP   V16.S[3], V19.S4 \
	VDUP   V16.S[0], V16.S4 \
	VDUP   V20.S[1], V21.S4 \
	VDUP   V20.S[2], V22.S4 \
	VDUP   V20.S[3], V23.S4 \
	VDUP   V20.S[0], V20.S4 \
	VDUP   V24.S[1], V25.S4 \
	VDUP   V24.S[2], V26.S4 \
	VDUP   V24.S[3], V27.S4 \
	VDUP   V24.S[0], V24.S4

// EXP4 sets V(y) = e^V(x) lane by lane (n, k, p, q scratch; x kept): 0
// below expLo (−Inf too), NaN kept, e^expHi above expHi.
#define EXP4(x, y, n, k, p, q) \
	VFCMGE4S(k, x, 16) \
	VFMIN4S(y, x, 17) \
	VFMUL4S(n, y, 18) \
	VFRINTN4S(n, n) \
	VFMLS4S(y, n, 19) \
	VFMLS4S(y, n, 20) \
	VMOV16B(p, 22) \
	VFMLA4S(p, 21, y) \
	VMOV16B(q, 23) \
	VFMLA4S(q, p, y) \
	VMOV16B(p, 24) \
	VFMLA4S(p, q, y) \
	VMOV16B(q, 25) \
	VFMLA4S(q, p, y) \
	VMOV16B(p, 26) \
	VFMLA4S(p, q, y) \
	VFMUL4S(q, p, y) \
	VFMLA4S(y, q, y) \
	VFADD4S(y, y, 27) \
	VFCVTZS4S(n, n) \
	VSHL4S(n, n, 23) \
	VADD4S(n, n, 27) \
	VFMUL4S(y, y, n) \
	VAND16B(y, y, k) \
	VFCMEQ4S(k, x, x) \
	VBIF16B(y, x, k)

// func maxNEON(x *float32, n int) float32
// The largest of x's n values (n a multiple of 4), NaN if one is.
TEXT ·maxNEON(SB), NOSPLIT, $0-20
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	VLD1.P 16(R0), [V0.S4]
	SUBS $4, R1
	BEQ  maxdone

maxloop:
	VLD1.P 16(R0), [V1.S4]
	VFMAX4S(0, 0, 1)
	SUBS $4, R1
	BNE  maxloop

maxdone:
	FMAXV4S(0, 0)
	FMOVS F0, ret+16(FP)
	RET

// func scaleNEON(x *float32, n int, s float32)
// x[i] *= s for n values (a multiple of 4).
TEXT ·scaleNEON(SB), NOSPLIT, $0-20
	MOVD  x+0(FP), R0
	MOVD  n+8(FP), R1
	FMOVS s+16(FP), F1
	VDUP  V1.S[0], V1.S4
	MOVD  R0, R2

scaleloop:
	VLD1.P 16(R0), [V0.S4]
	VFMUL4S(0, 0, 1)
	VST1.P [V0.S4], 16(R2)
	SUBS $4, R1
	BNE  scaleloop
	RET

// func expSubNEON(x *float32, n int, s, m float32, c *float32) float32
// x[i] = e^(x[i]·s − m) for n values (a multiple of 4), the argument in
// float64 (its product exact, one rounding) as expSubGo computes it, and
// the sum of the results added in order, as expSubGo adds them.
TEXT ·expSubNEON(SB), NOSPLIT, $0-36
	MOVD  x+0(FP), R0
	MOVD  n+8(FP), R1
	FMOVS s+16(FP), F12
	FMOVS m+20(FP), F13
	MOVD  c+24(FP), R9
	LOADCONSTS
	FCVTSD F12, F12
	FCVTSD F13, F13
	VDUP   V12.D[0], V12.D2
	VDUP   V13.D[0], V13.D2
	FMOVS  ZR, F15
	MOVD   R0, R2

exploop:
	VLD1.P 16(R0), [V0.S4]
	VFCVTL2D(6, 0)
	VFCVTL22D(7, 0)
	VFMUL2D(6, 6, 12)
	VFMUL2D(7, 7, 12)
	VFSUB2D(6, 6, 13)
	VFSUB2D(7, 7, 13)
	VFCVTN2S(0, 6)
	VFCVTN24S(0, 7)
	EXP4(0, 1, 2, 3, 4, 5)
	VST1.P [V1.S4], 16(R2)
	FADDS F1, F15, F15
	VDUP  V1.S[1], V2.S4
	FADDS F2, F15, F15
	VDUP  V1.S[2], V2.S4
	FADDS F2, F15, F15
	VDUP  V1.S[3], V2.S4
	FADDS F2, F15, F15
	SUBS  $4, R1
	BNE   exploop
	FMOVS F15, ret+32(FP)
	RET

// func siluMulNEON(a, b *float32, n int, c *float32)
// a[i] = a[i]/(1 + e^−a[i]) · b[i] for n values (a multiple of 4), as
// siluMulGo.
TEXT ·siluMulNEON(SB), NOSPLIT, $0-32
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	MOVD c+24(FP), R9
	LOADCONSTS
	MOVD R0, R3

siluloop:
	VLD1.P 16(R0), [V6.S4]
	VLD1.P 16(R1), [V7.S4]
	VFNEG4S(0, 6)
	EXP4(0, 1, 2, 3, 4, 5)
	VFADD4S(1, 1, 27)
	VFDIV4S(6, 6, 1)
	VFMUL4S(6, 6, 7)
	VST1.P [V6.S4], 16(R3)
	SUBS $4, R2
	BNE  siluloop
	RET

// func geluNEON(a *float32, n int, c *float32)
// a[i] = GELU(a[i]) for n values (a multiple of 4), GELU's steps as the
// Go compiler makes them: u = c·(x + (0.044715·x·x)·x, fused), then
// x/(1 + e^(−2u)). c holds 0.044715, √(2/π) and −2 after expf's constants.
TEXT ·geluNEON(SB), NOSPLIT, $0-24
	MOVD a+0(FP), R0
	MOVD n+8(FP), R1
	MOVD c+16(FP), R9
	LOADCONSTS
	VLD1 (R9), [V28.S4]
	VDUP V28.S[1], V29.S4
	VDUP V28.S[2], V30.S4
	VDUP V28.S[0], V28.S4
	MOVD R0, R3

geluloop:
	VLD1.P 16(R0), [V6.S4]
	VFMUL4S(7, 28, 6)
	VFMUL4S(7, 6, 7)
	VMOV16B(8, 6)
	VFMLA4S(8, 7, 6)
	VFMUL4S(8, 8, 29)
	VFMUL4S(0, 30, 8)
	EXP4(0, 1, 2, 3, 4, 5)
	VFADD4S(1, 1, 27)
	VFDIV4S(6, 6, 1)
	VST1.P [V6.S4], 16(R3)
	SUBS $4, R1
	BNE  geluloop
	RET
