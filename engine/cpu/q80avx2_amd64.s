//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The AVX2 Q8_0 kernels for several rows or several vectors at once
// (no VNNI). Each computes a Q8_0 row r times a rounded vector v as the
// VNNI kernels do (q80q8_amd64.s), so a result is the same bit for bit
// at every vector level and whatever else shares its product: over the
// blocks b in order, acc = fma(S, d_w·d_x, acc) from acc = 0, S = Σ w·x
// over the block an exact int32 and d_w·d_x one float32 product. S is
// made as llama.cpp's AVX2 dot makes it, |w|·(x·sign w) summed in pairs
// (VPMADDUBSW; |w| ≤ 128 and |x| ≤ 127 cannot saturate) and in fours
// (VPMADDWD), but the eight sums of four of a block are added up across
// registers (SUM4X2), two vectors' or four rows' to a register, so
// the float work is done once per block for four rows or eight vectors.

// Q8_FOURS sets T to the eight sums of four of |W|·(X·sign W), where A
// holds |W| (Y15: int16 ones).
#define Q8_FOURS(X, W, A, T) \
	VPSIGNB W, X, T \
	VPMADDUBSW T, A, T \
	VPMADDWD Y15, T, T

// V8_PAIR sets S to the eight sums of four of the row's block (its halves
// broadcast in Y0 and Y1, their |w| in Y2 and Y3) times vectors k and
// k+4 (register k of the x record at BX, at OFF: the block's first half
// there, its second 128 bytes on), summed over the two halves (Y8, Y9:
// scratch).
#define V8_PAIR(OFF, S) \
	VMOVDQU OFF(BX), Y8 \
	Q8_FOURS(Y8, Y0, Y2, S) \
	VMOVDQU (OFF+128)(BX), Y9 \
	Q8_FOURS(Y9, Y1, Y3, Y9) \
	VPADDD Y9, S, S

// R4_FUSE adds four rows' block up into one sum each, from their eight
// sums of four in A, B, C and D (XA, XB: the low halves of A and B), and
// fuses them into the four results in X14: acc = fma(S, d_w·d_x, acc),
// d_w the rows' binary16 scales (at SI, R10, R11, R12), d_x at DX (X12,
// X13: scratch). The Q8_0 and Q4_0 row kernels both end a block with it.
#define R4_FUSE(A, XA, B, XB, C, D) \
	SUM4X2(A, B, C, D, Y13) \
	VEXTRACTI128 $1, A, XB \
	VPADDD XB, XA, XA \
	VCVTDQ2PS XA, XA \
	DW4(X13) \
	VBROADCASTSS (DX), X12 \
	VMULPS X12, X13, X13 \
	VFMADD231PS XA, X13, X14

// func dotQ8_0Q80r4AVX2(row *byte, stride int, q *int8, d *float32, blocks int, out *float32)
// Four Q8_0 rows (stride bytes apart) times one vector rounded to Q8_0
// (q, one d per 32): out[0..3]. Per block the rows' eight sums of four
// are added up to one per row (SUM4X2, then the register's halves) and fused, four rows in the lanes of one register. blocks > 0.
TEXT ·dotQ8_0Q80r4AVX2(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ blocks+32(FP), CX
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS X14, X14, X14

r4block:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1024(R10)
	PREFETCHT0 1024(R11)
	PREFETCHT0 1024(R12)
	VMOVDQU (DI), Y0
	VMOVDQU 2(SI), Y1
	VMOVDQU 2(R10), Y2
	VMOVDQU 2(R11), Y3
	VMOVDQU 2(R12), Y4
	VPABSB Y1, Y5
	VPABSB Y2, Y6
	VPABSB Y3, Y7
	VPABSB Y4, Y8
	Q8_FOURS(Y0, Y1, Y5, Y9)
	Q8_FOURS(Y0, Y2, Y6, Y10)
	Q8_FOURS(Y0, Y3, Y7, Y11)
	Q8_FOURS(Y0, Y4, Y8, Y12)
	R4_FUSE(Y9, X9, Y10, X10, Y11, Y12)
	ROWS4_NEXT(34)
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  r4block
	MOVQ out+40(FP), DI
	VMOVUPS X14, (DI)
	VZEROUPPER
	RET

// Q4_FOURS sets R (XR its low half) to the eight sums of four of the
// Q4_0 row block at P (its nibbles, unsigned: the low ones values 0–15,
// the high ones 16–31) times x (Y0), less 8·x's own sums of four (Y5), so
// that R sums to the block's Σ (nibble − 8)·x exactly (Y6: the
// low-nibble mask; X8: scratch). Nibbles (≤ 15) times |x| ≤ 127, in
// pairs, cannot saturate.
#define Q4_FOURS(P, XR, R) \
	VMOVDQU 2(P), XR \
	VPSRLW $4, XR, X8 \
	VINSERTI128 $1, X8, R, R \
	VPAND Y6, R, R \
	VPMADDUBSW Y0, R, R \
	VPMADDWD Y15, R, R \
	VPSUBD Y5, R, R

// func dotQ4_0Q80r4AVX2(row *byte, stride int, q *int8, d *float32, blocks int, out *float32)
// Four Q4_0 rows (18-byte blocks, stride bytes apart) times one vector
// rounded to Q8_0 (q, one d per 32): out[0..3]. Each block's integer sum
// is Σ nibble·x − 8·Σ x, the sum the Q8_0 kernels make of the rows
// unpacked as Q8_0 (unpackQ4_0AVX2), and its float steps are
// dotQ8_0Q80r4AVX2's, so every result is that kernel's on the unpacked
// rows bit for bit, without writing them. blocks > 0.
TEXT ·dotQ4_0Q80r4AVX2(SB), NOSPLIT, $0-48
	MOVQ row+0(FP), SI
	MOVQ stride+8(FP), AX
	ROWS4
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ blocks+32(FP), CX
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0F0F0F0F, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
	MOVL $0x01010101, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	VXORPS X14, X14, X14

q4r4block:
	PREFETCHT0 512(SI)
	PREFETCHT0 512(R10)
	PREFETCHT0 512(R11)
	PREFETCHT0 512(R12)
	VMOVDQU (DI), Y0
	VPMADDUBSW Y0, Y7, Y5
	VPMADDWD Y15, Y5, Y5
	VPSLLD $3, Y5, Y5
	Q4_FOURS(SI, X1, Y1)
	Q4_FOURS(R10, X2, Y2)
	Q4_FOURS(R11, X3, Y3)
	Q4_FOURS(R12, X4, Y4)
	R4_FUSE(Y1, X1, Y2, X2, Y3, Y4)
	ROWS4_NEXT(18)
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q4r4block
	MOVQ out+40(FP), DI
	VMOVUPS X14, (DI)
	VZEROUPPER
	RET

// func dotQ8_0Q80v8AVX2(row *byte, rb int, rows int, x *byte, blocks int, f16 *float32, out *float32, ostride int, lanes int)
// Rows Q8_0 rows (rb bytes apart) times a group of eight vectors laid
// out by layQ80HalvesBlock (per block 288 bytes: for each half of the
// block, vectors k and k+4's sixteen values side by side in the two
// halves of register k, then the vectors' d_x): row r's result for
// vector v goes to byte v·ostride + 4r of out, for the first lanes
// vectors (lanes > 0). A row's half block, broadcast to both halves of
// a register, meets two vectors at once; the eight vectors' sums of
// four add up to one sum each (SUM4X2), so the block fuses into
// the row's eight results with one FMA. blocks > 0, rows > 0.
TEXT ·dotQ8_0Q80v8AVX2(SB), NOSPLIT, $32-72
	MOVQ row+0(FP), SI
	MOVQ x+24(FP), R9
	MOVQ f16+40(FP), R8
	MOVQ out+48(FP), DI
	MOVQ rows+16(FP), R12
	MOVQ SI, R11
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

v8row:
	MOVQ R11, SI
	MOVQ blocks+32(FP), CX
	MOVQ R9, BX
	VXORPS Y14, Y14, Y14

v8blk:
	VBROADCASTI128 2(SI), Y0
	VBROADCASTI128 18(SI), Y1
	VPABSB Y0, Y2
	VPABSB Y1, Y3
	V8_PAIR(0, Y4)
	V8_PAIR(32, Y5)
	V8_PAIR(64, Y6)
	V8_PAIR(96, Y7)
	SUM4X2(Y4, Y5, Y6, Y7, Y8) // vectors 0–3 | 4–7: each block's sum
	VCVTDQ2PS Y4, Y4
	MOVWLZX (SI), AX
	VBROADCASTSS (R8)(AX*4), Y10
	VMULPS 256(BX), Y10, Y10
	VFMADD231PS Y4, Y10, Y14
	ADDQ $34, SI
	ADDQ $288, BX
	DECQ CX
	JNZ  v8blk

	STORE_LANES8(Y14, DI, ostride+56(FP), lanes+64(FP), R10, BX, AX, v8store)
	ADDQ $4, DI
	ADDQ rb+8(FP), R11
	DECQ R12
	JNZ  v8row
	VZEROUPPER
	RET

// R8_VEC adds tile group G (W, its |w| in A: eight rows' four values) times
// vector V's group G (broadcast from its address X) to the vector's
// eight row sums S (Y10: scratch).
#define R8_VEC(G, X, S) \
	VPBROADCASTD (4*G)X, Y10 \
	VPSIGNB Y8, Y10, Y10 \
	VPMADDUBSW Y10, Y9, Y10 \
	VPMADDWD Y15, Y10, Y10 \
	VPADDD Y10, S, S

// R8_GROUP does group G of the tile's block (at SI) for the eight vectors
// (XV(DI, AX, R10, R11)), their sums in Y0–Y7.
#define R8_GROUP(G) \
	VMOVDQU (32*G)(SI), Y8 \
	VPABSB Y8, Y9 \
	R8_VEC(G, (DI), Y0) \
	R8_VEC(G, (DI)(AX*1), Y1) \
	R8_VEC(G, (DI)(AX*2), Y2) \
	R8_VEC(G, (R10), Y3) \
	R8_VEC(G, (DI)(AX*4), Y4) \
	R8_VEC(G, (R10)(AX*2), Y5) \
	R8_VEC(G, (R11), Y6) \
	R8_VEC(G, (R10)(AX*4), Y7)

// R8_FUSE fuses vector V's block sums S (eight rows) into its results in
// the frame at 32V: acc = fma(S, d_w·d_x, acc) (Y13: the rows' d_w; d_x
// at address D; Y11, Y12: scratch).
#define R8_FUSE(V, S, D) \
	VCVTDQ2PS S, S \
	VBROADCASTSS D, Y11 \
	VMULPS Y13, Y11, Y11 \
	VMOVUPS (32*V)(SP), Y12 \
	VFMADD231PS S, Y11, Y12 \
	VMOVUPS Y12, (32*V)(SP)

// func dotQ8_0R8v8AVX2(w *byte, blocks int, x *int8, xstride int, d *float32, dstride int, out *float32, ostride int, lanes int)
// A tile of eight Q8_0 rows (repackR8) times eight vectors rounded to
// Q8_0, read in place (values xstride bytes apart, their d dstride):
// per block, each of the tile's groups of four values (eight rows' side
// by side) meets each vector's group broadcast, |w|·(x·sign w) summed in
// pairs and fours into one lane per row, so a block's sums need no adding
// up across lanes; they fuse into the results (in the frame) as the VNNI
// kernels fuse them, each result theirs bit for bit. The eight rows'
// results for vector v go to byte v·ostride of out, for the first lanes
// vectors. blocks > 0.
TEXT ·dotQ8_0R8v8AVX2(SB), NOSPLIT, $256-72
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ x+16(FP), DI
	MOVQ xstride+24(FP), AX
	MOVQ d+32(FP), DX
	MOVQ dstride+40(FP), BX
	XV(DI, AX, R10, R11)
	XV(DX, BX, R12, R13)
	MOVL $0x00010001, R8
	VMOVD R8, X15
	VPBROADCASTD X15, Y15
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)
	VMOVUPS Y0, 224(SP)

r8block:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	R8_GROUP(0)
	R8_GROUP(1)
	R8_GROUP(2)
	R8_GROUP(3)
	R8_GROUP(4)
	R8_GROUP(5)
	R8_GROUP(6)
	R8_GROUP(7)
	VCVTPH2PS 256(SI), Y13
	R8_FUSE(0, Y0, (DX))
	R8_FUSE(1, Y1, (DX)(BX*1))
	R8_FUSE(2, Y2, (DX)(BX*2))
	R8_FUSE(3, Y3, (R12))
	R8_FUSE(4, Y4, (DX)(BX*4))
	R8_FUSE(5, Y5, (R12)(BX*2))
	R8_FUSE(6, Y6, (R13))
	R8_FUSE(7, Y7, (R12)(BX*4))
	ADDQ $272, SI
	ADDQ $32, DI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $4, DX
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  r8block

	MOVQ out+48(FP), DI
	MOVQ ostride+56(FP), AX
	MOVQ lanes+64(FP), CX
	XORQ BX, BX

r8store:
	VMOVUPS (SP)(BX*1), Y0
	VMOVUPS Y0, (DI)
	ADDQ AX, DI
	ADDQ $32, BX
	DECQ CX
	JNZ  r8store
	VZEROUPPER
	RET

// R8V1_GROUP adds tile group G (eight rows' four values) times the
// vector's group G (broadcast from DI) to the sums S, |w|·(x·sign w) in
// pairs and fours as R8_VEC does (W, A, T: scratch).
#define R8V1_GROUP(G, W, A, T, S) \
	VMOVDQU (32*G)(SI), W \
	VPABSB W, A \
	VPBROADCASTD (4*G)(DI), T \
	VPSIGNB W, T, T \
	VPMADDUBSW T, A, T \
	VPMADDWD Y15, T, T \
	VPADDD T, S, S

// func dotQ8_0R8v1AVX2(w *byte, blocks int, x *int8, d *float32, out *float32)
// A tile of eight Q8_0 rows (repackR8) times one vector rounded to Q8_0
// (its values at x, its blocks' d at d): dotQ8_0R8v8AVX2 for a single
// vector, each weight read once with a quarter of the instructions per
// block. The block's sums run in two chains (even and odd groups) added
// before they fuse, fma(sum, d_w·d_x, acc), so the eight results (to out)
// are that kernel's bit for bit. blocks > 0.
TEXT ·dotQ8_0R8v1AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ x+16(FP), DI
	MOVQ d+24(FP), DX
	MOVL $0x00010001, R8
	VMOVD R8, X15
	VPBROADCASTD X15, Y15
	VXORPS Y14, Y14, Y14

r8v1block:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	R8V1_GROUP(0, Y2, Y3, Y4, Y0)
	R8V1_GROUP(1, Y5, Y6, Y7, Y1)
	R8V1_GROUP(2, Y2, Y3, Y4, Y0)
	R8V1_GROUP(3, Y5, Y6, Y7, Y1)
	R8V1_GROUP(4, Y2, Y3, Y4, Y0)
	R8V1_GROUP(5, Y5, Y6, Y7, Y1)
	R8V1_GROUP(6, Y2, Y3, Y4, Y0)
	R8V1_GROUP(7, Y5, Y6, Y7, Y1)
	VPADDD Y1, Y0, Y0
	VCVTDQ2PS Y0, Y0
	VCVTPH2PS 256(SI), Y13
	VBROADCASTSS (DX), Y11
	VMULPS Y13, Y11, Y11
	VFMADD231PS Y0, Y11, Y14
	ADDQ $272, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  r8v1block

	MOVQ out+32(FP), DI
	VMOVUPS Y14, (DI)
	VZEROUPPER
	RET
