// Q4K_SCALES unpacks the 8 six-bit scales and 8 mins of the Q4_K block at
// SI (12 bytes from SI+4) into R9 (scales, a byte each) and R13 (mins),
// using R10, R11 and R12.
#define Q4K_SCALES \
	MOVL 4(SI), R9 \
	MOVL 8(SI), R10 \
	MOVL 12(SI), R11 \
	MOVL R11, R12 \
	SHRL $4, R12 \
	ANDL $0x0f0f0f0f, R12 \
	MOVL R10, R13 \
	SHRL $6, R13 \
	ANDL $0x03030303, R13 \
	SHLL $4, R13 \
	ORL  R13, R12 \
	MOVL R10, R13 \
	ANDL $0x3f3f3f3f, R13 \
	MOVL R11, R10 \
	ANDL $0x0f0f0f0f, R10 \
	MOVL R9, R11 \
	SHRL $6, R11 \
	ANDL $0x03030303, R11 \
	SHLL $4, R11 \
	ORL  R11, R10 \
	ANDL $0x3f3f3f3f, R9 \
	SHLQ $32, R10 \
	ORQ  R10, R9 \
	SHLQ $32, R12 \
	ORQ  R12, R13
