//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

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

// The VNNI kernels. Every one computes a Q8_0 row r times a vector v the
// same way, so a vector's result is the same bit for bit whatever else
// shares its product: over the blocks b in order, acc = fma(S, d_w·d_x,
// acc) from acc = 0, where S = Σ w·x over the block is an exact int32
// (VPDPBUSD, unsigned bytes times signed ones, with a correction for the
// offset of 128 that makes one side unsigned) and d_w·d_x one float32
// product (d_w widened by VCVTPH2PS). One vector alone takes four rows
// at a time and sums each block's lanes (SUMS4); several vectors take a
// lane for each row and vector, so a block's eight products of four
// values land in the same lane and the float work is done once per block
// for eight vectors and two rows.

// SUMS4 adds up the eight int32 lanes of each block in A, B, C and D
// (four rows; lanes 0–7 the even block, 8–15 the odd one) into OUT: lanes
// 0–3 the even block's sums for rows A–D, lanes 4–7 the odd block's (T1,
// T2, T3: zmm scratch; YT2, YT3: the low halves of T2 and T3).
#define SUMS4(A, B, C, D, T1, T2, T3, YT2, YT3, OUT) \
	VSHUFPS $0x88, B, A, T1 \
	VSHUFPS $0xDD, B, A, T2 \
	VPADDD T2, T1, T1 \
	VSHUFPS $0x88, D, C, T2 \
	VSHUFPS $0xDD, D, C, T3 \
	VPADDD T3, T2, T2 \
	VSHUFPS $0x88, T2, T1, T3 \
	VSHUFPS $0xDD, T2, T1, T1 \
	VPADDD T3, T1, T1 \
	VSHUFI32X4 $0x08, T1, T1, T2 \
	VSHUFI32X4 $0x0D, T1, T1, T3 \
	VPADDD YT3, YT2, OUT

// W_PAIR loads the pair of blocks at R (their 64 values) into ZW, and
// YW its low half.
#define W_PAIR(R, YW, ZW) \
	VMOVDQU32 2(R), YW \
	VINSERTI64X4 $1, 36(R), ZW, ZW

// W_PAIRS4 loads the pairs of blocks of the rows at SI, R10, R11 and R12
// into Z1–Z4; W_LAST4 their last block into Y1–Y4.
#define W_PAIRS4 \
	W_PAIR(SI, Y1, Z1) \
	W_PAIR(R10, Y2, Z2) \
	W_PAIR(R11, Y3, Z3) \
	W_PAIR(R12, Y4, Z4)

#define W_LAST4 \
	VMOVDQU32 2(SI), Y1 \
	VMOVDQU32 2(R10), Y2 \
	VMOVDQU32 2(R11), Y3 \
	VMOVDQU32 2(R12), Y4

// DW8 loads the binary16 scales of the pair of blocks of the rows at SI,
// R10, R11 and R12 into X12 (the even block's four, then the odd one's)
// and widens them into Y12.
#define DW8 \
	MOVWLZX (SI), AX \
	VMOVD AX, X12 \
	VPINSRW $1, (R10), X12, X12 \
	VPINSRW $2, (R11), X12, X12 \
	VPINSRW $3, (R12), X12, X12 \
	VPINSRW $4, 34(SI), X12, X12 \
	VPINSRW $5, 34(R10), X12, X12 \
	VPINSRW $6, 34(R11), X12, X12 \
	VPINSRW $7, 34(R12), X12, X12 \
	VCVTPH2PS X12, Y12

// func dotQ8_0Q80s4VNNI(row *byte, stride int, x *uint32, blocks int, out *float32)
// Four Q8_0 rows (stride bytes apart) times one vector laid out by
// layQ80VNNI (per pair of blocks: the 64 values, 16 corrections −128·Σ of
// each four, each block's d_x eight times): out[0..3].
TEXT ·dotQ8_0Q80s4VNNI(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ x+16(FP), R9
	MOVQ blocks+24(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD X20, X20, X20
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   s4last

s4pair:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1024(R10)
	PREFETCHT0 1024(R11)
	PREFETCHT0 1024(R12)
	W_PAIRS4
	VPXORD Z13, Z1, Z1
	VPXORD Z13, Z2, Z2
	VPXORD Z13, Z3, Z3
	VPXORD Z13, Z4, Z4
	VMOVDQU32 64(R9), Z5
	VMOVDQA32 Z5, Z6
	VMOVDQA32 Z5, Z7
	VMOVDQA32 Z5, Z8
	VMOVDQU32 (R9), Z0
	VPDPBUSD Z0, Z1, Z5
	VPDPBUSD Z0, Z2, Z6
	VPDPBUSD Z0, Z3, Z7
	VPDPBUSD Z0, Z4, Z8
	SUMS4(Z5, Z6, Z7, Z8, Z9, Z10, Z11, Y10, Y11, Y9)
	VCVTDQ2PS Y9, Y9
	DW8
	VMULPS 144(R9), Y12, Y12 // d_x: the even block's four times, the odd one's
	VFMADD231PS X9, X12, X20
	VEXTRACTF128 $1, Y9, X9
	VEXTRACTF128 $1, Y12, X12
	VFMADD231PS X9, X12, X20
	ROWS4_NEXT(68)
	ADDQ $192, R9
	DECQ CX
	JNZ  s4pair

s4last:
	TESTQ $1, BX
	JZ    s4out
	W_LAST4
	VPXORD Y13, Y1, Y1
	VPXORD Y13, Y2, Y2
	VPXORD Y13, Y3, Y3
	VPXORD Y13, Y4, Y4
	VMOVDQU32 64(R9), Y5 // the 256-bit forms clear the upper lanes
	VMOVDQA32 Y5, Y6
	VMOVDQA32 Y5, Y7
	VMOVDQA32 Y5, Y8
	VMOVDQU32 (R9), Y0
	VPDPBUSD Y0, Y1, Y5
	VPDPBUSD Y0, Y2, Y6
	VPDPBUSD Y0, Y3, Y7
	VPDPBUSD Y0, Y4, Y8
	SUMS4(Z5, Z6, Z7, Z8, Z9, Z10, Z11, Y10, Y11, Y9)
	VCVTDQ2PS X9, X9
	DW4(X12)
	VMULPS 128(R9), X12, X12
	VFMADD231PS X9, X12, X20

s4out:
	MOVQ out+32(FP), DI
	VMOVUPS X20, (DI)
	VZEROUPPER
	RET

// func sumsQ8_0VNNI(row *byte, stride int, blocks int, out *int32)
// For four Q8_0 rows (stride bytes apart), −128·Σ w over each block b:
// out[4b+k] for row k, the corrections dotQ8_0Q80v8r4VNNI starts from.
TEXT ·sumsQ8_0VNNI(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ blocks+16(FP), CX
	MOVQ out+24(FP), DI
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD Y15, Y15, Y15
	MOVQ CX, BX
	SHRQ $1, CX
	JZ   sumslast

sumspair:
	W_PAIRS4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPDPBUSD Z1, Z13, Z5
	VPDPBUSD Z2, Z13, Z6
	VPDPBUSD Z3, Z13, Z7
	VPDPBUSD Z4, Z13, Z8
	SUMS4(Z5, Z6, Z7, Z8, Z9, Z10, Z11, Y10, Y11, Y9)
	VPSUBD Y9, Y15, Y9
	VMOVDQU Y9, (DI)
	ROWS4_NEXT(68)
	ADDQ $32, DI
	DECQ CX
	JNZ  sumspair

sumslast:
	TESTQ $1, BX
	JZ    sumsdone
	W_LAST4
	VPXORD Y5, Y5, Y5
	VPXORD Y6, Y6, Y6
	VPXORD Y7, Y7, Y7
	VPXORD Y8, Y8, Y8
	VPDPBUSD Y1, Y13, Y5
	VPDPBUSD Y2, Y13, Y6
	VPDPBUSD Y3, Y13, Y7
	VPDPBUSD Y4, Y13, Y8
	SUMS4(Z5, Z6, Z7, Z8, Z9, Z10, Z11, Y10, Y11, Y9)
	VPSUBD X9, X15, X9
	VMOVDQU X9, (DI)

sumsdone:
	VZEROUPPER
	RET

// V8_ROW adds the block of the row at R (its pairs of groups of four
// broadcast) times the vectors' (Z0–Z3) to S, from the row's correction
// at C in the even lanes (K1); T: scratch. Lane 2v then sums vector v's
// even groups, lane 2v+1 its odd ones.
#define V8_ROW(R, C, S, T) \
	VPBROADCASTD.Z (C), K1, S \
	VPBROADCASTQ 2(R), T \
	VPDPBUSD T, Z0, S \
	VPBROADCASTQ 10(R), T \
	VPDPBUSD T, Z1, S \
	VPBROADCASTQ 18(R), T \
	VPDPBUSD T, Z2, S \
	VPBROADCASTQ 26(R), T \
	VPDPBUSD T, Z3, S

// V8_FUSE adds the even and odd lanes of the rows RA's and RB's sums SA
// and SB (PAIR_ADD) and fuses them into ACC: ACC = fma(S, d_w·d_x, ACC)
// (Z8: the vectors' d_x in PAIR_ADD's order; R8: the binary16 table; K2:
// lanes 2 and 3 of each 128 bits; Z15, Z20, Z21: scratch).
#define V8_FUSE(RA, RB, SA, SB, ACC) \
	PAIR_ADD(SA, SB, Z20, Z21) \
	VCVTDQ2PS Z20, Z20 \
	ROWS_F16(0, RA, RB, Z15) \
	VMULPS Z8, Z15, Z15 \
	VFMADD231PS Z20, Z15, ACC

// func dotQ8_0Q80v8r4VNNI(row *byte, stride int, x *uint32, blocks int, corr *int32, cstride int, f16 *float32, out *float32, vstride int, lanes int, ahead int, rstride int)
// Four Q8_0 rows (stride bytes apart; their corrections by sumsQ8_0VNNI
// cstride bytes apart) times a group of eight vectors laid out by
// layQ80LaneBlock (per block 320 bytes: for each pair of groups of four values
// the eight vectors' side by side as unsigned bytes x+128, then their
// d_x): row k's result for vector v goes to byte v·vstride + k·rstride
// of out, for the first lanes vectors (lanes > 0). A row's pair of groups
// is broadcast straight from the row against the vectors' pairs, so a
// block's four VPDPBUSD leave each vector's sum over its even groups and
// over its odd ones side by side; the two are added once per block, two
// rows at a time. The rows ahead bytes on are fetched into L2 meanwhile
// (q80LaneAhead; into L1 measured the same).
TEXT ·dotQ8_0Q80v8r4VNNI(SB), NOSPLIT, $0-96
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ corr+32(FP), R13
	MOVQ cstride+40(FP), AX
	LEAQ (R13)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	LEAQ (R15)(AX*1), DI
	MOVQ x+16(FP), R9
	MOVQ blocks+24(FP), CX
	MOVQ f16+48(FP), R8
	MOVQ ahead+80(FP), DX
	LANE_MASKS
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17

v8block:
	PREFETCHT1 (SI)(DX*1)
	PREFETCHT1 (R10)(DX*1)
	PREFETCHT1 (R11)(DX*1)
	PREFETCHT1 (R12)(DX*1)
	VMOVDQU32 (R9), Z0
	VMOVDQU32 64(R9), Z1
	VMOVDQU32 128(R9), Z2
	VMOVDQU32 192(R9), Z3
	VMOVDQU32 256(R9), Z8
	V8_ROW(SI, R13, Z9, Z12)
	V8_ROW(R10, R14, Z10, Z13)
	V8_ROW(R11, R15, Z11, Z18)
	V8_ROW(R12, DI, Z14, Z19)
	V8_FUSE(SI, R10, Z9, Z10, Z16)
	V8_FUSE(R11, R12, Z11, Z14, Z17)
	ROWS4_NEXT(34)
	ADDQ $4, R13
	ADDQ $4, R14
	ADDQ $4, R15
	ADDQ $4, DI
	ADDQ $320, R9
	DECQ CX
	JNZ  v8block

	MOVQ out+56(FP), DI
	MOVQ vstride+64(FP), AX
	MOVQ lanes+72(FP), CX
	MOVQ rstride+88(FP), BX
	LANES_STORE_Q(v8done)

v8done:
	VZEROUPPER
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
