//go:build !purego

#include "textflag.h"

// K4_FRAME reads the Q4_K or Q5_K block at SI (binary16 d and dmin, then
// 12 bytes of six-bit scales and mins) into the frame: d·sc for the eight
// sub-blocks as floats at 16(SP), dmin·m at 48(SP) (R8: f16Table; 0(SP)
// to 16(SP) the unpacked bytes; AX, CX, DX, R9, Y0, Y1, Y6, Y7 clobbered).
// Scales 0-3 = u0 & 0x3f…, mins 0-3 = u1 & 0x3f…; scales 4-7 = u2 & 0x0f…
// | (u0 >> 6 & 0x03…) << 4; mins 4-7 = u2 >> 4 & 0x0f… | (u1 >> 6 &
// 0x03…) << 4 (bytewise, as scalesK4).
#define K4_FRAME \
	MOVWLZX      (SI), AX \
	VBROADCASTSS (R8)(AX*4), Y6 \
	MOVWLZX      2(SI), AX \
	VBROADCASTSS (R8)(AX*4), Y7 \
	MOVL 4(SI), AX \
	MOVL 8(SI), CX \
	MOVL 12(SI), DX \
	MOVL AX, R9 \
	ANDL $0x3f3f3f3f, R9 \
	MOVL R9, 0(SP) \
	MOVL CX, R9 \
	ANDL $0x3f3f3f3f, R9 \
	MOVL R9, 8(SP) \
	SHRL $6, AX \
	ANDL $0x03030303, AX \
	SHLL $4, AX \
	MOVL DX, R9 \
	ANDL $0x0f0f0f0f, R9 \
	ORL  R9, AX \
	MOVL AX, 4(SP) \
	SHRL $6, CX \
	ANDL $0x03030303, CX \
	SHLL $4, CX \
	SHRL $4, DX \
	ANDL $0x0f0f0f0f, DX \
	ORL  DX, CX \
	MOVL CX, 12(SP) \
	VPMOVZXBD 0(SP), Y0 \
	VCVTDQ2PS Y0, Y0 \
	VMULPS    Y6, Y0, Y0 \
	VMOVUPS   Y0, 16(SP) \
	VPMOVZXBD 8(SP), Y1 \
	VCVTDQ2PS Y1, Y1 \
	VMULPS    Y7, Y1, Y1 \
	VMOVUPS   Y1, 48(SP)
#include "dot_amd64.h"

// HDOT_STEP is the rest of a step of dotF16AVX2 and dotBF16AVX2, once a
// step's 32 halves are widened into Y4–Y7: multiply-add them with the
// next 32 floats of x (DI) into Y0–Y3, advance SI and DI, loop to L while
// values remain (CX), then return the four sums added up (DOT_REDUCE).
#define HDOT_STEP(L) \
	VFMADD231PS (DI), Y4, Y0 \
	VFMADD231PS 32(DI), Y5, Y1 \
	VFMADD231PS 64(DI), Y6, Y2 \
	VFMADD231PS 96(DI), Y7, Y3 \
	ADDQ $64, SI \
	ADDQ $128, DI \
	SUBQ $32, CX \
	JNZ  L \
	DOT_REDUCE \
	VZEROUPPER \
	MOVSS X0, ret+24(FP) \
	RET

// g8ShortRow is the longest row gemv8AVX2 prefetches the next eight of.
#define g8ShortRow 512

// G8_ARGS loads gemv8's arguments: the eight rows into R8–R14 and BX, x
// into DI, k into CX, and DX (the column) to zero.
#define G8_ARGS \
	MOVQ a+0(FP), R8 \
	MOVQ lda+8(FP), AX \
	SHLQ $2, AX \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	LEAQ (R11)(AX*1), R12 \
	LEAQ (R12)(AX*1), R13 \
	LEAQ (R13)(AX*1), R14 \
	LEAQ (R14)(AX*1), BX \
	MOVQ x+16(FP), DI \
	MOVQ k+24(FP), CX \
	XORQ DX, DX

// G8_REDUCE sums the eight lanes of each of Y0–Y7 (rows 0–7) into the
// eight floats at SI (Y1, Y2: scratch).
#define G8_REDUCE \
	VHADDPS Y1, Y0, Y0 \
	VHADDPS Y3, Y2, Y2 \
	VHADDPS Y5, Y4, Y4 \
	VHADDPS Y7, Y6, Y6 \
	VHADDPS Y2, Y0, Y0 \
	VHADDPS Y6, Y4, Y4 \
	VPERM2F128 $0x20, Y4, Y0, Y1 \
	VPERM2F128 $0x31, Y4, Y0, Y2 \
	VADDPS Y2, Y1, Y1 \
	VMOVUPS Y1, (SI)

// func dotAVX2(a, b []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	DOT_ZERO

loop32:
	CMPQ CX, $32
	JL   loop8
	DOT32(SI, DI)
	SUBQ $32, CX
	JMP  loop32

loop8:
	CMPQ CX, $8
	JL   reduce
	DOT8(SI, DI)
	SUBQ $8, CX
	JMP  loop8

reduce:
	DOT_REDUCE

tail:
	CMPQ CX, $0
	JE   done
	VMOVSS (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func gemv4AVX2(a *float32, lda int, x *float32, k int, out *float32)
// out[i] = dot(a[i*lda : i*lda+k], x[:k]) for i < 4; k is a multiple of 8.
TEXT ·gemv4AVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), R8
	MOVQ lda+8(FP), AX
	SHLQ $2, AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ x+16(FP), DI
	MOVQ k+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

g4loop16:
	CMPQ CX, $16
	JL   g4loop8
	PREFETCHT0 4096(R8)
	PREFETCHT0 4096(R9)
	PREFETCHT0 4096(R10)
	PREFETCHT0 4096(R11)
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VFMADD231PS (R8), Y8, Y0
	VFMADD231PS 32(R8), Y9, Y4
	VFMADD231PS (R9), Y8, Y1
	VFMADD231PS 32(R9), Y9, Y5
	VFMADD231PS (R10), Y8, Y2
	VFMADD231PS 32(R10), Y9, Y6
	VFMADD231PS (R11), Y8, Y3
	VFMADD231PS 32(R11), Y9, Y7
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, CX
	JMP  g4loop16

g4loop8:
	CMPQ CX, $8
	JL   g4reduce
	VMOVUPS (DI), Y8
	VFMADD231PS (R8), Y8, Y0
	VFMADD231PS (R9), Y8, Y1
	VFMADD231PS (R10), Y8, Y2
	VFMADD231PS (R11), Y8, Y3

g4reduce:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X8
	VADDPS X8, X0, X0
	VEXTRACTF128 $1, Y1, X8
	VADDPS X8, X1, X1
	VEXTRACTF128 $1, Y2, X8
	VADDPS X8, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPS X8, X3, X3
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	MOVQ out+32(FP), DX
	VMOVUPS X0, (DX)
	VZEROUPPER
	RET

// func gemm3x3AVX2(a *float32, lda int, x *float32, ldx int, k int, out *float32)
// out[i*3+j] = dot(a row i, x row j) for i, j < 3 over the first k values;
// k is a multiple of 8.
TEXT ·gemm3x3AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), R8
	MOVQ lda+8(FP), AX
	SHLQ $2, AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	MOVQ x+16(FP), R11
	MOVQ ldx+24(FP), BX
	SHLQ $2, BX
	LEAQ (R11)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	MOVQ k+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8

g33loop:
	CMPQ CX, $8
	JL   g33reduce
	VMOVUPS (R11), Y9
	VMOVUPS (R12), Y10
	VMOVUPS (R13), Y11
	VMOVUPS (R8), Y12
	VFMADD231PS Y12, Y9, Y0
	VFMADD231PS Y12, Y10, Y1
	VFMADD231PS Y12, Y11, Y2
	VMOVUPS (R9), Y13
	VFMADD231PS Y13, Y9, Y3
	VFMADD231PS Y13, Y10, Y4
	VFMADD231PS Y13, Y11, Y5
	VMOVUPS (R10), Y14
	VFMADD231PS Y14, Y9, Y6
	VFMADD231PS Y14, Y10, Y7
	VFMADD231PS Y14, Y11, Y8
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	SUBQ $8, CX
	JMP  g33loop

g33reduce:
	MOVQ out+40(FP), DX
	VEXTRACTF128 $1, Y0, X9
	VADDPS X9, X0, X0
	VEXTRACTF128 $1, Y1, X9
	VADDPS X9, X1, X1
	VEXTRACTF128 $1, Y2, X9
	VADDPS X9, X2, X2
	VEXTRACTF128 $1, Y3, X9
	VADDPS X9, X3, X3
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	VMOVUPS X0, (DX)
	VEXTRACTF128 $1, Y4, X9
	VADDPS X9, X4, X4
	VEXTRACTF128 $1, Y5, X9
	VADDPS X9, X5, X5
	VEXTRACTF128 $1, Y6, X9
	VADDPS X9, X6, X6
	VEXTRACTF128 $1, Y7, X9
	VADDPS X9, X7, X7
	VHADDPS X5, X4, X4
	VHADDPS X7, X6, X6
	VHADDPS X6, X4, X4
	VMOVUPS X4, 16(DX)
	VEXTRACTF128 $1, Y8, X9
	VADDPS X9, X8, X8
	VHADDPS X8, X8, X8
	VHADDPS X8, X8, X8
	VMOVSS X8, 32(DX)
	VZEROUPPER
	RET

// func gemm4x4AVX512(a *float32, lda int, x *float32, ldx int, k int, out *float32)
// out[i*4+j] = dot(a row i, x row j) for i, j < 4 over the first k values;
// k is a multiple of 16. Only AVX-512F instructions on zmm registers.
TEXT ·gemm4x4AVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), R8
	MOVQ lda+8(FP), AX
	SHLQ $2, AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ x+16(FP), R12
	MOVQ ldx+24(FP), BX
	SHLQ $2, BX
	LEAQ (R12)(BX*1), R13
	LEAQ (R13)(BX*1), R14
	LEAQ (R14)(BX*1), SI
	MOVQ k+32(FP), CX
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	VXORPS Z8, Z8, Z8
	VXORPS Z9, Z9, Z9
	VXORPS Z10, Z10, Z10
	VXORPS Z11, Z11, Z11
	VXORPS Z12, Z12, Z12
	VXORPS Z13, Z13, Z13
	VXORPS Z14, Z14, Z14
	VXORPS Z15, Z15, Z15

g44loop:
	CMPQ CX, $16
	JL   g44reduce
	// the rows eight ahead (two tiles on), so a small batch's next rows
	// stream in from memory while this tile computes
	PREFETCHT0 (R8)(AX*8)
	PREFETCHT0 (R9)(AX*8)
	PREFETCHT0 (R10)(AX*8)
	PREFETCHT0 (R11)(AX*8)
	VMOVUPS (R12), Z16
	VMOVUPS (R13), Z17
	VMOVUPS (R14), Z18
	VMOVUPS (SI), Z19
	VMOVUPS (R8), Z20
	VFMADD231PS Z20, Z16, Z0
	VFMADD231PS Z20, Z17, Z1
	VFMADD231PS Z20, Z18, Z2
	VFMADD231PS Z20, Z19, Z3
	VMOVUPS (R9), Z21
	VFMADD231PS Z21, Z16, Z4
	VFMADD231PS Z21, Z17, Z5
	VFMADD231PS Z21, Z18, Z6
	VFMADD231PS Z21, Z19, Z7
	VMOVUPS (R10), Z22
	VFMADD231PS Z22, Z16, Z8
	VFMADD231PS Z22, Z17, Z9
	VFMADD231PS Z22, Z18, Z10
	VFMADD231PS Z22, Z19, Z11
	VMOVUPS (R11), Z23
	VFMADD231PS Z23, Z16, Z12
	VFMADD231PS Z23, Z17, Z13
	VFMADD231PS Z23, Z18, Z14
	VFMADD231PS Z23, Z19, Z15
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  g44loop

#define FOLD(z) \
	VSHUFF64X2 $0x4e, z, z, Z24 \
	VADDPS Z24, z, z \
	VSHUFF64X2 $0xb1, z, z, Z24 \
	VADDPS Z24, z, z

g44reduce:
	FOLD(Z0)
	FOLD(Z1)
	FOLD(Z2)
	FOLD(Z3)
	FOLD(Z4)
	FOLD(Z5)
	FOLD(Z6)
	FOLD(Z7)
	FOLD(Z8)
	FOLD(Z9)
	FOLD(Z10)
	FOLD(Z11)
	FOLD(Z12)
	FOLD(Z13)
	FOLD(Z14)
	FOLD(Z15)
	MOVQ out+40(FP), DX
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	VMOVUPS X0, (DX)
	VHADDPS X5, X4, X4
	VHADDPS X7, X6, X6
	VHADDPS X6, X4, X4
	VMOVUPS X4, 16(DX)
	VHADDPS X9, X8, X8
	VHADDPS X11, X10, X10
	VHADDPS X10, X8, X8
	VMOVUPS X8, 32(DX)
	VHADDPS X13, X12, X12
	VHADDPS X15, X14, X14
	VHADDPS X14, X12, X12
	VMOVUPS X12, 48(DX)
	VZEROUPPER
	RET

// func axpyAVX2(dst *float32, a float32, x *float32, n int)
// dst[i] += a*x[i] for i < n; n is a multiple of 8.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX

axloop:
	CMPQ CX, $8
	JL   axdone
	AXPY8(DI, SI, Y0)
	SUBQ $8, CX
	JMP  axloop

axdone:
	VZEROUPPER
	RET

// func dequantQ8_0AVX2(row *byte, out *float32, blocks int, f16 *float32)
// out[32b+i] = scale_b · q_b[i]: a Q8_0 row decoded to floats.
TEXT ·dequantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ row+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ f16+24(FP), R8

dqblock:
	CMPQ CX, $0
	JE   dqdone
	MOVWLZX      (SI), AX
	VBROADCASTSS (R8)(AX*4), Y5
	VPMOVSXBD    2(SI), Y6
	VPMOVSXBD    10(SI), Y7
	VPMOVSXBD    18(SI), Y8
	VPMOVSXBD    26(SI), Y9
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VCVTDQ2PS    Y8, Y8
	VCVTDQ2PS    Y9, Y9
	VMULPS       Y5, Y6, Y6
	VMULPS       Y5, Y7, Y7
	VMULPS       Y5, Y8, Y8
	VMULPS       Y5, Y9, Y9
	VMOVUPS      Y6, (DI)
	VMOVUPS      Y7, 32(DI)
	VMOVUPS      Y8, 64(DI)
	VMOVUPS      Y9, 96(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JMP          dqblock

dqdone:
	VZEROUPPER
	RET

// func packGather16AVX512(x *float32, cols int, d *float32, w int, idx *int32)
// d[p*w+l] = x[l*cols+p] for l < 16, p < cols: 16 vectors of x (rows of
// cols floats) transposed into 16 columns of d (rows of w floats), one
// gather per p. idx holds l·cols.
TEXT ·packGather16AVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ cols+8(FP), CX
	MOVQ d+16(FP), DI
	MOVQ w+24(FP), BX
	SHLQ $2, BX
	MOVQ idx+32(FP), AX
	VMOVDQU32 (AX), Z1

pgloop:
	CMPQ CX, $0
	JE   pgdone
	KXNORW K1, K1, K1
	VGATHERDPS (SI)(Z1*4), K1, Z0
	VMOVUPS Z0, (DI)
	ADDQ $4, SI
	ADDQ BX, DI
	DECQ CX
	JMP  pgloop

pgdone:
	VZEROUPPER
	RET

// func packT8AVX2(x *float32, cols int, d *float32, w int)
// d[p*w+l] = x[l*cols+p] for l < 8, p < cols (a multiple of 8): eight
// vectors of x transposed into eight columns of d, eight values of each
// at a time through an 8×8 transpose in registers (pairs interleaved,
// then pairs of pairs, then the 128-bit halves swapped).
TEXT ·packT8AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ cols+8(FP), CX
	MOVQ d+16(FP), DI
	MOVQ w+24(FP), BX
	LEAQ (CX*4), AX
	SHLQ $2, BX
	LEAQ (SI)(AX*2), R10
	ADDQ AX, R10                 // vector 3
	LEAQ (R10)(AX*2), R11
	ADDQ AX, R11                 // vector 6
	SHRQ $3, CX

ptloop:
	LEAQ (DI)(BX*2), R12
	ADDQ BX, R12                 // column 3
	LEAQ (R12)(BX*2), R13
	ADDQ BX, R13                 // column 6
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(AX*1), Y1
	VMOVUPS (SI)(AX*2), Y2
	VMOVUPS (R10), Y3
	VMOVUPS (SI)(AX*4), Y4
	VMOVUPS (R10)(AX*2), Y5
	VMOVUPS (R11), Y6
	VMOVUPS (R10)(AX*4), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(BX*1)
	VMOVUPS Y10, (DI)(BX*2)
	VMOVUPS Y11, (R12)
	VMOVUPS Y12, (DI)(BX*4)
	VMOVUPS Y13, (R12)(BX*2)
	VMOVUPS Y14, (R13)
	VMOVUPS Y15, (R12)(BX*4)
	ADDQ $32, SI
	ADDQ $32, R10
	ADDQ $32, R11
	LEAQ (DI)(BX*8), DI
	DECQ CX
	JNZ  ptloop
	VZEROUPPER
	RET

// func gemv4AVX512(a *float32, lda int, x *float32, k int, out *float32)
// out[i] = dot(a[i*lda : i*lda+k], x[:k]) for i < 4; k is a multiple of 16.
// One 64-byte load per row per step (a whole cache line), two accumulators
// a row, each row's stream prefetched 4 KiB ahead.
TEXT ·gemv4AVX512(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), R8
	MOVQ lda+8(FP), AX
	SHLQ $2, AX
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	LEAQ (R10)(AX*1), R11
	MOVQ x+16(FP), DI
	MOVQ k+24(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

g5loop32:
	CMPQ CX, $32
	JL   g5loop16
	PREFETCHT0 4096(R8)
	PREFETCHT0 4096(R9)
	PREFETCHT0 4096(R10)
	PREFETCHT0 4096(R11)
	PREFETCHT0 4160(R8)
	PREFETCHT0 4160(R9)
	PREFETCHT0 4160(R10)
	PREFETCHT0 4160(R11)
	VMOVUPS (DI), Z8
	VMOVUPS 64(DI), Z9
	VFMADD231PS (R8), Z8, Z0
	VFMADD231PS 64(R8), Z9, Z4
	VFMADD231PS (R9), Z8, Z1
	VFMADD231PS 64(R9), Z9, Z5
	VFMADD231PS (R10), Z8, Z2
	VFMADD231PS 64(R10), Z9, Z6
	VFMADD231PS (R11), Z8, Z3
	VFMADD231PS 64(R11), Z9, Z7
	ADDQ $128, DI
	ADDQ $128, R8
	ADDQ $128, R9
	ADDQ $128, R10
	ADDQ $128, R11
	SUBQ $32, CX
	JMP  g5loop32

g5loop16:
	CMPQ CX, $16
	JL   g5reduce
	VMOVUPS (DI), Z8
	VFMADD231PS (R8), Z8, Z0
	VFMADD231PS (R9), Z8, Z1
	VFMADD231PS (R10), Z8, Z2
	VFMADD231PS (R11), Z8, Z3

g5reduce:
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	VEXTRACTF32X8 $1, Z0, Y8
	VADDPS Y8, Y0, Y0
	VEXTRACTF32X8 $1, Z1, Y8
	VADDPS Y8, Y1, Y1
	VEXTRACTF32X8 $1, Z2, Y8
	VADDPS Y8, Y2, Y2
	VEXTRACTF32X8 $1, Z3, Y8
	VADDPS Y8, Y3, Y3
	VEXTRACTF128 $1, Y0, X8
	VADDPS X8, X0, X0
	VEXTRACTF128 $1, Y1, X8
	VADDPS X8, X1, X1
	VEXTRACTF128 $1, Y2, X8
	VADDPS X8, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPS X8, X3, X3
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	MOVQ out+32(FP), DX
	VMOVUPS X0, (DX)
	VZEROUPPER
	RET

// func dequantQ8KAVX2(q *int8, d *float32, out *float32, blocks int)
// out[i] = d[i/256]·q[i]: x quantized for the K-quant kernels, back to
// floats.
TEXT ·dequantQ8KAVX2(SB), NOSPLIT, $0-32
	MOVQ q+0(FP), SI
	MOVQ d+8(FP), R8
	MOVQ out+16(FP), DI
	MOVQ blocks+24(FP), CX

q8kblock:
	CMPQ         CX, $0
	JE           q8kdone
	VBROADCASTSS (R8), Y5
	MOVQ         $32, DX

q8kgroup:
	VPMOVSXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMULPS    Y5, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $8, SI
	ADDQ      $32, DI
	DECQ      DX
	JNE       q8kgroup
	ADDQ      $4, R8
	DECQ      CX
	JMP       q8kblock

q8kdone:
	VZEROUPPER
	RET

// func dequantQ6KAVX2(b *byte, ds *float32, y *float32)
// One Q6_K block's 256 values: value = (low nibble of ql | two bits of qh
// << 4) − 32, times ds[k] = d·scale_k (then · q, as quant.Dequantize
// rounds). Each half of the block: 64 bytes of ql, 32 of qh, 8 scales.
TEXT ·dequantQ6KAVX2(SB), NOSPLIT, $0-24
	MOVQ b+0(FP), SI
	LEAQ 128(SI), BX
	MOVQ ds+8(FP), R8
	MOVQ y+16(FP), DI
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $28, Y15, Y15
	VPCMPEQD Y14, Y14, Y14
	VPSRLD   $30, Y14, Y14
	VPCMPEQD Y13, Y13, Y13
	VPSRLD   $31, Y13, Y13
	VPSLLD   $5, Y13, Y13
	MOVQ     $2, CX

q6khalf:
	MOVQ $2, R9

q6kscale:
	VBROADCASTSS (R8), Y9
	VBROADCASTSS 8(R8), Y10
	VBROADCASTSS 16(R8), Y11
	VBROADCASTSS 24(R8), Y12
	MOVQ         $2, DX

q6kgroup:
	VPMOVZXBD (SI), Y0
	VPMOVZXBD 32(SI), Y1
	VPMOVZXBD (BX), Y2
	VPAND     Y15, Y0, Y3
	VPAND     Y14, Y2, Y4
	VPSLLD    $4, Y4, Y4
	VPOR      Y4, Y3, Y3
	VPSUBD    Y13, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VMULPS    Y9, Y3, Y3
	VMOVUPS   Y3, (DI)
	VPAND     Y15, Y1, Y3
	VPSRLD    $2, Y2, Y4
	VPAND     Y14, Y4, Y4
	VPSLLD    $4, Y4, Y4
	VPOR      Y4, Y3, Y3
	VPSUBD    Y13, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VMULPS    Y10, Y3, Y3
	VMOVUPS   Y3, 128(DI)
	VPSRLD    $4, Y0, Y3
	VPSRLD    $4, Y2, Y4
	VPAND     Y14, Y4, Y4
	VPSLLD    $4, Y4, Y4
	VPOR      Y4, Y3, Y3
	VPSUBD    Y13, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VMULPS    Y11, Y3, Y3
	VMOVUPS   Y3, 256(DI)
	VPSRLD    $4, Y1, Y3
	VPSRLD    $6, Y2, Y4
	VPSLLD    $4, Y4, Y4
	VPOR      Y4, Y3, Y3
	VPSUBD    Y13, Y3, Y3
	VCVTDQ2PS Y3, Y3
	VMULPS    Y12, Y3, Y3
	VMOVUPS   Y3, 384(DI)
	ADDQ      $8, SI
	ADDQ      $8, BX
	ADDQ      $32, DI
	DECQ      DX
	JNE       q6kgroup
	ADDQ      $4, R8
	DECQ      R9
	JNE       q6kscale
	ADDQ      $32, SI
	ADDQ      $384, DI
	ADDQ      $24, R8
	DECQ      CX
	JNE       q6khalf
	VZEROUPPER
	RET

// func gemv8AVX512(a *float32, lda int, x *float32, k int, out *float32)
// out[i] = dot(a[i*lda : i*lda+k], x[:k]) for i < 8; k a multiple of 16.
TEXT ·gemv8AVX512(SB), NOSPLIT, $0-40
	G8_ARGS
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

g8loop:
	CMPQ DX, CX
	JGE  g8reduce
	VMOVUPS (DI)(DX*4), Z8
	VFMADD231PS (R8)(DX*4), Z8, Z0
	VFMADD231PS (R9)(DX*4), Z8, Z1
	VFMADD231PS (R10)(DX*4), Z8, Z2
	VFMADD231PS (R11)(DX*4), Z8, Z3
	VFMADD231PS (R12)(DX*4), Z8, Z4
	VFMADD231PS (R13)(DX*4), Z8, Z5
	VFMADD231PS (R14)(DX*4), Z8, Z6
	VFMADD231PS (BX)(DX*4), Z8, Z7
	ADDQ $16, DX
	JMP  g8loop

g8reduce:
	MOVQ out+32(FP), SI
	VEXTRACTF32X8 $1, Z0, Y8
	VADDPS Y8, Y0, Y0
	VEXTRACTF32X8 $1, Z1, Y8
	VADDPS Y8, Y1, Y1
	VEXTRACTF32X8 $1, Z2, Y8
	VADDPS Y8, Y2, Y2
	VEXTRACTF32X8 $1, Z3, Y8
	VADDPS Y8, Y3, Y3
	VEXTRACTF32X8 $1, Z4, Y8
	VADDPS Y8, Y4, Y4
	VEXTRACTF32X8 $1, Z5, Y8
	VADDPS Y8, Y5, Y5
	VEXTRACTF32X8 $1, Z6, Y8
	VADDPS Y8, Y6, Y6
	VEXTRACTF32X8 $1, Z7, Y8
	VADDPS Y8, Y7, Y7
	G8_REDUCE
	VZEROUPPER
	RET

// G8Y_STEP multiplies the next sixteen columns of gemv8AVX2's eight rows
// (a cache line of each) by x's and adds them to the rows' sums.
#define G8Y_STEP \
	VMOVUPS (DI)(DX*4), Y8 \
	VMOVUPS 32(DI)(DX*4), Y9 \
	VFMADD231PS (R8)(DX*4), Y8, Y0 \
	VFMADD231PS (R9)(DX*4), Y8, Y1 \
	VFMADD231PS (R10)(DX*4), Y8, Y2 \
	VFMADD231PS (R11)(DX*4), Y8, Y3 \
	VFMADD231PS (R12)(DX*4), Y8, Y4 \
	VFMADD231PS (R13)(DX*4), Y8, Y5 \
	VFMADD231PS (R14)(DX*4), Y8, Y6 \
	VFMADD231PS (BX)(DX*4), Y8, Y7 \
	VFMADD231PS 32(R8)(DX*4), Y9, Y0 \
	VFMADD231PS 32(R9)(DX*4), Y9, Y1 \
	VFMADD231PS 32(R10)(DX*4), Y9, Y2 \
	VFMADD231PS 32(R11)(DX*4), Y9, Y3 \
	VFMADD231PS 32(R12)(DX*4), Y9, Y4 \
	VFMADD231PS 32(R13)(DX*4), Y9, Y5 \
	VFMADD231PS 32(R14)(DX*4), Y9, Y6 \
	VFMADD231PS 32(BX)(DX*4), Y9, Y7 \
	ADDQ $16, DX

// func gemv8AVX2(a *float32, lda int, x *float32, k int, out *float32)
// out[i] = dot(a[i*lda : i*lda+k], x[:k]) for i < 8; k a multiple of 16:
// eight rows streamed at once, a cache line of each per step. Rows of at
// most g8ShortRow floats also prefetch the next eight rows, a line for
// each line read, in the order a matrix of rows lda = k apart holds them
// (a prefetch never faults, wherever the rows are): eight such rows are
// streams too short for the CPU's prefetcher to learn before they end.
TEXT ·gemv8AVX2(SB), NOSPLIT, $0-40
	G8_ARGS
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ CX, $g8ShortRow
	JG   g8ylong
	LEAQ (R8)(AX*8), SI

g8yshort:
	PREFETCHT0 0(SI)
	PREFETCHT0 64(SI)
	PREFETCHT0 128(SI)
	PREFETCHT0 192(SI)
	PREFETCHT0 256(SI)
	PREFETCHT0 320(SI)
	PREFETCHT0 384(SI)
	PREFETCHT0 448(SI)
	ADDQ $512, SI
	G8Y_STEP
	CMPQ DX, CX
	JL   g8yshort
	JMP  g8ydone

g8ylong:
	G8Y_STEP
	CMPQ DX, CX
	JL   g8ylong

g8ydone:
	MOVQ out+32(FP), SI
	G8_REDUCE
	VZEROUPPER
	RET

// func dequantQ4KRowAVX2(raw *byte, blocks int, y *float32, f16 *float32)
// Whole Q4_K blocks (144 bytes: d, dmin, 12 bytes of six-bit scales and
// mins, 128 bytes of nibbles) to floats, y = d·sc·q − dmin·m per
// sub-block, as quant.Dequantize rounds. The scales are unpacked four at
// a time in 32-bit registers and scaled as vectors into the frame (d·sc
// at 16(SP), dmin·m at 48(SP)), from which the nibble loop broadcasts
// them for each pair of sub-blocks.
TEXT ·dequantQ4KRowAVX2(SB), NOSPLIT, $80-32
	MOVQ     raw+0(FP), SI
	MOVQ     blocks+8(FP), BX
	MOVQ     y+16(FP), DI
	MOVQ     f16+24(FP), R8
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $28, Y15, Y15

q4krow:
	CMPQ         BX, $0
	JE           q4krowdone
	K4_FRAME

	LEAQ 16(SP), R13
	LEAQ 16(SI), R14
	MOVQ $4, CX

q4krowpair:
	VBROADCASTSS (R13), Y11
	VBROADCASTSS 32(R13), Y12
	VBROADCASTSS 4(R13), Y13
	VBROADCASTSS 36(R13), Y14
	MOVQ         $4, DX

q4krowgroup:
	VPMOVZXBD (R14), Y0
	VPAND     Y15, Y0, Y1
	VPSRLD    $4, Y0, Y2
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VMULPS    Y11, Y1, Y1
	VSUBPS    Y12, Y1, Y1
	VMULPS    Y13, Y2, Y2
	VSUBPS    Y14, Y2, Y2
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, 128(DI)
	ADDQ      $8, R14
	ADDQ      $32, DI
	DECQ      DX
	JNE       q4krowgroup
	ADDQ      $128, DI
	ADDQ      $8, R13
	DECQ      CX
	JNE       q4krowpair

	ADDQ $144, SI
	DECQ BX
	JMP  q4krow

q4krowdone:
	VZEROUPPER
	RET

// func dequantQ5KRowAVX2(raw *byte, blocks int, y *float32, f16 *float32)
// Whole Q5_K blocks (176 bytes: d, dmin, 12 bytes of six-bit scales and
// mins, 32 bytes of fifth bits, 128 bytes of nibbles) to floats,
// y = d·sc·(q + 16·h) − dmin·m per sub-block, as quant.Dequantize rounds
// (q + 16·h is exact, so the sum is an OR before the conversion). The
// scales go through the frame as dequantQ4KRowAVX2's do; sub-block j's
// fifth bits are bit j of the 32 bytes, shifted down by X10 (2·pair) for
// the even one of a pair and one more for the odd one.
TEXT ·dequantQ5KRowAVX2(SB), NOSPLIT, $80-32
	MOVQ     raw+0(FP), SI
	MOVQ     blocks+8(FP), BX
	MOVQ     y+16(FP), DI
	MOVQ     f16+24(FP), R8
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $31, Y15, Y9
	VPSRLD   $28, Y15, Y15

q5krow:
	CMPQ         BX, $0
	JE           q5krowdone
	K4_FRAME

	LEAQ 16(SP), R13
	LEAQ 48(SI), R14
	XORQ R10, R10
	MOVQ $4, CX

q5krowpair:
	VBROADCASTSS (R13), Y11
	VBROADCASTSS 32(R13), Y12
	VBROADCASTSS 4(R13), Y13
	VBROADCASTSS 36(R13), Y14
	VMOVQ        R10, X10
	LEAQ         16(SI), R12
	MOVQ         $4, DX

q5krowgroup:
	VPMOVZXBD (R14), Y0
	VPMOVZXBD (R12), Y3
	VPSRLD    X10, Y3, Y3
	VPAND     Y9, Y3, Y4
	VPSRLD    $1, Y3, Y5
	VPAND     Y9, Y5, Y5
	VPSLLD    $4, Y4, Y4
	VPSLLD    $4, Y5, Y5
	VPAND     Y15, Y0, Y1
	VPSRLD    $4, Y0, Y2
	VPOR      Y4, Y1, Y1
	VPOR      Y5, Y2, Y2
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VMULPS    Y11, Y1, Y1
	VSUBPS    Y12, Y1, Y1
	VMULPS    Y13, Y2, Y2
	VSUBPS    Y14, Y2, Y2
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, 128(DI)
	ADDQ      $8, R14
	ADDQ      $8, R12
	ADDQ      $32, DI
	DECQ      DX
	JNE       q5krowgroup
	ADDQ      $128, DI
	ADDQ      $8, R13
	ADDQ      $2, R10
	DECQ      CX
	JNE       q5krowpair

	ADDQ $176, SI
	DECQ BX
	JMP  q5krow

q5krowdone:
	VZEROUPPER
	RET

// func dotF16AVX2(row *byte, x *float32, n int) float32
// The dot product of n binary16 values (a positive multiple of 32) with
// n floats: F16C widens eight halves at a time.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16dot:
	VCVTPH2PS (SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	HDOT_STEP(f16dot)

// func f16ToF32AVX2(src *byte, dst *float32, n int)
// Widens n binary16 values (a positive multiple of 8) to floats.
TEXT ·f16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX

f16wide:
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  f16wide
	VZEROUPPER
	RET

// func dotBF16AVX2(row *byte, x *float32, n int) float32
// A bfloat16 row times x over n values (a multiple of 32): each half
// widened to float32 exactly (its bits shifted into the top 16), then
// multiply-added as dotF16AVX2 does, four accumulators.
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ row+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf16dot:
	VPMOVZXWD (SI), Y4
	VPMOVZXWD 16(SI), Y5
	VPMOVZXWD 32(SI), Y6
	VPMOVZXWD 48(SI), Y7
	VPSLLD $16, Y4, Y4
	VPSLLD $16, Y5, Y5
	VPSLLD $16, Y6, Y6
	VPSLLD $16, Y7, Y7
	HDOT_STEP(bf16dot)

// func bf16ToF32AVX2(src *byte, dst *float32, n int)
// n bfloat16 values (a multiple of 8) to float32, exactly.
TEXT ·bf16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX

bf16wide:
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  bf16wide
	VZEROUPPER
	RET
