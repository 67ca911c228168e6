//go:build !purego

#include "textflag.h"
#include "q4kscales_amd64.h"
#include "lanes_amd64.h"

// The AVX2 K-quant kernels for several vectors at once (no VNNI): a row
// times a group of eight vectors quantized to int8 (q8K), each vector's
// result the one-vector kernel's bit for bit (dotQ4_KQ8AVX2,
// dotQ6_KQ8AVX2, and so the VNNI lane kernels'). The row's values are
// unpacked once per block for the eight vectors; per vector and 32
// values one VPMADDUBSW (values unsigned, x signed), one VPMADDWD by the
// sub-block's scale broadcast, and one add into the vector's int32
// lanes, which are added up across registers (SUM4X2) once per block.
// The vectors are read in place, qstride bytes apart (their sums over
// 16 values bstride apart); their d come from dx, eight per block.

// KV_ACC adds Σ over 32 values of U·x (x at OFF X), scaled by the int16
// S and summed in pairs, to ACC (T: scratch).
#define KV_ACC(U, S, OFF, X, ACC, T) \
	VPMADDUBSW OFF X, U, T \
	VPMADDWD S, T, T \
	VPADDD T, ACC, ACC

// KV8 does KV_ACC for the eight vectors (XV(DI, AX, R10, R11)), their
// sums in Y4–Y11.
#define KV8(U, S, OFF, T) \
	KV_ACC(U, S, OFF, (DI), Y4, T) \
	KV_ACC(U, S, OFF, (DI)(AX*1), Y5, T) \
	KV_ACC(U, S, OFF, (DI)(AX*2), Y6, T) \
	KV_ACC(U, S, OFF, (R10), Y7, T) \
	KV_ACC(U, S, OFF, (DI)(AX*4), Y8, T) \
	KV_ACC(U, S, OFF, (R10)(AX*2), Y9, T) \
	KV_ACC(U, S, OFF, (R11), Y10, T) \
	KV_ACC(U, S, OFF, (R10)(AX*4), Y11, T)

// SUM8 adds up the eight int32 lanes of each of Y4–Y11 (vectors 0–7)
// into OUT, vector v's sum in lane v (T: scratch, not one of Y4–Y11).
#define SUM8(OUT, T) \
	SUM4X2(Y4, Y5, Y6, Y7, T) \
	SUM4X2(Y8, Y9, Y10, Y11, T) \
	VPERM2I128 $0x20, Y8, Y4, T \
	VPERM2I128 $0x31, Y8, Y4, OUT \
	VPADDD T, OUT, OUT

// ZERO8 clears Y4–Y11.
#define ZERO8 \
	VPXOR Y4, Y4, Y4 \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// KV_ARGS loads the arguments the kernels share: the first row into R12
// (the rows left to the frame at N(SP)), the vectors into R14 (their
// sums R15), out into DX.
#define KV_ARGS(N) \
	MOVQ row+0(FP), R12 \
	MOVQ rows+16(FP), AX \
	MOVQ AX, N(SP) \
	MOVQ q+24(FP), R14 \
	MOVQ bs+40(FP), R15 \
	MOVQ out+80(FP), DX

// KV_ROW sets up the row at R12: SI its first block, DI the vectors'
// first block, BX their sums', R9 their d, CX the blocks, and the
// results Y12 and Y13 to zero.
#define KV_ROW \
	MOVQ R12, SI \
	MOVQ R14, DI \
	MOVQ R15, BX \
	MOVQ dx+56(FP), R9 \
	MOVQ blocks+64(FP), CX \
	VXORPS Y12, Y12, Y12 \
	VXORPS Y13, Y13, Y13

// KV_BS8 sets Y4–Y11 to the eight vectors' sums over 16 values at BX
// (stride bstride) times S in pairs (R8: scratch, DI kept).
#define KV_BS8(S) \
	MOVQ bstride+48(FP), AX \
	MOVQ DI, R8 \
	MOVQ BX, DI \
	XV(DI, AX, R10, R11) \
	VPMADDWD (DI), S, Y4 \
	VPMADDWD (DI)(AX*1), S, Y5 \
	VPMADDWD (DI)(AX*2), S, Y6 \
	VPMADDWD (R10), S, Y7 \
	VPMADDWD (DI)(AX*4), S, Y8 \
	VPMADDWD (R10)(AX*2), S, Y9 \
	VPMADDWD (R11), S, Y10 \
	VPMADDWD (R10)(AX*4), S, Y11 \
	MOVQ R8, DI

// Q4V8_PAIR multiplies pair P of a Q4_K block's sub-blocks (32 bytes of
// nibbles at SI+16+32P: the low ones sub-block 2P, the high ones 2P+1)
// with the eight vectors' values 64P on, each sub-block scaled by its
// int16 scale at 32+2j(SP) (Y15: 0x0f bytes; Y14: scratch).
#define Q4V8_PAIR(P) \
	VMOVDQU (16+32*P)(SI), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTW (32+4*P)(SP), Y2 \
	VPBROADCASTW (34+4*P)(SP), Y3 \
	KV8(Y0, Y2, (64*P), Y14) \
	KV8(Y1, Y3, (64*P+32), Y14)

// func dotQ4_KQ8v8AVX2(row *byte, rb int, rows int, q *int8, qstride int, bs *int16, bstride int, dx *float32, blocks int, f16 *float32, out *float32, ostride int, lanes int)
// Rows Q4_K rows (rb bytes apart) times eight vectors: per block
// acc = fma(Σ_j sc_j·(q·qx), d·dx, acc) and accm = fma(Σ_j m_j·(Σ qx
// over sub-block j), dmin·dx, accm), the result acc − accm; row r's for
// vector v to byte v·ostride + 4r of out, for the first lanes vectors.
// blocks > 0, rows > 0.
TEXT ·dotQ4_KQ8v8AVX2(SB), NOSPLIT, $56-104
	KV_ARGS(48)

q4v8row:
	KV_ROW

q4v8blk:
	Q4K_SCALES_AT(SI, R8, R13, R10, R11, AX) // R8 the scales, R13 the mins (bytes)
	VMOVQ R8, X0
	VPMOVZXBW X0, X0
	VMOVDQU X0, 32(SP)             // the scales as int16
	VMOVQ R13, X0
	VPMOVZXBW X0, X0
	VPUNPCKLWD X0, X0, X1
	VPUNPCKHWD X0, X0, X0
	VINSERTI128 $1, X0, Y1, Y1     // each min twice: the sums of qx are over 16
	VMOVDQU Y1, 0(SP)
	MOVQ qstride+32(FP), AX
	XV(DI, AX, R10, R11)
	ZERO8
	MOVL $0x0f0f0f0f, R8
	VMOVD R8, X15
	VPBROADCASTD X15, Y15
	Q4V8_PAIR(0)
	Q4V8_PAIR(1)
	Q4V8_PAIR(2)
	Q4V8_PAIR(3)
	SUM8(Y14, Y15)                 // Σ_j sc_j·(q·qx), vector v in lane v
	VMOVDQU 0(SP), Y15
	KV_BS8(Y15)
	SUM8(Y15, Y0)                  // Σ_j m_j·(Σ qx over sub-block j)
	VCVTDQ2PS Y14, Y14
	VCVTDQ2PS Y15, Y15
	MOVQ f16+72(FP), R8
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y4
	MOVWLZX 2(SI), AX
	VBROADCASTSS (R8)(AX*4), Y5
	VMULPS (R9), Y4, Y4            // d·dx
	VMULPS (R9), Y5, Y5            // dmin·dx
	VFMADD231PS Y14, Y4, Y12
	VFMADD231PS Y15, Y5, Y13
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, R9
	DECQ CX
	JNZ  q4v8blk

	VSUBPS Y13, Y12, Y0
	STORE_LANES8(Y0, DX, ostride+88(FP), lanes+96(FP), R10, AX, R11, q4v8store)
	ADDQ $4, DX
	ADDQ rb+8(FP), R12
	DECQ 48(SP)
	JNZ  q4v8row
	VZEROUPPER
	RET

// Q6V8_MUL multiplies quarter G of half H of a Q6_K block (its 32
// six-bit values in Y0) with the eight vectors' values 128H+32G on, the
// low 16 scaled by sub-block 8H+2G's int16 scale at 2(8H+2G)(SP), the
// high 16 by the next (Y3, Y12: scratch).
#define Q6V8_MUL(H, G) \
	VPBROADCASTW (16*H+4*G)(SP), X3 \
	VPBROADCASTW (16*H+4*G+2)(SP), X12 \
	VINSERTI128 $1, X12, Y3, Y3 \
	KV8(Y0, Y3, (128*H+32*G), Y12)

// Q6V8_HALF does the 128 values of half H of the Q6_K block at SI: the
// low four bits from ql (SI+64H on), the high two from qh (SI+128+32H)
// (Y14: 0x0f bytes, Y15: 0x30 bytes; Y1: scratch).
#define Q6V8_HALF(H) \
	VMOVDQU (64*H)(SI), Y0 \
	VPAND Y14, Y0, Y0 \
	VMOVDQU (128+32*H)(SI), Y1 \
	VPSLLW $4, Y1, Y1 \
	VPAND Y15, Y1, Y1 \
	VPOR Y1, Y0, Y0 \
	Q6V8_MUL(H, 0) \
	VMOVDQU (64*H+32)(SI), Y0 \
	VPAND Y14, Y0, Y0 \
	VMOVDQU (128+32*H)(SI), Y1 \
	VPSLLW $2, Y1, Y1 \
	VPAND Y15, Y1, Y1 \
	VPOR Y1, Y0, Y0 \
	Q6V8_MUL(H, 1) \
	VMOVDQU (64*H)(SI), Y0 \
	VPSRLW $4, Y0, Y0 \
	VPAND Y14, Y0, Y0 \
	VPAND (128+32*H)(SI), Y15, Y1 \
	VPOR Y1, Y0, Y0 \
	Q6V8_MUL(H, 2) \
	VMOVDQU (64*H+32)(SI), Y0 \
	VPSRLW $4, Y0, Y0 \
	VPAND Y14, Y0, Y0 \
	VMOVDQU (128+32*H)(SI), Y1 \
	VPSRLW $2, Y1, Y1 \
	VPAND Y15, Y1, Y1 \
	VPOR Y1, Y0, Y0 \
	Q6V8_MUL(H, 3)

// func dotQ6_KQ8v8AVX2(row *byte, rb int, rows int, q *int8, qstride int, bs *int16, bstride int, dx *float32, blocks int, f16 *float32, out *float32, ostride int, lanes int)
// Rows Q6_K rows (rb bytes apart) times eight vectors: per block
// acc = fma(Σ_s sc_s·(Σ q·qx − 32·Σ qx), d·dx, acc) over its sixteen
// sub-blocks of 16 values; row r's result for vector v to byte
// v·ostride + 4r of out, for the first lanes vectors. blocks > 0,
// rows > 0.
TEXT ·dotQ6_KQ8v8AVX2(SB), NOSPLIT, $72-104
	KV_ARGS(64)
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x30303030, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

q6v8row:
	KV_ROW
	VXORPS Y2, Y2, Y2

q6v8blk:
	VPMOVSXBW 192(SI), Y0
	VMOVDQU Y0, 0(SP)              // the sixteen scales as int16
	MOVQ qstride+32(FP), AX
	XV(DI, AX, R10, R11)
	ZERO8
	Q6V8_HALF(0)
	Q6V8_HALF(1)
	SUM8(Y13, Y0)                  // Σ_s sc_s·(Σ q·qx), vector v in lane v
	VMOVDQU 0(SP), Y12
	KV_BS8(Y12)
	SUM8(Y12, Y0)                  // Σ_s sc_s·(Σ qx)
	VPSLLD $5, Y12, Y12
	VPSUBD Y12, Y13, Y13
	VCVTDQ2PS Y13, Y13
	MOVQ f16+72(FP), R8
	MOVWLZX 208(SI), AX
	VBROADCASTSS (R8)(AX*4), Y3
	VMULPS (R9), Y3, Y3            // d·dx
	VFMADD231PS Y13, Y3, Y2
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $32, R9
	DECQ CX
	JNZ  q6v8blk

	STORE_LANES8(Y2, DX, ostride+88(FP), lanes+96(FP), R10, AX, R11, q6v8store)
	ADDQ $4, DX
	ADDQ rb+8(FP), R12
	DECQ 64(SP)
	JNZ  q6v8row
	VZEROUPPER
	RET

// Q4R_ROW multiplies the Q4_K block of the row at R with x (DI) into
// S (Σ_j sc_j·(q·qx), eight lanes) and M (Σ_j m_j·(Σ qx over sub-block
// j), eight lanes): the scales unpacked into the frame's first 16 bytes
// as int16, each min twice against x's sums over 16 (BX) (R8, R9, R13,
// R14, AX; Y0–Y3, Y12, Y13: scratch; Y15: 0x0f bytes).
#define Q4R_ROW(R, S, M) \
	Q4K_SCALES_AT(R, R8, R9, R13, R14, AX) \
	VMOVQ R8, X0 \
	VPMOVZXBW X0, X0 \
	VMOVDQU X0, 0(SP) \
	VMOVQ R9, X0 \
	VPMOVZXBW X0, X0 \
	VPUNPCKLWD X0, X0, X1 \
	VPUNPCKHWD X0, X0, X0 \
	VINSERTI128 $1, X0, Y1, Y1 \
	VPMADDWD (BX), Y1, M \
	VPXOR S, S, S \
	Q4R_PAIR(R, 0, S) \
	Q4R_PAIR(R, 1, S) \
	Q4R_PAIR(R, 2, S) \
	Q4R_PAIR(R, 3, S)

// Q4R_PAIR adds pair P of the row's sub-blocks (nibbles at R+16+32P)
// times x's values 64P on, each sub-block scaled by its int16 scale in
// the frame, to S.
#define Q4R_PAIR(R, P, S) \
	VMOVDQU (16+32*P)(R), Y0 \
	VPSRLW $4, Y0, Y1 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPBROADCASTW (4*P)(SP), Y2 \
	VPBROADCASTW (4*P+2)(SP), Y3 \
	KV_ACC(Y0, Y2, (64*P), (DI), S, Y12) \
	KV_ACC(Y1, Y3, (64*P+32), (DI), S, Y12)

// func dotQ4_KQ8r4AVX2(row *byte, stride int, q *int8, bs *int16, d *float32, blocks int, out *float32)
// Four Q4_K rows (stride bytes apart) times one vector quantized to int8
// (q, its sums over 16 bs, its scales d): out[0..3], each row's result
// dotQ4_KQ8AVX2's bit for bit. Per block the rows' two integer sums (eight
// lanes each) are added up across registers together (SUM8: the four
// rows' Σ sc·(q·qx) then their mins' sums), so one FMA a block fuses all
// eight into acc (lanes 0–3) and accm (4–7). blocks > 0.
TEXT ·dotQ4_KQ8r4AVX2(SB), NOSPLIT, $16-56
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ q+16(FP), DI
	MOVQ bs+24(FP), BX
	MOVQ d+32(FP), DX
	MOVQ blocks+40(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y14, Y14, Y14

q4r4blk:
	PREFETCHT0 512(SI)
	PREFETCHT0 512(R10)
	PREFETCHT0 512(R11)
	PREFETCHT0 512(R12)
	Q4R_ROW(SI, Y4, Y8)
	Q4R_ROW(R10, Y5, Y9)
	Q4R_ROW(R11, Y6, Y10)
	Q4R_ROW(R12, Y7, Y11)
	SUM8(Y13, Y0)                 // Σ sc·(q·qx) rows 0–3, then the mins' sums
	VCVTDQ2PS Y13, Y13
	MOVWLZX (SI), AX
	VMOVD AX, X0
	VPINSRW $1, (R10), X0, X0
	VPINSRW $2, (R11), X0, X0
	VPINSRW $3, (R12), X0, X0
	VPINSRW $4, 2(SI), X0, X0
	VPINSRW $5, 2(R10), X0, X0
	VPINSRW $6, 2(R11), X0, X0
	VPINSRW $7, 2(R12), X0, X0
	VCVTPH2PS X0, Y0              // d rows 0–3, dmin rows 0–3
	VBROADCASTSS (DX), Y1
	VMULPS Y1, Y0, Y0
	VFMADD231PS Y13, Y0, Y14
	ROWS4_NEXT(144)
	ADDQ $256, DI
	ADDQ $32, BX
	ADDQ $4, DX
	DECQ CX
	JNZ  q4r4blk
	VEXTRACTF128 $1, Y14, X1
	VSUBPS X1, X14, X14
	MOVQ out+48(FP), DI
	VMOVUPS X14, (DI)
	VZEROUPPER
	RET
