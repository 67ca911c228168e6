// ROWS4 sets R10, R11 and R12 to the three rows after the one at SI, AX
// bytes apart.
#define ROWS4 \
	LEAQ (SI)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	LEAQ (R11)(AX*1), R12

// ROWS4_NEXT moves the four rows at SI, R10, R11 and R12 on by N bytes.
#define ROWS4_NEXT(N) \
	ADDQ $N, SI \
	ADDQ $N, R10 \
	ADDQ $N, R11 \
	ADDQ $N, R12

// lanePairs doubles each of eight dwords into two lanes (VPERMD): the
// vectors' values for a pair of rows side by side, lane 2v and 2v+1.
DATA lanePairs<>+0(SB)/4, $0
DATA lanePairs<>+4(SB)/4, $0
DATA lanePairs<>+8(SB)/4, $1
DATA lanePairs<>+12(SB)/4, $1
DATA lanePairs<>+16(SB)/4, $2
DATA lanePairs<>+20(SB)/4, $2
DATA lanePairs<>+24(SB)/4, $3
DATA lanePairs<>+28(SB)/4, $3
DATA lanePairs<>+32(SB)/4, $4
DATA lanePairs<>+36(SB)/4, $4
DATA lanePairs<>+40(SB)/4, $5
DATA lanePairs<>+44(SB)/4, $5
DATA lanePairs<>+48(SB)/4, $6
DATA lanePairs<>+52(SB)/4, $6
DATA lanePairs<>+56(SB)/4, $7
DATA lanePairs<>+60(SB)/4, $7
GLOBL lanePairs<>(SB), RODATA, $64

// pairValues interleaves the dwords of two rows' 32 bytes loaded as the
// halves of one register (VPERMD): A0 B0 A1 B1 … A7 B7, each group of
// four of the first row's values beside the second's.
DATA pairValues<>+0(SB)/4, $0
DATA pairValues<>+4(SB)/4, $8
DATA pairValues<>+8(SB)/4, $1
DATA pairValues<>+12(SB)/4, $9
DATA pairValues<>+16(SB)/4, $2
DATA pairValues<>+20(SB)/4, $10
DATA pairValues<>+24(SB)/4, $3
DATA pairValues<>+28(SB)/4, $11
DATA pairValues<>+32(SB)/4, $4
DATA pairValues<>+36(SB)/4, $12
DATA pairValues<>+40(SB)/4, $5
DATA pairValues<>+44(SB)/4, $13
DATA pairValues<>+48(SB)/4, $6
DATA pairValues<>+52(SB)/4, $14
DATA pairValues<>+56(SB)/4, $7
DATA pairValues<>+60(SB)/4, $15
GLOBL pairValues<>(SB), RODATA, $64

// KLANES_ARGS loads the arguments of the K-quant lane kernels (row,
// stride, x, blocks, f16, …, ahead, kc): the rows into SI, R10, R11 and
// R12, x into R9, blocks into CX, the table into R8, ahead into DX, the
// block corrections into R15, and sets Z28 to 0x0f bytes, Z29 to
// pairValues, Z30 to lanePairs and the sums Z16 and Z17 to zero.
#define KLANES_ARGS \
	MOVQ row+0(FP), SI \
	MOVQ stride+8(FP), AX \
	ROWS4 \
	MOVQ x+16(FP), R9 \
	MOVQ blocks+24(FP), CX \
	MOVQ f16+32(FP), R8 \
	MOVQ ahead+64(FP), DX \
	MOVQ kc+72(FP), R15 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z28 \
	VMOVDQU32 pairValues<>(SB), Z29 \
	VMOVDQU32 lanePairs<>(SB), Z30 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17

// PAIR_STORE writes two rows' eight dwords A and B to OFF(SP) as 64
// bytes, each A's dword beside B's: A0 B0 A1 B1 A4 B4 A5 B5, then A2 B2
// A3 B3 A6 B6 A7 B7 (Y7: scratch).
#define PAIR_STORE(A, B, OFF) \
	VPUNPCKLDQ B, A, Y7 \
	VMOVDQU Y7, (OFF)(SP) \
	VPUNPCKHDQ B, A, Y7 \
	VMOVDQU Y7, (OFF+32)(SP)

// PG0–PG7: where PAIR_STORE puts the pair of dwords g, from OFF.
#define PG0 0
#define PG1 8
#define PG2 32
#define PG3 40
#define PG4 16
#define PG5 24
#define PG6 48
#define PG7 56

// PAIR_F16 sets Z15 to the binary16 values at OFF of the rows at RA and RB
// as float32 pairs (R8: the table), using AX and BX.
#define PAIR_F16(OFF, RA, RB) \
	MOVWLZX OFF(RA), AX \
	MOVWLZX OFF(RB), BX \
	MOVL (R8)(AX*4), AX \
	MOVL (R8)(BX*4), BX \
	SHLQ $32, BX \
	ORQ  BX, AX \
	VPBROADCASTQ AX, Z15

// KC2_NEXT starts the two pairs' integer sums Z9 and Z10 from their rows'
// block corrections at R15 and moves R15 on to the next block's.
#define KC2_NEXT \
	VBROADCASTI32X2 (R15), Z9 \
	VBROADCASTI32X2 8(R15), Z10 \
	ADDQ $16, R15

// KZLANES_STORE stores the K-quant lane kernels' results Z16 and Z17 as
// ZLANES_STORE does into out (arguments as KLANES_ARGS reads them), then
// goes to DONE.
#define KZLANES_STORE(DONE) \
	MOVQ out+40(FP), DI \
	MOVQ vstride+48(FP), AX \
	MOVQ lanes+56(FP), CX \
	ZLANES_STORE(DONE)

// ZLANES_STORE writes the results of the pairs of rows Z16 (rows 0, 1)
// and Z17 (rows 2, 3), lane 2v and 2v+1 for vector v, as each vector's
// four results side by side: the four for vector v to DI + v·AX, for the
// first CX vectors (CX > 0), then jumps to DONE. Clobbers Z0–Z2.
#define ZLANES_STORE(DONE) \
	VPUNPCKLQDQ Z17, Z16, Z0 \
	VPUNPCKHQDQ Z17, Z16, Z1 \
	ZLANES_PUT(DONE)

// ZLANES_PUT writes four rows' results for eight vectors, 128 bits i of
// Z0 vector 2i's and of Z1 vector 2i+1's, as ZLANES_STORE does (X2:
// scratch).
#define ZLANES_PUT(DONE) \
	ZLANE_STORE(Z0, 0, 1, DONE) \
	ZLANE_STORE(Z1, 0, 2, DONE) \
	ZLANE_STORE(Z0, 1, 3, DONE) \
	ZLANE_STORE(Z1, 1, 4, DONE) \
	ZLANE_STORE(Z0, 2, 5, DONE) \
	ZLANE_STORE(Z1, 2, 6, DONE) \
	ZLANE_STORE(Z0, 3, 7, DONE) \
	VEXTRACTF32X4 $3, Z1, X2 \
	VMOVUPS X2, (DI) \
	JMP DONE

// ZLANE_STORE writes 128-bit lane L of Z (a vector's four results) to DI
// and moves DI on by AX, unless it was vector CX−1, the last one.
#define ZLANE_STORE(Z, L, V, DONE) \
	VEXTRACTF32X4 $L, Z, X2 \
	VMOVUPS X2, (DI) \
	CMPQ CX, $V \
	JEQ  DONE \
	ADDQ AX, DI
