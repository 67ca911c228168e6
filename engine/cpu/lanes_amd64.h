// The lane kernels' shared steps. Several vectors (a group of eight) are
// laid out with the pairs of a block's groups of four values side by side
// (q8K.layLanes, layQ80LaneBlock); a row's pair of groups, broadcast against
// them, leaves in lane 2v vector v's sum over the even groups and in lane
// 2v+1 over the odd ones. PAIR_ADD adds the two once per block, two rows
// at a time.

// ROWS4 sets R10, R11 and R12 to the three rows after the one at SI, AX
// bytes apart.
#define ROWS4 \
	LEAQ (SI)(AX*1), R10 \
	LEAQ (R10)(AX*1), R11 \
	LEAQ (R11)(AX*1), R12

// DW4 widens the binary16 scales of the blocks of the rows at SI, R10,
// R11 and R12 into the four floats of X (AX: scratch).
#define DW4(X) \
	MOVWLZX (SI), AX \
	VMOVD AX, X \
	VPINSRW $1, (R10), X, X \
	VPINSRW $2, (R11), X, X \
	VPINSRW $3, (R12), X, X \
	VCVTPH2PS X, X

// ROWS4_NEXT moves the four rows at SI, R10, R11 and R12 on by N bytes.
#define ROWS4_NEXT(N) \
	ADDQ $N, SI \
	ADDQ $N, R10 \
	ADDQ $N, R11 \
	ADDQ $N, R12

// LANE_MASKS sets K1 to the even lanes and K2 to lanes 2 and 3 of each
// 128 bits, using AX.
#define LANE_MASKS \
	MOVL $0x5555, AX \
	KMOVW AX, K1 \
	MOVL $0xcccc, AX \
	KMOVW AX, K2

// KLANES_ARGS loads the arguments of the K-quant lane kernels (row,
// stride, x, blocks, f16, …, ahead, kc): the rows into SI, R10, R11 and
// R12, x into R9, blocks into CX, the table into R8, ahead into DX, the
// block corrections into R15, and sets Z28 to 0x0f bytes, the LANE_MASKS
// and the sums Z16 and Z17 to zero.
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
	LANE_MASKS \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17

// KC4_EVEN starts the four rows' integer sums Z9, Z10, Z11 and Z18 from
// their block corrections at R15, in the even lanes (K1), and moves R15
// on to the next block's.
#define KC4_EVEN \
	VPBROADCASTD.Z (R15), K1, Z9 \
	VPBROADCASTD.Z 4(R15), K1, Z10 \
	VPBROADCASTD.Z 8(R15), K1, Z11 \
	VPBROADCASTD.Z 12(R15), K1, Z18 \
	ADDQ $16, R15

// PAIRS4 sets M to Σ over the four pairs of int16 pairs from OFF(SP) on
// (8 bytes each, broadcast) times the vectors' pairs of sums in Z0–Z3,
// as VPDPWSSD adds them (B: scratch).
#define PAIRS4(OFF, M, B) \
	VPBROADCASTQ (OFF)(SP), B \
	VPXORD M, M, M \
	VPDPWSSD B, Z0, M \
	VPBROADCASTQ (OFF+8)(SP), B \
	VPDPWSSD B, Z1, M \
	VPBROADCASTQ (OFF+16)(SP), B \
	VPDPWSSD B, Z2, M \
	VPBROADCASTQ (OFF+24)(SP), B \
	VPDPWSSD B, Z3, M

// PAIR_ADD adds the even and odd lanes of A's and B's: per 128 bits A's
// for vectors 2i and 2i+1, then B's, into OUT (T: scratch).
#define PAIR_ADD(A, B, OUT, T) \
	VSHUFPS $0x88, B, A, OUT \
	VSHUFPS $0xdd, B, A, T \
	VPADDD T, OUT, OUT

// ROWS_F16 sets Z to the binary16 values at OFF of the rows at RA and RB
// as float32, per 128 bits RA's twice and then RB's twice, PAIR_ADD's
// order (R8: the table; K2: lanes 2 and 3 of each 128 bits), using AX and
// BX.
#define ROWS_F16(OFF, RA, RB, Z) \
	MOVWLZX OFF(RA), AX \
	MOVWLZX OFF(RB), BX \
	VPBROADCASTD (R8)(AX*4), Z \
	VPBROADCASTD (R8)(BX*4), K2, Z

// KLANES_STORE stores the K-quant lane kernels' results Z16 and Z17 as
// LANES_STORE does into out (arguments as KLANES_ARGS reads them), then
// goes to DONE.
#define KLANES_STORE(DONE) \
	MOVQ out+40(FP), DI \
	MOVQ vstride+48(FP), AX \
	MOVQ lanes+56(FP), CX \
	LANES_STORE(DONE)

// LANES_STORE writes four rows' results for eight vectors, Z16 rows 0
// and 1 and Z17 rows 2 and 3 in PAIR_ADD's order, as each vector's four
// results side by side: the four for vector v to DI + v·AX, for the first
// CX vectors (CX > 0), then goes to DONE (the label after it). Clobbers
// Z0–Z2.
#define LANES_STORE(DONE) LANES_STORE_BY(LANE_STORE, DONE)

// LANES_STORE_Q is LANES_STORE with the four rows' results BX bytes
// apart (rows from four quarters of a range): row k's for vector v to DI
// + v·AX + k·BX. Clobbers Z0–Z2 and R8.
#define LANES_STORE_Q(DONE) \
	LEAQ (BX)(BX*2), R8 \
	LANES_STORE_BY(LANE_STORE_Q, DONE)

// LANES_STORE_BY is LANES_STORE with each vector's four results stored
// by STORE (LANE_STORE or LANE_STORE_Q).
#define LANES_STORE_BY(STORE, DONE) \
	VSHUFPS $0x88, Z17, Z16, Z0 \
	VSHUFPS $0xdd, Z17, Z16, Z1 \
	STORE(Z0, 0, 1, DONE) \
	STORE(Z1, 0, 2, DONE) \
	STORE(Z0, 1, 3, DONE) \
	STORE(Z1, 1, 4, DONE) \
	STORE(Z0, 2, 5, DONE) \
	STORE(Z1, 2, 6, DONE) \
	STORE(Z0, 3, 7, DONE) \
	STORE(Z1, 3, 8, DONE)

// LANE_STORE_Q is LANE_STORE with the four results BX bytes apart (R8:
// 3·BX).
#define LANE_STORE_Q(Z, L, V, DONE) \
	VEXTRACTF32X4 $L, Z, X2 \
	VMOVSS X2, (DI) \
	VEXTRACTPS $1, X2, (DI)(BX*1) \
	VEXTRACTPS $2, X2, (DI)(BX*2) \
	VEXTRACTPS $3, X2, (DI)(R8*1) \
	CMPQ CX, $V \
	JEQ  DONE \
	ADDQ AX, DI

// LANE_STORE writes 128-bit lane L of Z (a vector's four results) to DI
// and moves DI on by AX, unless it was vector CX−1, the last one.
#define LANE_STORE(Z, L, V, DONE) \
	VEXTRACTF32X4 $L, Z, X2 \
	VMOVUPS X2, (DI) \
	CMPQ CX, $V \
	JEQ  DONE \
	ADDQ AX, DI

// STORE_LANES8 writes the first LANES of Y's eight floats (one row's
// results for eight vectors) to OUT, OUT + STRIDE, … through the frame's
// first 32 bytes (P, I, T: scratch; L: a label for the loop). LANES > 0.
#define STORE_LANES8(Y, OUT, STRIDE, LANES, P, I, T, L) \
	VMOVUPS Y, (SP) \
	MOVQ OUT, P \
	XORQ I, I \
L: \
	MOVL (SP)(I*4), T \
	MOVL T, (P) \
	ADDQ STRIDE, P \
	INCQ I \
	CMPQ I, LANES \
	JNE  L

// SUM4X2 adds up, in each 128-bit half, the four int32 lanes of each of
// A, B, C and D into A: per half [Σa, Σb, Σc, Σd] (T: scratch; B and C
// are clobbered). Six unpacks and three adds, where three VPHADDD take
// twice the time (a VPHADDD issues every other cycle, an unpack two or
// more a cycle).
#define SUM4X2(A, B, C, D, T) \
	VPUNPCKLDQ B, A, T \
	VPUNPCKHDQ B, A, A \
	VPADDD T, A, A \
	VPUNPCKLDQ D, C, T \
	VPUNPCKHDQ D, C, C \
	VPADDD T, C, C \
	VPUNPCKLQDQ C, A, T \
	VPUNPCKHQDQ C, A, A \
	VPADDD T, A, A

// XV sets P3 and P6 so that eight vectors S bytes apart from B are at
// (B), (B)(S*1), (B)(S*2), (P3), (B)(S*4), (P3)(S*2), (P6), (P3)(S*4).
#define XV(B, S, P3, P6) \
	LEAQ (B)(S*2), P3 \
	ADDQ S, P3 \
	LEAQ (P3)(S*2), P6 \
	ADDQ S, P6

// ZERO8_AT stores Y0 (zero) over eight registers' worth (32 bytes each) of
// the frame from OFF.
#define ZERO8_AT(OFF) \
	VMOVDQU Y0, (OFF)(SP) \
	VMOVDQU Y0, (OFF+32)(SP) \
	VMOVDQU Y0, (OFF+64)(SP) \
	VMOVDQU Y0, (OFF+96)(SP) \
	VMOVDQU Y0, (OFF+128)(SP) \
	VMOVDQU Y0, (OFF+160)(SP) \
	VMOVDQU Y0, (OFF+192)(SP) \
	VMOVDQU Y0, (OFF+224)(SP)
