//go:build !purego

#include "textflag.h"
#include "q4kscales_amd64.h"

// X4_POINTERS stores the four vectors' q, bs and d pointers (vector 0's
// in DI, DX and R14; CX blocks each) in the frame slots Q, B and D.
#define X4_POINTERS(Q, B, D) \
	MOVQ CX, AX \
	SHLQ $8, AX \
	MOVQ DI, Q(0) \
	ADDQ AX, DI \
	MOVQ DI, Q(1) \
	ADDQ AX, DI \
	MOVQ DI, Q(2) \
	ADDQ AX, DI \
	MOVQ DI, Q(3) \
	MOVQ CX, AX \
	SHLQ $5, AX \
	MOVQ DX, B(0) \
	ADDQ AX, DX \
	MOVQ DX, B(1) \
	ADDQ AX, DX \
	MOVQ DX, B(2) \
	ADDQ AX, DX \
	MOVQ DX, B(3) \
	MOVQ CX, AX \
	SHLQ $2, AX \
	MOVQ R14, D(0) \
	ADDQ AX, R14 \
	MOVQ R14, D(1) \
	ADDQ AX, R14 \
	MOVQ R14, D(2) \
	ADDQ AX, R14 \
	MOVQ R14, D(3)

// X4_ADVANCE moves the four vectors' pointers to their next block.
#define X4_ADVANCE(Q, B, D) \
	ADDQ $256, Q(0) \
	ADDQ $256, Q(1) \
	ADDQ $256, Q(2) \
	ADDQ $256, Q(3) \
	ADDQ $32, B(0) \
	ADDQ $32, B(1) \
	ADDQ $32, B(2) \
	ADDQ $32, B(3) \
	ADDQ $4, D(0) \
	ADDQ $4, D(1) \
	ADDQ $4, D(2) \
	ADDQ $4, D(3)

// The Q4_K product for four vectors at once (AVX-512 VL, BW and VNNI,
// 256-bit registers): each block's scales, mins and nibbles are unpacked
// once for the four, each vector's int8 x multiplies them (VPMADDUBSW) and
// the scales are applied in the same instruction that adds (VPDPWSSD).
// Every vector's result is dotQ4_KQ8AVX2's, bit for bit: the same integer
// sums, and the same float products, fused multiply-adds and reduction in
// the same order.

// the stack frame: 0 the 8 scales as int16; 16, 48, 80: the four vectors'
// q, bs and d pointers (advanced a block at a time)
#define QP(V) (16+8*V)(SP)
#define BP(V) (48+8*V)(SP)
#define DP(V) (80+8*V)(SP)

// X4_MINS adds vector V's mins term, dmin·dx·Σ_j m_j·(Σ qx over sub-block
// j), to ACC (Y3: the mins as int32, Y11: dmin).
#define X4_MINS(V, ACC) \
	MOVQ BP(V), AX \
	VMOVDQU (AX), Y2 \
	VPMADDWD Y12, Y2, Y2 \
	VPMULLD Y3, Y2, Y2 \
	VCVTDQ2PS Y2, Y2 \
	MOVQ DP(V), AX \
	VBROADCASTSS (AX), Y14 \
	VMULPS Y14, Y11, Y9 \
	VFMADD231PS Y2, Y9, ACC

// X4_PAIR multiplies sub-block pair P's nibbles (Y5 low, Y6 high) with
// vector V's x at R and adds Σ sc·(q·qx) to its int32 lanes in A.
#define X4_PAIR(P, R, A, SLO, SHI) \
	VPMADDUBSW (P*64)(R), Y5, Y9 \
	VPMADDUBSW (P*64+32)(R), Y6, Y14 \
	VPDPWSSD SLO, Y9, A \
	VPDPWSSD SHI, Y14, A

#define X4_PAIRS(P, SLO, SHI) \
	VMOVDQU (P*32)(BX), Y5 \
	VPSRLW  $4, Y5, Y6 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y13, Y6, Y6 \
	X4_PAIR(P, R9, Y1, SLO, SHI) \
	X4_PAIR(P, R10, Y4, SLO, SHI) \
	X4_PAIR(P, R11, Y7, SLO, SHI) \
	X4_PAIR(P, R12, Y8, SLO, SHI)

// X4_SCALE adds vector V's int32 sums A times d·dx to ACC (Y10: d).
#define X4_SCALE(V, A, ACC) \
	VCVTDQ2PS A, A \
	MOVQ DP(V), AX \
	VBROADCASTSS (AX), Y14 \
	VMULPS Y14, Y10, Y9 \
	VFMADD231PS A, Y9, ACC

// X4_OUT writes SUM − MINS, its lanes added, to out[V].
#define X4_OUT(V, SUM, MINS) \
	VSUBPS MINS, SUM, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0 \
	MOVSS X0, (4*V)(DI)

// func dotQ4_KQ8x4VNNI(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32, out *float32)
// Four vectors quantized to int8 blocks of 256, one after another in q,
// bs and d (each blocks long), times a row of Q4_K blocks: out[v] is
// dotQ4_KQ8AVX2 of vector v.
TEXT ·dotQ4_KQ8x4VNNI(SB), NOSPLIT, $112-56
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R14
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	X4_POINTERS(QP, BP, DP)
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	VPXORD Y28, Y28, Y28
	VPXORD Y29, Y29, Y29
	VPXORD Y30, Y30, Y30
	VPXORD Y31, Y31, Y31
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00010001, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

x4block:
	CMPQ CX, $0
	JE   x4reduce
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	MOVWLZX 2(SI), AX
	VBROADCASTSS (R8)(AX*4), Y11
	Q4K_SCALES
	VMOVQ R9, X1
	VPMOVZXBW X1, X1
	VMOVDQU X1, 0(SP)        // the 8 scales as int16
	VMOVQ R13, X3
	VPMOVZXBD X3, Y3         // the 8 mins as int32
	VPBROADCASTW 0(SP), Y16
	VPBROADCASTW 2(SP), Y17
	VPBROADCASTW 4(SP), Y18
	VPBROADCASTW 6(SP), Y19
	VPBROADCASTW 8(SP), Y20
	VPBROADCASTW 10(SP), Y21
	VPBROADCASTW 12(SP), Y22
	VPBROADCASTW 14(SP), Y23
	X4_MINS(0, Y28)
	X4_MINS(1, Y29)
	X4_MINS(2, Y30)
	X4_MINS(3, Y31)
	VPXOR Y1, Y1, Y1
	VPXOR Y4, Y4, Y4
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	MOVQ QP(0), R9
	MOVQ QP(1), R10
	MOVQ QP(2), R11
	MOVQ QP(3), R12
	LEAQ 16(SI), BX
	X4_PAIRS(0, Y16, Y17)
	X4_PAIRS(1, Y18, Y19)
	X4_PAIRS(2, Y20, Y21)
	X4_PAIRS(3, Y22, Y23)
	X4_SCALE(0, Y1, Y24)
	X4_SCALE(1, Y4, Y25)
	X4_SCALE(2, Y7, Y26)
	X4_SCALE(3, Y8, Y27)
	ADDQ $144, SI
	X4_ADVANCE(QP, BP, DP)
	DECQ CX
	JMP  x4block

x4reduce:
	MOVQ out+48(FP), DI
	X4_OUT(0, Y24, Y28)
	X4_OUT(1, Y25, Y29)
	X4_OUT(2, Y26, Y30)
	X4_OUT(3, Y27, Y31)
	VZEROUPPER
	RET

// The Q6_K product for four vectors at once, as dotQ6_KQ8AVX2 computes
// each: a block's 16 scales and its six-bit values unpacked once for the
// four. Stack frame: 0 the 16 scales as int16; 32, 64, 96: the vectors' q,
// bs and d pointers.
#define Q6P(V) (32+8*V)(SP)
#define Q6B(V) (64+8*V)(SP)
#define Q6D(V) (96+8*V)(SP)

// X6_OFFSET starts vector V's int32 sums A at −32·Σ sc·(Σ qx) (Y15: the
// scales).
#define X6_OFFSET(V, A) \
	MOVQ Q6B(V), AX \
	VPMADDWD (AX), Y15, Y0 \
	VPSLLD $5, Y0, Y0 \
	VPXORD A, A, A \
	VPSUBD Y0, A, A

// X6_QUARTER multiplies the quarter's 32 values (Y5) with each vector's
// x at XO and adds sc·(q·qx) per 16 values (SV: the scales as int16, the
// low 16 lanes one scale, the high 16 the next).
#define X6_QUARTER(XO, SV) \
	VPMADDUBSW XO(R9), Y5, Y9 \
	VPDPWSSD SV, Y9, Y28 \
	VPMADDUBSW XO(R10), Y5, Y9 \
	VPDPWSSD SV, Y9, Y29 \
	VPMADDUBSW XO(R11), Y5, Y9 \
	VPDPWSSD SV, Y9, Y30 \
	VPMADDUBSW XO(R12), Y5, Y9 \
	VPDPWSSD SV, Y9, Y31

// X6_SCALES builds the scale vector of the quarter at scale offset SO.
#define X6_SCALES(SO, SV) \
	VPBROADCASTW SO(SP), X6 \
	VPBROADCASTW SO+2(SP), X7 \
	VINSERTI128 $1, X7, Y6, Y6 \
	VMOVDQA64 Y6, SV

// X6_HALF does the 128 values of half H of a Q6_K block for the four.
#define X6_HALF(H, S0, S1, S2, S3) \
	VMOVDQU (64*H)(SI), Y1 \
	VMOVDQU (64*H+32)(SI), Y2 \
	VMOVDQU (128+32*H)(SI), Y3 \
	VPAND   Y13, Y1, Y5 \
	VPSLLW  $4, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	X6_QUARTER(128*H, S0) \
	VPAND   Y13, Y2, Y5 \
	VPSLLW  $2, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	X6_QUARTER(128*H+32, S1) \
	VPSRLW  $4, Y1, Y5 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y11, Y3, Y8 \
	VPOR    Y8, Y5, Y5 \
	X6_QUARTER(128*H+64, S2) \
	VPSRLW  $4, Y2, Y5 \
	VPAND   Y13, Y5, Y5 \
	VPSRLW  $2, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	X6_QUARTER(128*H+96, S3)

// X6_SCALE adds vector V's int32 sums A times d·dx to ACC (Y10: d).
#define X6_SCALE(V, A, ACC) \
	VCVTDQ2PS A, A \
	MOVQ Q6D(V), AX \
	VBROADCASTSS (AX), Y14 \
	VMULPS Y14, Y10, Y9 \
	VFMADD231PS A, Y9, ACC

// X6_OUT writes SUM's lanes added to out[V].
#define X6_OUT(V, SUM) \
	VMOVAPS SUM, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0 \
	MOVSS X0, (4*V)(DI)

// func dotQ6_KQ8x4VNNI(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32, out *float32)
// Four vectors quantized to int8 blocks of 256, one after another in q,
// bs and d, times a row of Q6_K blocks: out[v] is dotQ6_KQ8AVX2 of
// vector v, bit for bit.
TEXT ·dotQ6_KQ8x4VNNI(SB), NOSPLIT, $128-56
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R14
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	X4_POINTERS(Q6P, Q6B, Q6D)
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x30303030, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11

x6block:
	CMPQ CX, $0
	JE   x6reduce
	MOVWLZX 208(SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	VPMOVSXBW 192(SI), Y15   // the 16 scales as int16
	VMOVDQU Y15, 0(SP)
	X6_OFFSET(0, Y28)
	X6_OFFSET(1, Y29)
	X6_OFFSET(2, Y30)
	X6_OFFSET(3, Y31)
	X6_SCALES(0, Y16)
	X6_SCALES(4, Y17)
	X6_SCALES(8, Y18)
	X6_SCALES(12, Y19)
	X6_SCALES(16, Y20)
	X6_SCALES(20, Y21)
	X6_SCALES(24, Y22)
	X6_SCALES(28, Y23)
	MOVQ Q6P(0), R9
	MOVQ Q6P(1), R10
	MOVQ Q6P(2), R11
	MOVQ Q6P(3), R12
	X6_HALF(0, Y16, Y17, Y18, Y19)
	X6_HALF(1, Y20, Y21, Y22, Y23)
	X6_SCALE(0, Y28, Y24)
	X6_SCALE(1, Y29, Y25)
	X6_SCALE(2, Y30, Y26)
	X6_SCALE(3, Y31, Y27)
	ADDQ $210, SI
	X4_ADVANCE(Q6P, Q6B, Q6D)
	DECQ CX
	JMP  x6block

x6reduce:
	MOVQ out+48(FP), DI
	X6_OUT(0, Y24)
	X6_OUT(1, Y25)
	X6_OUT(2, Y26)
	X6_OUT(3, Y27)
	VZEROUPPER
	RET
