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
