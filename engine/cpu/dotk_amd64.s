#include "textflag.h"

// Q4_K_PAIR dots one pair of sub-blocks (32 bytes of nibbles at BX: low
// nibbles are sub-block 2p, high ones 2p+1; their x at DI and DI+128) and
// adds them, scaled by the pair's d·sc from the stack, to Y0.
#define Q4_K_GROUP(qoff, xoff) \
	VPMOVZXBD qoff(BX), Y5 \
	VPAND     Y13, Y5, Y6 \
	VPSRLD    $4, Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y5, Y5 \
	VFMADD231PS xoff(DI), Y6, Y3 \
	VFMADD231PS 128+xoff(DI), Y5, Y4

#define Q4_K_PAIR(soff) \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	Q4_K_GROUP(0, 0) \
	Q4_K_GROUP(8, 32) \
	Q4_K_GROUP(16, 64) \
	Q4_K_GROUP(24, 96) \
	VBROADCASTSS soff(SP), Y7 \
	VFMADD231PS  Y3, Y7, Y0 \
	VBROADCASTSS soff+4(SP), Y8 \
	VFMADD231PS  Y4, Y8, Y0 \
	ADDQ $32, BX \
	ADDQ $256, DI

// func dotQ4_KAVX2(row *byte, x *float32, xs *float32, blocks int, f16 *float32) float32
// A row of Q4_K blocks (144 bytes: d, dmin, 12 bytes of 6-bit scales and
// mins, 128 bytes of nibbles) times x; xs holds x's sums over 32 values,
// for the mins: Σ_j d·sc_j·(q_j·x_j) − Σ_j dmin·m_j·xs_j.
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $32-44
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xs+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	VXORPS Y0, Y0, Y0
	MOVL $15, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13

block:
	CMPQ CX, $0
	JE   reduce
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y14
	MOVWLZX 2(SI), AX
	VBROADCASTSS (R8)(AX*4), Y15
	// the scales and mins, unpacked as llama.cpp does with 32-bit masks
	MOVL 4(SI), R9
	MOVL 8(SI), R10
	MOVL 12(SI), R11
	MOVL R11, R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL R10, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12            // mins 4..7
	MOVL R10, R13
	ANDL $0x3f3f3f3f, R13    // mins 0..3
	MOVL R11, R10
	ANDL $0x0f0f0f0f, R10
	MOVL R9, R11
	SHRL $6, R11
	ANDL $0x03030303, R11
	SHLL $4, R11
	ORL  R11, R10            // scales 4..7
	ANDL $0x3f3f3f3f, R9     // scales 0..3
	SHLQ $32, R10
	ORQ  R10, R9
	SHLQ $32, R12
	ORQ  R12, R13
	VMOVQ R9, X1
	VPMOVZXBD X1, Y1
	VCVTDQ2PS Y1, Y1
	VMULPS Y14, Y1, Y1
	VMOVUPS Y1, 0(SP)        // d·sc_j
	VMOVQ R13, X2
	VPMOVZXBD X2, Y2
	VCVTDQ2PS Y2, Y2
	VMULPS Y15, Y2, Y2       // dmin·m_j
	VFNMADD231PS (DX), Y2, Y0
	LEAQ 16(SI), BX
	Q4_K_PAIR(0)
	Q4_K_PAIR(8)
	Q4_K_PAIR(16)
	Q4_K_PAIR(24)
	ADDQ $144, SI
	ADDQ $32, DX
	DECQ CX
	JMP  block

reduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// Q6_K_PART adds one quarter's 8 values (q from their low and high bits in
// LO and HI, x at XO(DI)) times their d·sc (SO(SP)) to ACC.
#define Q6_K_PART(LO, HI, XO, SO, ACC) \
	VPSLLD    $4, HI, HI \
	VPOR      HI, LO, LO \
	VCVTDQ2PS LO, LO \
	VMULPS    XO(DI), LO, LO \
	VBROADCASTSS SO(SP), HI \
	VFMADD231PS LO, HI, ACC

// Q6_K_GROUP: values l0..l0+7 of each quarter of a half: ql at QL(SI)
// (QL+32 for the second and fourth quarters), qh at QH(SI), x at XO(DI).
#define Q6_K_GROUP(QL, QH, XO, S1, S2, S3, S4) \
	VPMOVZXBD QL(SI), Y1 \
	VPMOVZXBD QL+32(SI), Y2 \
	VPMOVZXBD QH(SI), Y3 \
	VPAND  Y12, Y1, Y4 \
	VPAND  Y11, Y3, Y5 \
	Q6_K_PART(Y4, Y5, XO, S1, Y0) \
	VPAND  Y12, Y2, Y4 \
	VPSRLD $2, Y3, Y5 \
	VPAND  Y11, Y5, Y5 \
	Q6_K_PART(Y4, Y5, XO+128, S2, Y9) \
	VPSRLD $4, Y1, Y4 \
	VPSRLD $4, Y3, Y5 \
	VPAND  Y11, Y5, Y5 \
	Q6_K_PART(Y4, Y5, XO+256, S3, Y0) \
	VPSRLD $4, Y2, Y4 \
	VPSRLD $6, Y3, Y5 \
	Q6_K_PART(Y4, Y5, XO+384, S4, Y9)

// func dotQ6_KAVX2(row *byte, x *float32, xs *float32, blocks int, f16 *float32) float32
// A row of Q6_K blocks (210 bytes: 128 of low nibbles, 64 of high 2-bit
// pairs, 16 int8 scales, d) times x; xs holds x's sums over 16 values, for
// the offset: Σ d·sc·(q·x) − 32·Σ d·sc·xs.
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $64-44
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xs+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y9, Y9, Y9
	MOVL $15, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $3, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11
	MOVL $0x42000000, AX // 32.0
	VMOVD AX, X10
	VBROADCASTSS X10, Y10

q6block:
	CMPQ CX, $0
	JE   q6reduce
	MOVWLZX 208(SI), AX
	VBROADCASTSS (R8)(AX*4), Y14
	VPMOVSXBD 192(SI), Y1
	VCVTDQ2PS Y1, Y1
	VMULPS Y14, Y1, Y1
	VMOVUPS Y1, 0(SP)
	VPMOVSXBD 200(SI), Y2
	VCVTDQ2PS Y2, Y2
	VMULPS Y14, Y2, Y2
	VMOVUPS Y2, 32(SP)
	VMULPS (DX), Y1, Y1
	VFMADD231PS 32(DX), Y2, Y1
	VFNMADD231PS Y10, Y1, Y0
	Q6_K_GROUP(0, 128, 0, 0, 8, 16, 24)
	Q6_K_GROUP(8, 136, 32, 0, 8, 16, 24)
	Q6_K_GROUP(16, 144, 64, 4, 12, 20, 28)
	Q6_K_GROUP(24, 152, 96, 4, 12, 20, 28)
	Q6_K_GROUP(64, 160, 512, 32, 40, 48, 56)
	Q6_K_GROUP(72, 168, 544, 32, 40, 48, 56)
	Q6_K_GROUP(80, 176, 576, 36, 44, 52, 60)
	Q6_K_GROUP(88, 184, 608, 36, 44, 52, 60)
	ADDQ $210, SI
	ADDQ $1024, DI
	ADDQ $64, DX
	DECQ CX
	JMP  q6block

q6reduce:
	VADDPS Y9, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// shifts5<>: lane shift counts for reading Q5's fifth bits from the 32-bit
// mask: lanes hold elements 0-7, 8-15, 16-23, 24-31.
DATA shifts5<>+0(SB)/4, $0
DATA shifts5<>+4(SB)/4, $1
DATA shifts5<>+8(SB)/4, $2
DATA shifts5<>+12(SB)/4, $3
DATA shifts5<>+16(SB)/4, $4
DATA shifts5<>+20(SB)/4, $5
DATA shifts5<>+24(SB)/4, $6
DATA shifts5<>+28(SB)/4, $7
GLOBL shifts5<>(SB), RODATA, $32

// FIFTH sets bit 4 of the levels in DST from the mask in Y10, each lane
// reading the bit SHIFT names.
#define FIFTH(SHIFT, DST) \
	VPSRLVD SHIFT, Y10, Y3 \
	VPAND   Y12, Y3, Y3 \
	VPSLLD  $4, Y3, Y3 \
	VPOR    Y3, DST, DST

// LEGACY_FMA adds the levels of elements e..e+7 (Y2, x at XLO(DI)) and
// e+16..e+23 (Y1, x at XHI(DI)) times x into Y4.
#define LEGACY_FMA(XLO, XHI) \
	VCVTDQ2PS Y2, Y2 \
	VCVTDQ2PS Y1, Y1 \
	VFMADD231PS XLO(DI), Y2, Y4 \
	VFMADD231PS XHI(DI), Y1, Y4

// func dotLegacyAVX2(row *byte, x *float32, xs *float32, blocks int, f16 *float32, kind int) float32
// A row of Q4_0 (kind 0: 18-byte blocks, d·(q−8)), Q5_0 (1: 22 bytes,
// d·(q−16)), Q4_1 (2: 20 bytes, d·q+m) or Q5_1 (3: 24 bytes) times x; xs
// holds x's sums over 32 values (the offsets and mins go through them).
TEXT ·dotLegacyAVX2(SB), NOSPLIT, $0-52
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ xs+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	MOVQ kind+40(FP), R9
	VXORPS Y0, Y0, Y0
	MOVL $15, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $1, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VMOVDQU shifts5<>(SB), Y11
	MOVL $8, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9 // 8 (the shift from lanes 0-7 to 8-15)
	// block size and where the nibbles start
	MOVQ $18, R10
	MOVQ $2, R11
	CMPQ R9, $1
	JNE  notq50
	MOVQ $22, R10
	MOVQ $6, R11
notq50:
	CMPQ R9, $2
	JNE  notq41
	MOVQ $20, R10
	MOVQ $4, R11
notq41:
	CMPQ R9, $3
	JNE  lblock
	MOVQ $24, R10
	MOVQ $8, R11

lblock:
	CMPQ CX, $0
	JE   lreduce
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y14 // d
	VXORPS Y4, Y4, Y4
	LEAQ (SI)(R11*1), BX // nibbles
	CMPQ R9, $1
	JE   lfive
	CMPQ R9, $3
	JE   lfive
	// four bits
	VPMOVZXBD (BX), Y1
	VPAND  Y13, Y1, Y2
	VPSRLD $4, Y1, Y1
	LEGACY_FMA(0, 64)
	VPMOVZXBD 8(BX), Y1
	VPAND  Y13, Y1, Y2
	VPSRLD $4, Y1, Y1
	LEGACY_FMA(32, 96)
	JMP  loffset

lfive:
	// the 32-bit mask of fifth bits sits just before the nibbles
	VPBROADCASTD -4(BX), Y10
	VPMOVZXBD (BX), Y1
	VPAND  Y13, Y1, Y2
	VPSRLD $4, Y1, Y1
	FIFTH(Y11, Y2)           // elements 0-7: bits 0-7
	VPSLLD $1, Y9, Y5        // 16 + shifts
	VPADDD Y11, Y5, Y5
	FIFTH(Y5, Y1)            // elements 16-23
	LEGACY_FMA(0, 64)
	VPMOVZXBD 8(BX), Y1
	VPAND  Y13, Y1, Y2
	VPSRLD $4, Y1, Y1
	VPADDD Y11, Y9, Y5       // 8 + shifts
	FIFTH(Y5, Y2)            // elements 8-15
	VPSLLD $1, Y9, Y6
	VPADDD Y9, Y6, Y6
	VPADDD Y11, Y6, Y5       // 24 + shifts
	FIFTH(Y5, Y1)            // elements 24-31

	LEGACY_FMA(32, 96)

loffset:
	VBROADCASTSS (DX), Y5 // the block's sum of x
	CMPQ R9, $2
	JGE  lmin
	// offsets 8 (Q4_0) or 16 (Q5_0): subtract xs from every lane (8 lanes: 8·xs), twice for 16
	VSUBPS Y5, Y4, Y4
	CMPQ R9, $1
	JNE  lscale
	VSUBPS Y5, Y4, Y4
lscale:
	VFMADD231PS Y4, Y14, Y0
	JMP  lnext

lmin:
	VFMADD231PS Y4, Y14, Y0
	MOVWLZX 2(SI), AX
	VMOVSS (R8)(AX*4), X6 // m
	VMULSS X6, X5, X6     // m·xs
	VXORPS Y7, Y7, Y7
	VBLENDPS $1, Y6, Y7, Y7 // into lane 0 only
	VADDPS Y7, Y0, Y0

lnext:
	ADDQ R10, SI
	ADDQ $128, DI
	ADDQ $4, DX
	DECQ CX
	JMP  lblock

lreduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET
