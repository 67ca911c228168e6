//go:build !purego

#include "textflag.h"

// func dotQ8_0Q80AVX2(row *byte, q *int8, d *float32, blocks int, f16 *float32) float32
// A Q8_0 row (34-byte blocks: binary16 d, 32 int8) times x rounded to
// Q8_0 (q, one d per 32), as llama.cpp's AVX2 Q8_0·Q8_0 dot: |w|·(x·sign
// w) summed in pairs, then in fours, scaled by d_w·d_x into eight lanes.
// blocks > 0.
TEXT ·dotQ8_0Q80AVX2(SB), NOSPLIT, $0-44
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	VXORPS Y0, Y0, Y0
	MOVL $0x00010001, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8         // int16 ones

q8block:
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X14      // d_w
	VMULSS (DX), X14, X14       // · d_x
	VBROADCASTSS X14, Y14
	VMOVDQU 2(SI), Y1           // w
	VMOVDQU (DI), Y4            // x
	VPSIGNB Y1, Y1, Y5          // |w|
	VPSIGNB Y1, Y4, Y6          // x · sign w
	VPMADDUBSW Y6, Y5, Y5       // pairs, int16
	VPMADDWD Y8, Y5, Y5         // fours, int32
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y14, Y0
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q8block
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// The VNNI kernels read x in q80's laid-out form (q80.lay): per vector,
// for each pair of blocks a 192-byte record of the 64 int8 values, 16
// int32 corrections (−128 × the sum of each four values) and 16 float32
// scales (each block's d_x, eight times). The row's bytes go in as w+128
// (unsigned), so VPDPBUSD from the correction gives Σ w·x exactly in
// each lane of four. A pair of blocks fills one 512-bit register: lanes
// 0–7 the even block, 8–15 the odd one. An odd last block runs in the
// low half. Every vector's result is computed by the same instructions
// whether it comes alone or with three others, so they agree bit for bit.

// Q8_ROWPAIR loads a pair of blocks at R: ZW the 64 values + 128, ZD
// the scales d_w, eight lanes each (YW, YD: their low halves; YT a
// scratch; Z13: 0x80 bytes, R8: the binary16 table).
#define Q8_ROWPAIR(R, YW, ZW, YD, ZD, YT) \
	VMOVDQU32 2(R), YW \
	VINSERTI64X4 $1, 36(R), ZW, ZW \
	VPXORD Z13, ZW, ZW \
	MOVWLZX (R), AX \
	VBROADCASTSS (R8)(AX*4), YD \
	MOVWLZX 34(R), AX \
	VBROADCASTSS (R8)(AX*4), YT \
	VINSERTF64X4 $1, YT, ZD, ZD

// Q8_ROWVEC adds vector P's pair times a row's pair (ZW, ZD) to ACC (T,
// S: scratch).
#define Q8_ROWVEC(P, ZW, ZD, T, S, ACC) \
	VMOVDQU32 64(P), T \
	VPDPBUSD (P), ZW, T \
	VCVTDQ2PS T, T \
	VMULPS 128(P), ZD, S \
	VFMADD231PS T, S, ACC

// Q8_PAIR loads the pair of blocks at SI into Z1 and Z2.
#define Q8_PAIR Q8_ROWPAIR(SI, Y1, Z1, Y2, Z2, Y3)

// Q8_VEC adds vector P's pair to ACC (T, S: scratch).
#define Q8_VEC(P, T, S, ACC) Q8_ROWVEC(P, Z1, Z2, T, S, ACC)

// Q8_ROWLAST loads an odd last block at R into the low halves of ZW and
// ZD (their upper halves zero).
#define Q8_ROWLAST(R, YW, YD) \
	VMOVDQU32 2(R), YW \
	VPXORD Y13, YW, YW \
	MOVWLZX (R), AX \
	VBROADCASTSS (R8)(AX*4), YD

// Q8_ROWVECLAST adds vector P's last block times a row's (YW, YD) to
// ACC's low lanes: YT and YS are the low halves of ZT and ZS, whose upper
// halves the 256-bit forms clear, so the upper lanes add 0·0.
#define Q8_ROWVECLAST(P, YW, YD, YT, YS, ZT, ZS, ACC) \
	VMOVDQU32 64(P), YT \
	VPDPBUSD (P), YW, YT \
	VCVTDQ2PS YT, YT \
	VMULPS 128(P), YD, YS \
	VFMADD231PS ZT, ZS, ACC

// Q8_LAST and Q8_VECLAST: the same for the row at SI in Y1 and Y2.
#define Q8_LAST Q8_ROWLAST(SI, Y1, Y2)
#define Q8_VECLAST(P, YT, YS, ZT, ZS, ACC) Q8_ROWVECLAST(P, Y1, Y2, YT, YS, ZT, ZS, ACC)

// Q8_OUT writes ACC's 16 lanes, added as the AVX2 kernel adds its 8
// after folding the upper 8 onto the lower, to out[V] (DI: out).
#define Q8_OUT(V, ACC, YACC) \
	VEXTRACTF64X4 $1, ACC, Y3 \
	VADDPS Y3, YACC, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0 \
	MOVSS X0, (4*V)(DI)

// func dotQ8_0Q80x4VNNI(row *byte, x *uint32, stride int, blocks int, f16 *float32, out *float32)
// A Q8_0 row times four laid-out vectors (stride bytes apart): out[v].
TEXT ·dotQ8_0Q80x4VNNI(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), R9
	MOVQ stride+16(FP), AX
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	LEAQ (R11)(AX*1), R12
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   x4last

x4pair:
	Q8_PAIR
	Q8_VEC(R9, Z4, Z8, Z24)
	Q8_VEC(R10, Z5, Z9, Z25)
	Q8_VEC(R11, Z6, Z10, Z26)
	Q8_VEC(R12, Z7, Z11, Z27)
	ADDQ $68, SI
	ADDQ $192, R9
	ADDQ $192, R10
	ADDQ $192, R11
	ADDQ $192, R12
	DECQ CX
	JNZ  x4pair

x4last:
	TESTQ $1, BX
	JZ    x4out
	Q8_LAST
	Q8_VECLAST(R9, Y4, Y8, Z4, Z8, Z24)
	Q8_VECLAST(R10, Y5, Y9, Z5, Z9, Z25)
	Q8_VECLAST(R11, Y6, Y10, Z6, Z10, Z26)
	Q8_VECLAST(R12, Y7, Y11, Z7, Z11, Z27)

x4out:
	MOVQ out+40(FP), DI
	Q8_OUT(0, Z24, Y24)
	Q8_OUT(1, Z25, Y25)
	Q8_OUT(2, Z26, Y26)
	Q8_OUT(3, Z27, Y27)
	VZEROUPPER
	RET

// X8_POINTERS sets R10, R11, R12, R13, R14, BX and DI to the seven
// vectors after the one at R9, AX bytes apart.
#define X8_POINTERS \
	LEAQ (R9)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	LEAQ (R11)(AX*1), R12 \
	LEAQ (R12)(AX*1), R13 \
	LEAQ (R13)(AX*1), R14 \
	LEAQ (R14)(AX*1), BX \
	LEAQ (BX)(AX*1), DI

// X8_ADVANCE moves the eight vectors' pointers to their next pair.
#define X8_ADVANCE \
	ADDQ $192, R9 \
	ADDQ $192, R10 \
	ADDQ $192, R11 \
	ADDQ $192, R12 \
	ADDQ $192, R13 \
	ADDQ $192, R14 \
	ADDQ $192, BX \
	ADDQ $192, DI

// ZERO_Z16_23 and ZERO_Z24_31 clear eight accumulators each.
#define ZERO_Z16_23 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23

#define ZERO_Z24_31 \
	VPXORD Z24, Z24, Z24 \
	VPXORD Z25, Z25, Z25 \
	VPXORD Z26, Z26, Z26 \
	VPXORD Z27, Z27, Z27 \
	VPXORD Z28, Z28, Z28 \
	VPXORD Z29, Z29, Z29 \
	VPXORD Z30, Z30, Z30 \
	VPXORD Z31, Z31, Z31

// func dotQ8_0Q80x8VNNI(row *byte, x *uint32, stride int, blocks int, f16 *float32, out *float32)
// A Q8_0 row times eight laid-out vectors (stride bytes apart): out[v].
// Each pair of blocks is loaded once for all eight.
TEXT ·dotQ8_0Q80x8VNNI(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), R9
	MOVQ stride+16(FP), AX
	X8_POINTERS
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	ZERO_Z24_31
	MOVQ CX, DX
	SHRQ $1, CX
	JZ   x8last

x8pair:
	// the row 2 KiB ahead: inside a model the rows come from memory, and
	// an 8-vector step measured 15–20 % faster with it
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	Q8_PAIR
	Q8_VEC(R9, Z4, Z8, Z24)
	Q8_VEC(R10, Z5, Z9, Z25)
	Q8_VEC(R11, Z6, Z10, Z26)
	Q8_VEC(R12, Z7, Z11, Z27)
	Q8_VEC(R13, Z14, Z18, Z28)
	Q8_VEC(R14, Z15, Z19, Z29)
	Q8_VEC(BX, Z16, Z20, Z30)
	Q8_VEC(DI, Z17, Z21, Z31)
	ADDQ $68, SI
	X8_ADVANCE
	DECQ CX
	JNZ  x8pair

x8last:
	TESTQ $1, DX
	JZ    x8out
	Q8_LAST
	Q8_VECLAST(R9, Y4, Y8, Z4, Z8, Z24)
	Q8_VECLAST(R10, Y5, Y9, Z5, Z9, Z25)
	Q8_VECLAST(R11, Y6, Y10, Z6, Z10, Z26)
	Q8_VECLAST(R12, Y7, Y11, Z7, Z11, Z27)
	Q8_VECLAST(R13, Y14, Y18, Z14, Z18, Z28)
	Q8_VECLAST(R14, Y15, Y19, Z15, Z19, Z29)
	Q8_VECLAST(BX, Y16, Y20, Z16, Z20, Z30)
	Q8_VECLAST(DI, Y17, Y21, Z17, Z21, Z31)

x8out:
	MOVQ out+40(FP), DI
	Q8_OUT(0, Z24, Y24)
	Q8_OUT(1, Z25, Y25)
	Q8_OUT(2, Z26, Y26)
	Q8_OUT(3, Z27, Y27)
	Q8_OUT(4, Z28, Y28)
	Q8_OUT(5, Z29, Y29)
	Q8_OUT(6, Z30, Y30)
	Q8_OUT(7, Z31, Y31)
	VZEROUPPER
	RET

// R2_VEC adds vector P's pair of blocks times two rows' pairs (Z1, Z2 and
// Z10, Z11) to A0 and A1: the vector's values, corrections and scales are
// loaded once for both rows (Z4, Z5, Z6), and each row's product is
// Q8_ROWVEC's instructions on them, in its order.
#define R2_VEC(P, A0, A1) \
	VMOVDQU32 (P), Z4 \
	VMOVDQU32 64(P), Z5 \
	VMOVDQU32 128(P), Z6 \
	VMOVDQA32 Z5, Z7 \
	VPDPBUSD Z4, Z1, Z7 \
	VCVTDQ2PS Z7, Z7 \
	VMULPS Z6, Z2, Z8 \
	VFMADD231PS Z7, Z8, A0 \
	VMOVDQA32 Z5, Z9 \
	VPDPBUSD Z4, Z10, Z9 \
	VCVTDQ2PS Z9, Z9 \
	VMULPS Z6, Z11, Z12 \
	VFMADD231PS Z9, Z12, A1

// R2_VECLAST is R2_VEC for an odd last block in the low halves (the
// 256-bit forms clear the upper halves, so the upper lanes add 0·0).
#define R2_VECLAST(P, A0, A1) \
	VMOVDQU32 (P), Y4 \
	VMOVDQU32 64(P), Y5 \
	VMOVDQU32 128(P), Y6 \
	VMOVDQA32 Y5, Y7 \
	VPDPBUSD Y4, Y1, Y7 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS Y6, Y2, Y8 \
	VFMADD231PS Z7, Z8, A0 \
	VMOVDQA32 Y5, Y9 \
	VPDPBUSD Y4, Y10, Y9 \
	VCVTDQ2PS Y9, Y9 \
	VMULPS Y6, Y11, Y12 \
	VFMADD231PS Z9, Z12, A1

// func dotQ8_0Q80x8r2VNNI(row *byte, rowStride int, x *uint32, stride int, blocks int, f16 *float32, out *float32)
// Two Q8_0 rows (rowStride bytes apart) times eight laid-out vectors
// (stride bytes apart): out[v] for the first row, out[8+v] for the
// second. Each vector's pair of blocks is read once for both rows, half
// the x8 kernel's reads of x; each (row, vector) result is the x8
// kernel's, bit for bit.
TEXT ·dotQ8_0Q80x8r2VNNI(SB), NOSPLIT, $0-56
	MOVQ row+0(FP), SI
	MOVQ rowStride+8(FP), AX
	LEAQ (SI)(AX*1), R15
	MOVQ x+16(FP), R9
	MOVQ stride+24(FP), AX
	X8_POINTERS
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	ZERO_Z16_23
	ZERO_Z24_31
	MOVQ CX, DX
	SHRQ $1, CX
	JZ   r2last

r2pair:
	// both rows 2 KiB ahead (together the stream past the second row)
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2048(R15)
	PREFETCHT0 2112(R15)
	Q8_ROWPAIR(SI, Y1, Z1, Y2, Z2, Y3)
	Q8_ROWPAIR(R15, Y10, Z10, Y11, Z11, Y3)
	R2_VEC(R9, Z16, Z24)
	R2_VEC(R10, Z17, Z25)
	R2_VEC(R11, Z18, Z26)
	R2_VEC(R12, Z19, Z27)
	R2_VEC(R13, Z20, Z28)
	R2_VEC(R14, Z21, Z29)
	R2_VEC(BX, Z22, Z30)
	R2_VEC(DI, Z23, Z31)
	ADDQ $68, SI
	ADDQ $68, R15
	X8_ADVANCE
	DECQ CX
	JNZ  r2pair

r2last:
	TESTQ $1, DX
	JZ    r2out
	Q8_ROWLAST(SI, Y1, Y2)
	Q8_ROWLAST(R15, Y10, Y11)
	R2_VECLAST(R9, Z16, Z24)
	R2_VECLAST(R10, Z17, Z25)
	R2_VECLAST(R11, Z18, Z26)
	R2_VECLAST(R12, Z19, Z27)
	R2_VECLAST(R13, Z20, Z28)
	R2_VECLAST(R14, Z21, Z29)
	R2_VECLAST(BX, Z22, Z30)
	R2_VECLAST(DI, Z23, Z31)

r2out:
	MOVQ out+48(FP), DI
	Q8_OUT(0, Z16, Y16)
	Q8_OUT(1, Z17, Y17)
	Q8_OUT(2, Z18, Y18)
	Q8_OUT(3, Z19, Y19)
	Q8_OUT(4, Z20, Y20)
	Q8_OUT(5, Z21, Y21)
	Q8_OUT(6, Z22, Y22)
	Q8_OUT(7, Z23, Y23)
	Q8_OUT(8, Z24, Y24)
	Q8_OUT(9, Z25, Y25)
	Q8_OUT(10, Z26, Y26)
	Q8_OUT(11, Z27, Y27)
	Q8_OUT(12, Z28, Y28)
	Q8_OUT(13, Z29, Y29)
	Q8_OUT(14, Z30, Y30)
	Q8_OUT(15, Z31, Y31)
	VZEROUPPER
	RET

// func dotQ8_0Q80r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32)
// Four Q8_0 rows (stride bytes apart) times one laid-out vector: out[i]
// is dotQ8_0Q80x1VNNI of row i, bit for bit. Four row streams keep more
// of memory's bandwidth busy than one.
TEXT ·dotQ8_0Q80r4VNNI(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	LEAQ (SI)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	LEAQ (R11)(AX*1), R12
	MOVQ x+16(FP), R9
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   r4last

r4pair:
	Q8_ROWPAIR(SI, Y1, Z1, Y2, Z2, Y3)
	Q8_ROWPAIR(R10, Y14, Z14, Y15, Z15, Y3)
	Q8_ROWPAIR(R11, Y16, Z16, Y17, Z17, Y3)
	Q8_ROWPAIR(R12, Y18, Z18, Y19, Z19, Y3)
	Q8_ROWVEC(R9, Z1, Z2, Z4, Z8, Z24)
	Q8_ROWVEC(R9, Z14, Z15, Z5, Z9, Z25)
	Q8_ROWVEC(R9, Z16, Z17, Z6, Z10, Z26)
	Q8_ROWVEC(R9, Z18, Z19, Z7, Z11, Z27)
	ADDQ $68, SI
	ADDQ $68, R10
	ADDQ $68, R11
	ADDQ $68, R12
	ADDQ $192, R9
	DECQ CX
	JNZ  r4pair

r4last:
	TESTQ $1, BX
	JZ    r4out
	Q8_ROWLAST(SI, Y1, Y2)
	Q8_ROWLAST(R10, Y14, Y15)
	Q8_ROWLAST(R11, Y16, Y17)
	Q8_ROWLAST(R12, Y18, Y19)
	Q8_ROWVECLAST(R9, Y1, Y2, Y4, Y8, Z4, Z8, Z24)
	Q8_ROWVECLAST(R9, Y14, Y15, Y5, Y9, Z5, Z9, Z25)
	Q8_ROWVECLAST(R9, Y16, Y17, Y6, Y10, Z6, Z10, Z26)
	Q8_ROWVECLAST(R9, Y18, Y19, Y7, Y11, Z7, Z11, Z27)

r4out:
	MOVQ out+40(FP), DI
	Q8_OUT(0, Z24, Y24)
	Q8_OUT(1, Z25, Y25)
	Q8_OUT(2, Z26, Y26)
	Q8_OUT(3, Z27, Y27)
	VZEROUPPER
	RET

// func dotQ8_0Q80x1VNNI(row *byte, x *uint32, blocks int, f16 *float32) float32
// A Q8_0 row times one laid-out vector, as dotQ8_0Q80x4VNNI computes each.
TEXT ·dotQ8_0Q80x1VNNI(SB), NOSPLIT, $0-36
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), R9
	MOVQ blocks+16(FP), CX
	MOVQ f16+24(FP), R8
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Z24, Z24, Z24
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   x1last

x1pair:
	Q8_PAIR
	Q8_VEC(R9, Z4, Z8, Z24)
	ADDQ $68, SI
	ADDQ $192, R9
	DECQ CX
	JNZ  x1pair

x1last:
	TESTQ $1, BX
	JZ    x1out
	Q8_LAST
	Q8_VECLAST(R9, Y4, Y8, Z4, Z8, Z24)

x1out:
	VEXTRACTF64X4 $1, Z24, Y3
	VADDPS Y3, Y24, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// dword order after the packs: 0,4,1,5,2,6,3,7 puts the values back in order
DATA q80perm<>+0(SB)/4, $0
DATA q80perm<>+4(SB)/4, $4
DATA q80perm<>+8(SB)/4, $1
DATA q80perm<>+12(SB)/4, $5
DATA q80perm<>+16(SB)/4, $2
DATA q80perm<>+20(SB)/4, $6
DATA q80perm<>+24(SB)/4, $3
DATA q80perm<>+28(SB)/4, $7
GLOBL q80perm<>(SB), RODATA|NOPTR, $32

// func quantizeQ80AVX2(x *float32, q *int8, d *float32, blocks int, back *float32)
// Rounds blocks of 32 values as quantizeQ80Go does, bit for bit:
// d = binary16(max|x|/127) widened, q = x·(127/max) to nearest even
// (the default rounding of VCVTPS2DQ); with back, also writes d·q there.
// blocks > 0.
TEXT ·quantizeQ80AVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ back+32(FP), R9
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15       // |·| mask
	MOVL $0x42fe0000, AX
	VMOVD AX, X14               // 127
	VMOVDQU q80perm<>(SB), Y13

qzblock:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS Y15, Y0, Y4
	VANDPS Y15, Y1, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y2, Y5
	VMAXPS Y5, Y4, Y4
	VANDPS Y15, Y3, Y5
	VMAXPS Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS X5, X4, X4           // max|x|
	VDIVSS X14, X4, X6          // max/127
	VCVTPS2PH $0, X6, X6
	VCVTPH2PS X6, X6
	VMOVSS X6, (DX)
	VXORPS X7, X7, X7
	VUCOMISS X7, X4
	JEQ  qzscale
	VDIVSS X4, X14, X7          // 127/max
qzscale:
	VBROADCASTSS X7, Y7
	VMULPS Y7, Y0, Y0
	VMULPS Y7, Y1, Y1
	VMULPS Y7, Y2, Y2
	VMULPS Y7, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	TESTQ R9, R9
	JZ   qzpack
	VBROADCASTSS X6, Y8
	VCVTDQ2PS Y0, Y9
	VMULPS Y8, Y9, Y9
	VMOVUPS Y9, (R9)
	VCVTDQ2PS Y1, Y9
	VMULPS Y8, Y9, Y9
	VMOVUPS Y9, 32(R9)
	VCVTDQ2PS Y2, Y9
	VMULPS Y8, Y9, Y9
	VMOVUPS Y9, 64(R9)
	VCVTDQ2PS Y3, Y9
	VMULPS Y8, Y9, Y9
	VMOVUPS Y9, 96(R9)
	ADDQ $128, R9
qzpack:
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD Y0, Y13, Y0
	VMOVDQU Y0, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  qzblock
	VZEROUPPER
	RET

// func layQ80VNNI(q *int8, d *float32, out *uint32, blocks int)
// Lays out one rounded vector as q80.layOut does (blocks > 0): for each
// pair of blocks the 64 values, the corrections −128·Σ of each four
// (VPDPBUSD of 0x80 bytes, unsigned, with the values, then negated) and
// each block's d eight times; an odd last block fills the low halves.
TEXT ·layQ80VNNI(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ blocks+24(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Z0, Z0, Z0
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   laylast

laypair:
	VMOVDQU32 (SI), Z1
	VMOVDQU32 Z1, (DI)
	VPXORD Z2, Z2, Z2
	VPDPBUSD Z1, Z13, Z2
	VPSUBD Z2, Z0, Z2
	VMOVDQU32 Z2, 64(DI)
	VBROADCASTSS (DX), Y3
	VBROADCASTSS 4(DX), Y4
	VINSERTF64X4 $1, Y4, Z3, Z3
	VMOVUPS Z3, 128(DI)
	ADDQ $64, SI
	ADDQ $8, DX
	ADDQ $192, DI
	DECQ CX
	JNZ  laypair

laylast:
	TESTQ $1, BX
	JZ    laydone
	VMOVDQU (SI), Y1
	VMOVDQU Y1, (DI)
	VPXORD Y2, Y2, Y2
	VPDPBUSD Y1, Y13, Y2
	VPSUBD Y2, Y0, Y2
	VMOVDQU Y2, 64(DI)
	VBROADCASTSS (DX), Y3
	VMOVUPS Y3, 128(DI)

laydone:
	VZEROUPPER
	RET
