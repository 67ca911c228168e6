//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The AVX2 Q4_K kernel for a tile of eight rows (repackQ4KR8) times eight
// vectors. A register holds a group of four values of all eight rows, so
// a vector's four values, broadcast, meet the eight rows at once, each
// row's sums in its own lanes; and as the values are 4-bit, the eight
// groups' products of a sub-block (each pair ≤ 2·15·127) add up in 16
// bits before one VPMADDWD by the rows' scales widens them: per vector
// and sub-block 8 VPMADDUBSW, 7 VPADDW, 1 VPMADDWD and 1 VPADDD for
// eight rows' 32 values, where the kernel over the matrix
// (dotQ4_KQ8v8AVX2) spends a VPMADDUBSW, a VPMADDWD and a VPADDD on one
// row's, and no sums are added up across lanes. Each result is the
// one-vector kernel's bit for bit.

// Q4T_SUB unpacks sub-block J of the tile's block at SI into Y0–Y7 (its
// eight groups of four values, eight rows each) (Y15: 0x0f bytes).
#define Q4T_SUB(J) \
	VMOVDQU (128*J)(SI), Y0 \
	VMOVDQU (128*J+32)(SI), Y1 \
	VMOVDQU (128*J+64)(SI), Y2 \
	VMOVDQU (128*J+96)(SI), Y3 \
	VPSRLW $4, Y0, Y4 \
	VPSRLW $4, Y1, Y5 \
	VPSRLW $4, Y2, Y6 \
	VPSRLW $4, Y3, Y7 \
	VPAND Y15, Y0, Y0 \
	VPAND Y15, Y1, Y1 \
	VPAND Y15, Y2, Y2 \
	VPAND Y15, Y3, Y3 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPAND Y15, Y6, Y6 \
	VPAND Y15, Y7, Y7

// Q4T_G sets T to group G of sub-block J (its eight rows in Q) times
// the vector's four values there (at X, broadcast), in pairs.
#define Q4T_G(J, G, X, Q, T) \
	VPBROADCASTD (32*J+4*G)X, T \
	VPMADDUBSW T, Q, T

// Q4T_VEC2 adds Σ_rows sc_j·(q·x over sub-block J) for two vectors, whose
// values are at XA and XB (the block's), to their eight row sums in the
// frame at 32VA and 32VB (Y8–Y14: scratch). Each vector's eight groups'
// pairs add up in 16 bits as a tree (two groups, then two pairs, then the
// halves), the two vectors' steps interleaved, so no chain of adds waits
// on the one before: the sums are exact in any order (eight pairs of
// 2·15·127 at most stay within 16 bits).
#define Q4T_VEC2(J, XA, VA, XB, VB) \
	Q4T_G(J, 0, XA, Y0, Y8) \
	Q4T_G(J, 0, XB, Y0, Y11) \
	Q4T_G(J, 1, XA, Y1, Y9) \
	Q4T_G(J, 1, XB, Y1, Y12) \
	VPADDW Y9, Y8, Y8 \
	VPADDW Y12, Y11, Y11 \
	Q4T_G(J, 2, XA, Y2, Y9) \
	Q4T_G(J, 2, XB, Y2, Y12) \
	Q4T_G(J, 3, XA, Y3, Y10) \
	Q4T_G(J, 3, XB, Y3, Y13) \
	VPADDW Y10, Y9, Y9 \
	VPADDW Y13, Y12, Y12 \
	VPADDW Y9, Y8, Y8 \
	VPADDW Y12, Y11, Y11 \
	Q4T_G(J, 4, XA, Y4, Y9) \
	Q4T_G(J, 4, XB, Y4, Y12) \
	Q4T_G(J, 5, XA, Y5, Y10) \
	Q4T_G(J, 5, XB, Y5, Y13) \
	VPADDW Y10, Y9, Y9 \
	VPADDW Y13, Y12, Y12 \
	Q4T_G(J, 6, XA, Y6, Y10) \
	Q4T_G(J, 7, XA, Y7, Y14) \
	VPADDW Y14, Y10, Y10 \
	Q4T_G(J, 6, XB, Y6, Y13) \
	Q4T_G(J, 7, XB, Y7, Y14) \
	VPADDW Y14, Y13, Y13 \
	VPADDW Y10, Y9, Y9 \
	VPADDW Y13, Y12, Y12 \
	VPADDW Y9, Y8, Y8 \
	VPADDW Y12, Y11, Y11 \
	VPMADDWD (1024+32*J)(SI), Y8, Y8 \
	VPMADDWD (1024+32*J)(SI), Y11, Y11 \
	VPADDD (32*VA)(SP), Y8, Y8 \
	VPADDD (32*VB)(SP), Y11, Y11 \
	VMOVDQU Y8, (32*VA)(SP) \
	VMOVDQU Y11, (32*VB)(SP)

// Q4T_J does sub-block J for the eight vectors (XV(DI, AX, R10, R11)),
// two at a time.
#define Q4T_J(J) \
	Q4T_SUB(J) \
	Q4T_VEC2(J, (DI), 0, (DI)(AX*1), 1) \
	Q4T_VEC2(J, (DI)(AX*2), 2, (R10), 3) \
	Q4T_VEC2(J, (DI)(AX*4), 4, (R10)(AX*2), 5) \
	Q4T_VEC2(J, (R11), 6, (R10)(AX*4), 7)

// Q4T_MIN adds m_j·(Σ x over sub-block J) for the eight rows to ACC,
// from the vector's sums over 16 values at B (T: scratch).
#define Q4T_MIN(J, B, ACC, T) \
	VPBROADCASTD (4*J) B, T \
	VPMADDWD (1280+32*J)(SI), T, T \
	VPADDD T, ACC, ACC

// Q4T_MINS sets Y11 to Σ_j m_j·(Σ x over sub-block j) for the eight rows
// and the vector whose sums over 16 values are at B (Y8: scratch).
#define Q4T_MINS(B) \
	VPBROADCASTD 0 B, Y11 \
	VPMADDWD 1280(SI), Y11, Y11 \
	Q4T_MIN(1, B, Y11, Y8) \
	Q4T_MIN(2, B, Y11, Y8) \
	Q4T_MIN(3, B, Y11, Y8) \
	Q4T_MIN(4, B, Y11, Y8) \
	Q4T_MIN(5, B, Y11, Y8) \
	Q4T_MIN(6, B, Y11, Y8) \
	Q4T_MIN(7, B, Y11, Y8)

// Q4T_FUSE fuses vector V's block (its row sums in the frame at 32V, its
// mins' sums from its sums over 16 at B, its d at D) into its results
// acc (frame 256+32V) and accm (512+32V): acc = fma(S, d·dx, acc), accm
// = fma(M, dmin·dx, accm) (Y12: the rows' d, Y13: their dmin).
#define Q4T_FUSE(V, B, D) \
	Q4T_MINS(B) \
	VCVTDQ2PS (32*V)(SP), Y9 \
	VCVTDQ2PS Y11, Y11 \
	VBROADCASTSS D, Y10 \
	VMULPS Y12, Y10, Y8 \
	VMULPS Y13, Y10, Y10 \
	VMOVUPS (256+32*V)(SP), Y14 \
	VFMADD231PS Y9, Y8, Y14 \
	VMOVUPS Y14, (256+32*V)(SP) \
	VMOVUPS (512+32*V)(SP), Y14 \
	VFMADD231PS Y11, Y10, Y14 \
	VMOVUPS Y14, (512+32*V)(SP)

// func dotQ4_KR8v8AVX2(w *byte, blocks int, q *int8, qstride int, bs *int16, bstride int, d *float32, dstride int, out *float32, ostride int, lanes int)
// A tile of eight Q4_K rows (repackQ4KR8) times eight vectors quantized to
// int8 blocks of 256, read in place (values qstride bytes apart, their
// sums over 16 bstride, their d dstride): the eight rows' results for
// vector v go to byte v·ostride of out, for the first lanes vectors.
// blocks > 0.
TEXT ·dotQ4_KR8v8AVX2(SB), $768-88
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ q+16(FP), DI
	MOVQ qstride+24(FP), AX
	MOVQ bs+32(FP), BX
	MOVQ bstride+40(FP), R8
	MOVQ d+48(FP), DX
	MOVQ dstride+56(FP), R9
	XV(DI, AX, R10, R11)
	XV(BX, R8, R12, R13)
	XV(DX, R9, R14, R15)
	VXORPS Y0, Y0, Y0
	ZERO8_AT(256)
	ZERO8_AT(512)
	MOVL $0x0f0f0f0f, CX
	VMOVD CX, X15
	VPBROADCASTD X15, Y15
	MOVQ blocks+8(FP), CX

q4tblock:
	VPXOR Y0, Y0, Y0
	ZERO8_AT(0)
	Q4T_J(0)
	Q4T_J(1)
	Q4T_J(2)
	Q4T_J(3)
	Q4T_J(4)
	Q4T_J(5)
	Q4T_J(6)
	Q4T_J(7)
	VCVTPH2PS 1536(SI), Y12
	VCVTPH2PS 1552(SI), Y13
	Q4T_FUSE(0, (BX), (DX))
	Q4T_FUSE(1, (BX)(R8*1), (DX)(R9*1))
	Q4T_FUSE(2, (BX)(R8*2), (DX)(R9*2))
	Q4T_FUSE(3, (R12), (R14))
	Q4T_FUSE(4, (BX)(R8*4), (DX)(R9*4))
	Q4T_FUSE(5, (R12)(R8*2), (R14)(R9*2))
	Q4T_FUSE(6, (R13), (R15))
	Q4T_FUSE(7, (R12)(R8*4), (R14)(R9*4))
	ADDQ $1568, SI
	ADDQ $256, DI
	ADDQ $256, R10
	ADDQ $256, R11
	ADDQ $32, BX
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $4, DX
	ADDQ $4, R14
	ADDQ $4, R15
	DECQ CX
	JNZ  q4tblock

	MOVQ out+64(FP), DI
	MOVQ ostride+72(FP), AX
	MOVQ lanes+80(FP), CX
	XORQ BX, BX

q4tstore:
	VMOVUPS 256(SP)(BX*1), Y0
	VSUBPS 512(SP)(BX*1), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ AX, DI
	ADDQ $32, BX
	DECQ CX
	JNZ  q4tstore
	VZEROUPPER
	RET
