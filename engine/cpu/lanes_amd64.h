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

// LANES_STORE writes four rows' results for eight vectors (Y16–Y19, row
// k's lane v: vector v) as each vector's four results side by side: the
// four for vector v to DI + v·AX, for the first CX vectors (CX > 0),
// then jumps to DONE. Clobbers Y0–Y7.
#define LANES_STORE(DONE) \
	VUNPCKLPS Y17, Y16, Y4 \
	VUNPCKHPS Y17, Y16, Y5 \
	VUNPCKLPS Y19, Y18, Y6 \
	VUNPCKHPS Y19, Y18, Y7 \
	VUNPCKLPD Y6, Y4, Y0 \
	VUNPCKHPD Y6, Y4, Y1 \
	VUNPCKLPD Y7, Y5, Y2 \
	VUNPCKHPD Y7, Y5, Y3 \
	LANE_STORE(X0, 1, DONE) \
	LANE_STORE(X1, 2, DONE) \
	LANE_STORE(X2, 3, DONE) \
	LANE_STORE(X3, 4, DONE) \
	VEXTRACTF128 $1, Y0, X0 \
	VEXTRACTF128 $1, Y1, X1 \
	VEXTRACTF128 $1, Y2, X2 \
	VEXTRACTF128 $1, Y3, X3 \
	LANE_STORE(X0, 5, DONE) \
	LANE_STORE(X1, 6, DONE) \
	LANE_STORE(X2, 7, DONE) \
	VMOVUPS X3, (DI) \
	JMP DONE

// LANE_STORE writes a vector's four results X to DI and moves DI on by
// AX, unless it was vector CX−1, the last one.
#define LANE_STORE(X, V, DONE) \
	VMOVUPS X, (DI) \
	CMPQ CX, $V \
	JEQ  DONE \
	ADDQ AX, DI

// LOAD8 loads eight registers Y0–Y7 of the laid-out vectors from OFF(R9)
// on.
#define LOAD8(OFF) \
	VMOVDQU32 (OFF)(R9), Y0 \
	VMOVDQU32 (OFF+32)(R9), Y1 \
	VMOVDQU32 (OFF+64)(R9), Y2 \
	VMOVDQU32 (OFF+96)(R9), Y3 \
	VMOVDQU32 (OFF+128)(R9), Y4 \
	VMOVDQU32 (OFF+160)(R9), Y5 \
	VMOVDQU32 (OFF+192)(R9), Y6 \
	VMOVDQU32 (OFF+224)(R9), Y7

// KLANES_ARGS loads the arguments of the K-quant lane kernels (row,
// stride, x, blocks, f16, …, ahead, kc): the rows into SI, R10, R11 and
// R12, x into R9, blocks into CX, the table into R8, ahead into DX, the
// block corrections into R15, and sets Y28 to 0x0f bytes and the sums
// Y16–Y19 to zero.
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
	VPBROADCASTD AX, Y28 \
	VPXORD Y16, Y16, Y16 \
	VPXORD Y17, Y17, Y17 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19

// PAIRS8 sets M to Σ over the eight int16 pairs at OFF(SP) on (each
// broadcast) times the vectors' pairs in Y0–Y7, as VPDPWSSD adds them.
#define PAIRS8(OFF, M) \
	VPXORD M, M, M \
	VPDPWSSD.BCST (OFF)(SP), Y0, M \
	VPDPWSSD.BCST (OFF+4)(SP), Y1, M \
	VPDPWSSD.BCST (OFF+8)(SP), Y2, M \
	VPDPWSSD.BCST (OFF+12)(SP), Y3, M \
	VPDPWSSD.BCST (OFF+16)(SP), Y4, M \
	VPDPWSSD.BCST (OFF+20)(SP), Y5, M \
	VPDPWSSD.BCST (OFF+24)(SP), Y6, M \
	VPDPWSSD.BCST (OFF+28)(SP), Y7, M

// KLANES_STORE stores the K-quant lane kernels' four rows' results
// Y16–Y19 for the first lanes vectors into out (arguments as
// KLANES_ARGS reads them), then goes to DONE.
#define KLANES_STORE(DONE) \
	MOVQ out+40(FP), DI \
	MOVQ vstride+48(FP), AX \
	MOVQ lanes+56(FP), CX \
	LANES_STORE(DONE)

// KC4_NEXT starts the four rows' integer sums Y9–Y12 from their block
// corrections at R15 and moves R15 on to the next block's.
#define KC4_NEXT \
	VPBROADCASTD (R15), Y9 \
	VPBROADCASTD 4(R15), Y10 \
	VPBROADCASTD 8(R15), Y11 \
	VPBROADCASTD 12(R15), Y12 \
	ADDQ $16, R15

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

// ZLANES_STORE stores the results of the pairs of rows Z16 (rows 0, 1)
// and Z17 (rows 2, 3), lane 2v and 2v+1 for vector v, for the first lanes
// vectors into out (arguments as KLANES_ARGS reads them), then goes to
// DONE. Clobbers Z0–Z2.
#define ZLANES_STORE(DONE) \
	MOVQ out+40(FP), DI \
	MOVQ vstride+48(FP), AX \
	MOVQ lanes+56(FP), CX \
	VPUNPCKLQDQ Z17, Z16, Z0 \
	VPUNPCKHQDQ Z17, Z16, Z1 \
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
