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
