// The int8 dot kernels' macros (dotq_arm64.h): each works through
// DOT16, whichever form dotq_arm64.s has defined when the body is assembled.

// Q8BLOCKEND adds d_w (F1) · d_x (from R2, moving on) · the sum of V16's
// lanes to the float sum in F0: (d_w·d_x) then one FMADD, as
// dotQ8_0Q80Go's `s += d_w * d_x * float32(sum)` compiles.
#define Q8BLOCKEND \
	VADDV4S(16, 16) \
	SCVTFS(16, 16) \
	FMOVS.P 4(R2), F2 \
	FMULS   F2, F1, F1 \
	FMADDS  F16, F0, F1, F0

// Q5HIGH leaves in V8 (values 0–15) and V9 (16–31) 16 where the value's
// bit of the Q5_0 high-bit word in r is set, else 0: each byte of the
// word spread over eight lanes (TBL), tested against its lane's bit.
#define Q5HIGH(r) \
	VDUP   r, V5.S4 \
	VTBL   V26.B16, [V5.B16], V8.B16 \
	VTBL   V27.B16, [V5.B16], V9.B16 \
	VCMTST V28.B16, V8.B16, V8.B16 \
	VCMTST V28.B16, V9.B16, V9.B16 \
	VAND   V30.B16, V8.B16, V8.B16 \
	VAND   V30.B16, V9.B16, V9.B16

// SUMS8 leaves in V8 the sums of the lanes of V0–V3 and in V10 those of
// V4–V7 (V9, V11 used).
#define SUMS8 \
	VADDP4S(8, 0, 1) \
	VADDP4S(9, 2, 3) \
	VADDP4S(8, 8, 9) \
	VADDP4S(10, 4, 5) \
	VADDP4S(11, 6, 7) \
	VADDP4S(10, 10, 11)

#define ZERO8 \
	VEOR V0.B16, V0.B16, V0.B16 \
	VEOR V1.B16, V1.B16, V1.B16 \
	VEOR V2.B16, V2.B16, V2.B16 \
	VEOR V3.B16, V3.B16, V3.B16 \
	VEOR V4.B16, V4.B16, V4.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	VEOR V7.B16, V7.B16, V7.B16

// Q4KPAIR multiplies the 32 bytes of values at R5 (moving on) — low
// nibbles sub-block lo, high nibbles hi — by the 64 x at R1 (moving on).
#define Q4KPAIR(lo, hi) \
	VLD1.P 32(R5), [V8.B16, V9.B16] \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16] \
	VAND   V31.B16, V8.B16, V10.B16 \
	VAND   V31.B16, V9.B16, V11.B16 \
	VUSHR  $4, V8.B16, V12.B16 \
	VUSHR  $4, V9.B16, V13.B16 \
	DOT16(lo, 10, 16, 20) \
	DOT16(lo, 11, 17, 21) \
	DOT16(hi, 12, 18, 22) \
	DOT16(hi, 13, 19, 23)

// Q5KPAIR is Q4KPAIR for Q5_K: the values' fifth bits come from the high
// bits in V14 and V15 (bit 0 for sub-block lo, 1 for hi), which it moves
// on by two for the next pair (V20 scratch, V23 = 16).
#define Q5KPAIR(lo, hi) \
	VLD1.P 32(R5), [V8.B16, V9.B16] \
	VLD1.P 64(R1), [V16.B16, V17.B16, V18.B16, V19.B16] \
	VAND   V31.B16, V8.B16, V10.B16 \
	VAND   V31.B16, V9.B16, V11.B16 \
	VUSHR  $4, V8.B16, V12.B16 \
	VUSHR  $4, V9.B16, V13.B16 \
	Q5KBIT(10, 14, 4) \
	Q5KBIT(11, 15, 4) \
	Q5KBIT(12, 14, 3) \
	Q5KBIT(13, 15, 3) \
	VUSHR  $2, V14.B16, V14.B16 \
	VUSHR  $2, V15.B16, V15.B16 \
	DOT16(lo, 10, 16, 21) \
	DOT16(lo, 11, 17, 22) \
	DOT16(hi, 12, 18, 21) \
	DOT16(hi, 13, 19, 22)

// Q5KBIT sets bit 4 of each byte of V(v) from bit 4−s of V(h).
#define Q5KBIT(v, h, s) \
	VSHL16B(20, h, s) \
	VAND16B(20, 20, 23) \
	VORR16B(v, v, 20)

// K4START loads the K-quant kernels' arguments, clears the sum (F28) and
// sets V31 to 15.
#define K4START \
	MOVD  row+0(FP), R0 \
	MOVD  q+8(FP), R1 \
	MOVD  bs+16(FP), R2 \
	MOVD  d+24(FP), R3 \
	MOVD  blocks+32(FP), R4 \
	FMOVS ZR, F28 \
	VMOVI $15, V31.B16

// K4HEAD reads a Q4_K or Q5_K block's d (F29), dmin (F30) and six-bit
// scales and mins (scalesK4), four bytes to a word: the scales as int32
// in V26 (0–3) and V27 (4–7), the mins as int16 in V25.
#define K4HEAD \
	MOVHU  (R0), R5 \
	FMOVS  R5, F29 \
	FCVTHS F29, F29 \
	MOVHU  2(R0), R5 \
	FMOVS  R5, F30 \
	FCVTHS F30, F30 \
	MOVWU  4(R0), R5 \
	MOVWU  8(R0), R6 \
	MOVWU  12(R0), R7 \
	ANDW   $0x3f3f3f3f, R5, R8 \
	ANDW   $0x3f3f3f3f, R6, R9 \
	ANDW   $0x0f0f0f0f, R7, R10 \
	LSRW   $6, R5, R11 \
	ANDW   $0x03030303, R11, R11 \
	ORRW   R11<<4, R10, R10 \
	LSRW   $4, R7, R11 \
	ANDW   $0x0f0f0f0f, R11, R11 \
	LSRW   $6, R6, R12 \
	ANDW   $0x03030303, R12, R12 \
	ORRW   R12<<4, R11, R11 \
	VMOV   R8, V24.S[0] \
	VMOV   R10, V24.S[1] \
	VMOV   R9, V25.S[0] \
	VMOV   R11, V25.S[1] \
	VUXTL  V24.B8, V24.H8 \
	VUXTL  V24.H4, V26.S4 \
	VUXTL2 V24.H8, V27.S4 \
	VUXTL  V25.B8, V25.H8

// K4TAIL adds the block to F28: sumi = Σ sc·(the sub-blocks' sums in
// V0–V7), summ = Σ m·(x's sums over each 32, pairs of bs at R2, moving
// on), then d·d_x·sumi − dmin·d_x·summ (d_x from R3, moving on) in
// dotQ4_KQ8Go's steps as arm64's Go compiles them: the subtraction fused.
#define K4TAIL \
	SUMS8 \
	VMUL4S(8, 8, 26) \
	VMLA4S(8, 10, 27) \
	VADDV4S(8, 8) \
	VLD1.P 32(R2), [V12.H8, V13.H8] \
	VADDP8H(12, 12, 13) \
	VSMULL4S(14, 12, 25) \
	VSMLAL24S(14, 12, 25) \
	VADDV4S(14, 14) \
	FMOVS.P 4(R3), F3 \
	FMULS  F3, F29, F4 \
	SCVTFS(8, 8) \
	FMULS  F8, F4, F4 \
	FMULS  F3, F30, F5 \
	SCVTFS(14, 14) \
	FMSUBS F14, F4, F5, F5 \
	FADDS  F5, F28, F28

// Q6KG multiplies group g of a Q6_K half-block: low nibbles (VAND V22) or
// high (VUSHR 4) of ql0/ql1, with the two high bits from qh (V20, V21)
// shifted into 0x30 by qhop, into accumulators a and a+1 against the 32 x
// at R1 (moving on).
#define Q6KG(ql0, ql1, nib, qhop, a) \
	nib(ql0, 26) \
	nib(ql1, 27) \
	qhop(20, 28) \
	VORR   V28.B16, V26.B16, V26.B16 \
	qhop(21, 28) \
	VORR   V28.B16, V27.B16, V27.B16 \
	VLD1.P 32(R1), [V24.B16, V25.B16] \
	DOT16(a, 26, 24, 29) \
	DOT16(a+1, 27, 25, 29)

// For Q6KG's numbered operands: LONIB and HINIB take a value's nibble,
// QH0–QH3 move bits 2g and 2g+1 of qh to bits 4 and 5.
#define LONIB(q, d) VAND16B(d, q, 22)
#define HINIB(q, d) VUSHR16B(d, q, 4)
#define QH0(h, d) VSHL16B(d, h, 4) \
	VAND16B(d, d, 23)
#define QH1(h, d) VSHL16B(d, h, 2) \
	VAND16B(d, d, 23)
#define QH2(h, d) VAND16B(d, h, 23)
#define QH3(h, d) VUSHR16B(d, h, 2) \
	VAND16B(d, d, 23)

// Q6KHALF multiplies 128 values (64 bytes of ql at R5, 32 of qh at R6,
// both moving on) by x at R1 and adds Σ sc·sum over their eight
// sub-blocks (eight int8 scales at R7, moving on) to V30.
#define Q6KHALF \
	VLD1.P 64(R5), [V16.B16, V17.B16, V18.B16, V19.B16] \
	VLD1.P 32(R6), [V20.B16, V21.B16] \
	ZERO8 \
	Q6KG(16, 17, LONIB, QH0, 0) \
	Q6KG(18, 19, LONIB, QH1, 2) \
	Q6KG(16, 17, HINIB, QH2, 4) \
	Q6KG(18, 19, HINIB, QH3, 6) \
	SUMS8 \
	VLD1.P 8(R7), [V31.B8] \
	VSXTL8H(31, 31) \
	VSXTL4S(12, 31) \
	VSXTL24S(13, 31) \
	VMLA4S(30, 8, 12) \
	VMLA4S(30, 10, 13)
