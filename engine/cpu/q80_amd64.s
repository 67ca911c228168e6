//go:build !purego

#include "textflag.h"

// byte j of the 32 takes byte j/8 of the Q5_0 block's fifth-bit word
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32

// every bit but bit j%8 set in byte j: or-ed in, a byte is all ones iff its bit is
DATA q5bits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// Q5_CONSTS sets the registers Q5_VALUES reads: Y13 and Y12 the tables
// above, Y11 all ones, Y10 the low-nibble mask, Y9 0xF0 bytes.
#define Q5_CONSTS \
	VMOVDQU q5shuf<>(SB), Y13 \
	VMOVDQU q5bits<>(SB), Y12 \
	VPCMPEQB Y11, Y11, Y11 \
	MOVL $0x0F0F0F0F, AX \
	VMOVD AX, X10 \
	VPBROADCASTD X10, Y10 \
	VPSLLW $4, Y10, Y9

// Q5_VALUES widens the Q5_0 block at SI into its 32 signed values in Y1
// (bytes, −16 to 15): the nibbles (low ones, then high ones) with the
// fifth bit set, or less 16 where it is clear (Y2, Y3: scratch).
#define Q5_VALUES \
	VMOVDQU 6(SI), X1 \
	VPSRLW $4, X1, X2 \
	VINSERTI128 $1, X2, Y1, Y1 \
	VPAND Y10, Y1, Y1 \
	VPBROADCASTD 2(SI), Y3 \
	VPSHUFB Y13, Y3, Y3 \
	VPOR Y12, Y3, Y3 \
	VPCMPEQB Y11, Y3, Y3 \
	VPANDN Y9, Y3, Y3 \
	VPOR Y3, Y1, Y1

// func dotQ5_0Q80AVX2(row *byte, q *int8, d *float32, blocks int, f16 *float32) float32
// A Q5_0 row (22-byte blocks: binary16 d, 32 fifth bits, 16 bytes of
// nibbles) times x rounded to Q8_0 (q, one d per 32), as llama.cpp's AVX2
// Q5_0·Q8_0 dot: the 5-bit values widened to signed bytes (bit clear:
// nibble − 16), |w|·(x·sign w) summed in pairs, then in fours, scaled
// by d_w·d_x. blocks > 0.
TEXT ·dotQ5_0Q80AVX2(SB), NOSPLIT, $0-44
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ blocks+24(FP), CX
	MOVQ f16+32(FP), R8
	VXORPS Y0, Y0, Y0
	Q5_CONSTS
	MOVL $0x00010001, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8         // int16 ones

q5block:
	MOVWLZX (SI), AX
	VMOVSS (R8)(AX*4), X14      // d_w
	VMULSS (DX), X14, X14       // · d_x
	VBROADCASTSS X14, Y14
	Q5_VALUES
	VMOVDQU (DI), Y4            // x's 32 bytes
	VPSIGNB Y1, Y1, Y5          // |w|
	VPSIGNB Y1, Y4, Y6          // x · sign w
	VPMADDUBSW Y6, Y5, Y5       // pairs, int16
	VPMADDWD Y8, Y5, Y5         // fours, int32
	VCVTDQ2PS Y5, Y5
	VFMADD231PS Y5, Y14, Y0
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q5block
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func unpackQ5_0AVX2(row *byte, blocks int, out *byte)
// Rewrites Q5_0 blocks (22 bytes) as Q8_0 blocks (34 bytes: the same
// binary16 d, then the 32 values as int8, −16 to 15), as dotQ5_0Q80AVX2
// widens them, so the Q8_0 kernels multiply them exactly. blocks > 0.
TEXT ·unpackQ5_0AVX2(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	Q5_CONSTS

q5unpack:
	MOVW (SI), AX
	MOVW AX, (DI)
	Q5_VALUES
	VMOVDQU Y1, 2(DI)
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q5unpack
	VZEROUPPER
	RET

// func unpackQ4_0AVX2(row *byte, blocks int, out *byte)
// Rewrites Q4_0 blocks (18 bytes: binary16 d, then 16 bytes of nibbles,
// the low ones values 0–15, the high ones 16–31) as Q8_0 blocks (34
// bytes: the same d, then the 32 values nibble − 8 as int8, −8 to 7), as
// llama.cpp's AVX2 Q4_0·Q8_0 dot widens them, so the Q8_0 kernels
// multiply them exactly. blocks > 0.
TEXT ·unpackQ4_0AVX2(SB), NOSPLIT, $0-24
	MOVQ row+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
	MOVL $0x08080808, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9

q4unpack:
	MOVW (SI), AX
	MOVW AX, (DI)
	VMOVDQU 2(SI), X1
	VPSRLW $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND Y10, Y1, Y1
	VPSUBB Y9, Y1, Y1
	VMOVDQU Y1, 2(DI)
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q4unpack
	VZEROUPPER
	RET
