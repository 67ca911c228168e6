//go:build !purego

#include "textflag.h"
#include "q4kscales_amd64.h"

// Q4Q8_PAIR multiplies one pair of Q4_K sub-blocks (32 bytes of nibbles
// at BX+32p: low nibbles sub-block 2p, high ones 2p+1) with their int8
// x (DI+64p, DI+64p+32) and adds Σ sc·(q·qx) to the int32 lanes of Y4
// (the scales as int16 at SP).
#define Q4Q8_PAIR(P) \
	VMOVDQU (P*32)(BX), Y5 \
	VPSRLW  $4, Y5, Y6 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y13, Y6, Y6 \
	VPMADDUBSW (P*64)(DI), Y5, Y5 \
	VPMADDUBSW (P*64+32)(DI), Y6, Y6 \
	VPBROADCASTW (P*4)(SP), Y7 \
	VPBROADCASTW (P*4+2)(SP), Y8 \
	VPMADDWD Y7, Y5, Y5 \
	VPMADDWD Y8, Y6, Y6 \
	VPADDD  Y5, Y4, Y4 \
	VPADDD  Y6, Y4, Y4

// func dotQ4_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32
// A row of Q4_K blocks times x quantized to int8 blocks of 256 (q, their
// sums over 16 values bs, their scales d): per block
// d·dx·Σ_j sc_j·(q·qx) − dmin·dx·Σ_j m_j·(Σ qx over sub-block j), the
// two integer sums exact and each fused block by block into its own float
// sum (acc = fma(S, d·dx, acc)), as dotQ4_KQ8v8r4VNNI sums eight vectors.
TEXT ·dotQ4_KQ8AVX2(SB), NOSPLIT, $16-52
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R14
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	VXORPS Y0, Y0, Y0
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00010001, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12

q4q8block:
	CMPQ CX, $0
	JE   q4q8reduce
	VBROADCASTSS (R14), Y14
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	MOVWLZX 2(SI), AX
	VBROADCASTSS (R8)(AX*4), Y11
	VMULPS Y14, Y10, Y10     // d·dx
	VMULPS Y14, Y11, Y11     // dmin·dx
	Q4K_SCALES
	VMOVQ R9, X1
	VPMOVZXBW X1, X1
	VMOVDQU X1, 0(SP)        // the 8 scales as int16
	VMOVDQU (DX), Y2
	VPMADDWD Y12, Y2, Y2     // Σ qx over each sub-block of 32
	VMOVQ R13, X3
	VPMOVZXBD X3, Y3
	VPMULLD Y3, Y2, Y2       // m_j·(Σ qx over sub-block j)
	VPXOR Y4, Y4, Y4
	LEAQ 16(SI), BX
	Q4Q8_PAIR(0)
	Q4Q8_PAIR(1)
	Q4Q8_PAIR(2)
	Q4Q8_PAIR(3)
	// the block's two integer sums added up exactly, Σ sc·(q·qx) and the
	// mins' Σ m·(Σ qx), then each fused into its float sum
	VPHADDD Y2, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPHADDD X4, X4, X4       // sumi, summ, sumi, summ
	VCVTDQ2PS X4, X4
	VUNPCKLPS X11, X10, X5   // d·dx, dmin·dx, …
	VFMADD231PS X4, X5, X0   // the sum in lane 0, the mins in lane 1
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $4, R14
	DECQ CX
	JMP  q4q8block

q4q8reduce:
	VMOVSHDUP X0, X15
	VSUBSS X15, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// Q6Q8_QUARTER multiplies one quarter's 32 six-bit values (Q) with their
// int8 x at XO(DI) and adds sc·(q·qx) per 16 values to Y4: the low 16
// values take the int16 scale at SO(SP), the high 16 the one at SO+2.
#define Q6Q8_QUARTER(Q, XO, SO) \
	VPMADDUBSW XO(DI), Q, Q \
	VPBROADCASTW SO(SP), X6 \
	VPBROADCASTW SO+2(SP), X7 \
	VINSERTI128 $1, X7, Y6, Y6 \
	VPMADDWD Y6, Q, Q \
	VPADDD Q, Y4, Y4

// Q6Q8_HALF does the 128 values of half H of a Q6_K block.
#define Q6Q8_HALF(H) \
	VMOVDQU (64*H)(SI), Y1 \
	VMOVDQU (64*H+32)(SI), Y2 \
	VMOVDQU (128+32*H)(SI), Y3 \
	VPAND   Y13, Y1, Y5 \
	VPSLLW  $4, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	Q6Q8_QUARTER(Y5, 128*H, 16*H) \
	VPAND   Y13, Y2, Y5 \
	VPSLLW  $2, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	Q6Q8_QUARTER(Y5, 128*H+32, 16*H+4) \
	VPSRLW  $4, Y1, Y5 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y11, Y3, Y8 \
	VPOR    Y8, Y5, Y5 \
	Q6Q8_QUARTER(Y5, 128*H+64, 16*H+8) \
	VPSRLW  $4, Y2, Y5 \
	VPAND   Y13, Y5, Y5 \
	VPSRLW  $2, Y3, Y8 \
	VPAND   Y11, Y8, Y8 \
	VPOR    Y8, Y5, Y5 \
	Q6Q8_QUARTER(Y5, 128*H+96, 16*H+12)

// func dotQ6_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32
// A row of Q6_K blocks times x quantized to int8 blocks of 256: per block
// d·dx·Σ_s sc_s·(Σ q·qx − 32·Σ qx) over its 16 sub-blocks of 16 values,
// the integer sum exact and fused block by block into the float sum (acc
// = fma(S, d·dx, acc)), as dotQ6_KQ8v8r4VNNI sums eight vectors.
TEXT ·dotQ6_KQ8AVX2(SB), NOSPLIT, $32-52
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R14
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	VXORPS Y0, Y0, Y0
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x30303030, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11

q6q8block:
	CMPQ CX, $0
	JE   q6q8reduce
	VBROADCASTSS (R14), Y14
	MOVWLZX 208(SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	VMULPS Y14, Y10, Y10     // d·dx
	VPMOVSXBW 192(SI), Y9    // the 16 scales as int16
	VMOVDQU Y9, 0(SP)
	VPMADDWD (DX), Y9, Y8    // Σ sc·(Σ qx) in pairs of sub-blocks
	VPSLLD $5, Y8, Y8
	VPXOR Y4, Y4, Y4
	VPSUBD Y8, Y4, Y4        // − 32·Σ sc·Σ qx
	Q6Q8_HALF(0)
	Q6Q8_HALF(1)
	// the block's integer sum added up exactly, then fused into the float sum
	VEXTRACTI128 $1, Y4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0x4E, X4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0xB1, X4, X5
	VPADDD X5, X4, X4
	VCVTDQ2PS X4, X4
	VFMADD231SS X4, X10, X0
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $4, R14
	DECQ CX
	JMP  q6q8block

q6q8reduce:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func quantizeQ8KAVX2(x *float32, q *int8, bs *int16, d *float32, blocks int)
// Each block of 256 values: amax = max |x|, d = amax/127, q = x·127/amax
// rounded to nearest (ties to even), and the sums of q over 16 values.
TEXT ·quantizeQ8KAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R8
	MOVQ blocks+32(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15          // |x| mask
	MOVL $0x42fe0000, AX           // 127.0
	VMOVD AX, X14

qblock:
	CMPQ CX, $0
	JE   qdone
	VXORPS Y0, Y0, Y0
	MOVQ $0, AX
qmax:
	VANDPS (SI)(AX*4), Y15, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ $8, AX
	CMPQ AX, $256
	JL   qmax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0              // amax in every lane of X0
	VXORPS X2, X2, X2
	VUCOMISS X2, X0
	JNE  qscale
	// an all-zero block: d = 0, q = 0, sums 0
	MOVL $0, (R8)
	VPXOR Y3, Y3, Y3
	MOVQ $0, AX
qzero:
	VMOVDQU Y3, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, $256
	JL   qzero
	VMOVDQU Y3, (DX)
	JMP  qnext
qscale:
	VDIVSS X14, X0, X3             // d = amax/127
	VMOVSS X3, (R8)
	VDIVSS X0, X14, X4             // iscale = 127/amax
	VBROADCASTSS X4, Y4
	MOVQ $0, AX                    // value index
	MOVQ $0, BX                    // sum index
qconv:
	VMULPS (SI)(AX*4), Y4, Y5
	VMULPS 32(SI)(AX*4), Y4, Y6
	VCVTPS2DQ Y5, Y5
	VCVTPS2DQ Y6, Y6
	VPADDD Y6, Y5, Y7              // the 16 values' sum, in 8 lanes
	VEXTRACTI128 $1, Y7, X8
	VPADDD X8, X7, X7
	VPHADDD X7, X7, X7
	VPHADDD X7, X7, X7
	VMOVD X7, R9
	MOVW R9, (DX)(BX*2)
	VPACKSSDW Y6, Y5, Y5           // 16 int16, lanes interleaved by 128 bits
	VPERMQ $0xd8, Y5, Y5           // in order
	VEXTRACTI128 $1, Y5, X6
	VPACKSSWB X6, X5, X5           // 16 int8
	VMOVDQU X5, (DI)(AX*1)
	ADDQ $16, AX
	INCQ BX
	CMPQ AX, $256
	JL   qconv
qnext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $4, R8
	DECQ CX
	JMP  qblock
qdone:
	VZEROUPPER
	RET

// Q5Q8_PAIR is Q4Q8_PAIR for Q5_K: each value's fifth bit comes from the
// block's 32 high-bit bytes (Y14), bit 2p for sub-block 2p and 2p+1 for
// 2p+1, moved to bit 4 by the shifts given (SL, NL for the low nibbles,
// SH, NH for the high ones) and masked (Y9 holds 0x10 in every byte).
#define Q5Q8_PAIR(P, SL, NL, SH, NH) \
	VMOVDQU (P*32)(BX), Y5 \
	VPSRLW  $4, Y5, Y6 \
	VPAND   Y13, Y5, Y5 \
	VPAND   Y13, Y6, Y6 \
	SL      $NL, Y14, Y7 \
	VPAND   Y9, Y7, Y7 \
	VPOR    Y7, Y5, Y5 \
	SH      $NH, Y14, Y8 \
	VPAND   Y9, Y8, Y8 \
	VPOR    Y8, Y6, Y6 \
	VPMADDUBSW (P*64)(DI), Y5, Y5 \
	VPMADDUBSW (P*64+32)(DI), Y6, Y6 \
	VPBROADCASTW (P*4)(SP), Y7 \
	VPBROADCASTW (P*4+2)(SP), Y8 \
	VPMADDWD Y7, Y5, Y5 \
	VPMADDWD Y8, Y6, Y6 \
	VPADDD  Y5, Y4, Y4 \
	VPADDD  Y6, Y4, Y4

// func dotQ5_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32
// dotQ4_KQ8AVX2 for Q5_K blocks (176 bytes: d, dmin, 12 bytes of scales
// and mins, 32 bytes of fifth bits, 128 bytes of nibbles).
TEXT ·dotQ5_KQ8AVX2(SB), NOSPLIT, $16-52
	MOVQ row+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ bs+16(FP), DX
	MOVQ d+24(FP), R14
	MOVQ blocks+32(FP), CX
	MOVQ f16+40(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y15, Y15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x00010001, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL $0x10101010, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9

q5q8block:
	CMPQ CX, $0
	JE   q5q8reduce
	VBROADCASTSS (R14), Y14
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	MOVWLZX 2(SI), AX
	VBROADCASTSS (R8)(AX*4), Y11
	VMULPS Y14, Y10, Y10     // d·dx
	VMULPS Y14, Y11, Y11     // dmin·dx
	Q4K_SCALES
	VMOVQ R9, X1
	VPMOVZXBW X1, X1
	VMOVDQU X1, 0(SP)
	VMOVDQU (DX), Y2
	VPMADDWD Y12, Y2, Y2
	VMOVQ R13, X3
	VPMOVZXBD X3, Y3
	VPMULLD Y3, Y2, Y2
	VCVTDQ2PS Y2, Y2
	VFMADD231PS Y2, Y11, Y15
	VMOVDQU 16(SI), Y14      // the fifth bits
	VPXOR Y4, Y4, Y4
	LEAQ 48(SI), BX
	Q5Q8_PAIR(0, VPSLLW, 4, VPSLLW, 3)
	Q5Q8_PAIR(1, VPSLLW, 2, VPSLLW, 1)
	Q5Q8_PAIR(2, VPSLLW, 0, VPSRLW, 1)
	Q5Q8_PAIR(3, VPSRLW, 2, VPSRLW, 3)
	VCVTDQ2PS Y4, Y4
	VFMADD231PS Y4, Y10, Y0
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $4, R14
	DECQ CX
	JMP  q5q8block

q5q8reduce:
	VSUBPS Y15, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET
