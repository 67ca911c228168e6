//go:build !purego

#include "textflag.h"

// R16_GROUP adds group G of the tile's block (Z_G: sixteen rows' four
// values, unsigned) times each of the eight vectors' group G (broadcast
// from the x record at DI) to their sums Z24–Z31.
#define R16_GROUP(G, W) \
	VPDPBUSD.BCST (0+4*G)(DI), W, Z24 \
	VPDPBUSD.BCST (32+4*G)(DI), W, Z25 \
	VPDPBUSD.BCST (64+4*G)(DI), W, Z26 \
	VPDPBUSD.BCST (96+4*G)(DI), W, Z27 \
	VPDPBUSD.BCST (128+4*G)(DI), W, Z28 \
	VPDPBUSD.BCST (160+4*G)(DI), W, Z29 \
	VPDPBUSD.BCST (192+4*G)(DI), W, Z30 \
	VPDPBUSD.BCST (224+4*G)(DI), W, Z31

// R16_FUSE fuses vector V's block sum S into its sixteen rows' results
// ACC: ACC = fma(S, d_w·d_x, ACC) (Z8: the rows' d_w; Z9: scratch).
#define R16_FUSE(V, S, ACC) \
	VCVTDQ2PS S, S \
	VMULPS.BCST (288+4*V)(DI), Z8, Z9 \
	VFMADD231PS S, Z9, ACC

// R16_STORE writes vector V−1's sixteen results Z to DI and moves DI on
// by AX, unless it was vector CX−1, the last one.
#define R16_STORE(Z, V) \
	VMOVUPS Z, (DI) \
	CMPQ CX, $V \
	JEQ  r16done \
	ADDQ AX, DI

// func dotQ8_0R16v8VNNI(w *byte, blocks int, x *uint32, out *float32, ostride int, lanes int)
// A tile of sixteen Q8_0 rows (repackR16) times a group of eight vectors
// laid out by layR16Block: per block, each of the tile's eight groups of
// four values (sixteen rows' side by side, unsigned w+128) takes one
// VPDPBUSD per vector, the vector's four values broadcast from memory,
// from the vector's correction −128·Σ x; the block's sums then fuse into
// the rows' results as the lane kernel fuses them, fma(sum, d_w·d_x,
// acc), so each result is that kernel's bit for bit. The sixteen results
// for vector v go to byte v·ostride of out, for the first lanes vectors
// (lanes > 0).
TEXT ·dotQ8_0R16v8VNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ x+16(FP), DI
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

r16block:
	VMOVDQU32 0(SI), Z0
	VMOVDQU32 64(SI), Z1
	VMOVDQU32 128(SI), Z2
	VMOVDQU32 192(SI), Z3
	VMOVDQU32 256(SI), Z4
	VMOVDQU32 320(SI), Z5
	VMOVDQU32 384(SI), Z6
	VMOVDQU32 448(SI), Z7
	VCVTPH2PS 512(SI), Z8
	VPBROADCASTD 256(DI), Z24
	VPBROADCASTD 260(DI), Z25
	VPBROADCASTD 264(DI), Z26
	VPBROADCASTD 268(DI), Z27
	VPBROADCASTD 272(DI), Z28
	VPBROADCASTD 276(DI), Z29
	VPBROADCASTD 280(DI), Z30
	VPBROADCASTD 284(DI), Z31
	R16_GROUP(0, Z0)
	R16_GROUP(1, Z1)
	R16_GROUP(2, Z2)
	R16_GROUP(3, Z3)
	R16_GROUP(4, Z4)
	R16_GROUP(5, Z5)
	R16_GROUP(6, Z6)
	R16_GROUP(7, Z7)
	R16_FUSE(0, Z24, Z16)
	R16_FUSE(1, Z25, Z17)
	R16_FUSE(2, Z26, Z18)
	R16_FUSE(3, Z27, Z19)
	R16_FUSE(4, Z28, Z20)
	R16_FUSE(5, Z29, Z21)
	R16_FUSE(6, Z30, Z22)
	R16_FUSE(7, Z31, Z23)
	ADDQ $544, SI
	ADDQ $320, DI
	DECQ CX
	JNZ  r16block

	MOVQ out+24(FP), DI
	MOVQ ostride+32(FP), AX
	MOVQ lanes+40(FP), CX
	R16_STORE(Z16, 1)
	R16_STORE(Z17, 2)
	R16_STORE(Z18, 3)
	R16_STORE(Z19, 4)
	R16_STORE(Z20, 5)
	R16_STORE(Z21, 6)
	R16_STORE(Z22, 7)
	VMOVUPS Z23, (DI)

r16done:
	VZEROUPPER
	RET

// R16V1_GROUP adds group G of the tile's block (loaded into W: sixteen
// rows' four values, unsigned) times the vector's group G (broadcast
// from the x record at DI) to the sums S.
#define R16V1_GROUP(G, W, S) \
	VMOVDQU32 (64*G)(SI), W \
	VPDPBUSD.BCST (4*G)(DI), W, S

// func dotQ8_0R16v1VNNI(w *byte, blocks int, x *uint32, out *float32)
// A tile of sixteen Q8_0 rows (repackR16) times one vector laid out by
// layR16Block as lane 0 of a group: dotQ8_0R16v8VNNI for a single
// vector, which reads each weight once as that kernel does but spends one
// VPDPBUSD per group instead of eight. The block's integer sums run in two
// chains (groups 0, 2, 4, 6 from the vector's correction and 1, 3, 5, 7
// from zero) added before they fuse, fma(sum, d_w·d_x, acc), so the
// sixteen results (to out) are that kernel's bit for bit.
TEXT ·dotQ8_0R16v1VNNI(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ x+16(FP), DI
	VPXORD Z16, Z16, Z16

r16v1block:
	VPBROADCASTD 256(DI), Z24
	VPXORD Z25, Z25, Z25
	R16V1_GROUP(0, Z0, Z24)
	R16V1_GROUP(1, Z1, Z25)
	R16V1_GROUP(2, Z2, Z24)
	R16V1_GROUP(3, Z3, Z25)
	R16V1_GROUP(4, Z4, Z24)
	R16V1_GROUP(5, Z5, Z25)
	R16V1_GROUP(6, Z6, Z24)
	R16V1_GROUP(7, Z7, Z25)
	VCVTPH2PS 512(SI), Z8
	VPADDD Z25, Z24, Z24
	R16_FUSE(0, Z24, Z16)
	ADDQ $544, SI
	ADDQ $320, DI
	DECQ CX
	JNZ  r16v1block

	MOVQ out+24(FP), DI
	VMOVUPS Z16, (DI)
	VZEROUPPER
	RET
