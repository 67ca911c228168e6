//go:build !purego

#include "textflag.h"

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
