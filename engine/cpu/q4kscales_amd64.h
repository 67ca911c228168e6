// Q4K_SCALES_AT unpacks the 8 six-bit scales and 8 mins of the Q4_K block
// at R (12 bytes from R+4) into SC (scales, a byte each) and MN (mins),
// using A, B and C.
#define Q4K_SCALES_AT(R, SC, MN, A, B, C) \
	MOVL 4(R), SC \
	MOVL 8(R), A \
	MOVL 12(R), B \
	MOVL B, C \
	SHRL $4, C \
	ANDL $0x0f0f0f0f, C \
	MOVL A, MN \
	SHRL $6, MN \
	ANDL $0x03030303, MN \
	SHLL $4, MN \
	ORL  MN, C \
	MOVL A, MN \
	ANDL $0x3f3f3f3f, MN \
	MOVL B, A \
	ANDL $0x0f0f0f0f, A \
	MOVL SC, B \
	SHRL $6, B \
	ANDL $0x03030303, B \
	SHLL $4, B \
	ORL  B, A \
	ANDL $0x3f3f3f3f, SC \
	SHLQ $32, A \
	ORQ  A, SC \
	SHLQ $32, C \
	ORQ  C, MN

// Q4K_SCALES unpacks the scales and mins of the Q4_K block at SI into R9
// (scales) and R13 (mins), using R10, R11 and R12.
#define Q4K_SCALES Q4K_SCALES_AT(SI, R9, R13, R10, R11, R12)
