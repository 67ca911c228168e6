// The int8 dot kernels' bodies, assembled twice by dotq_arm64.s: with
// DOT16(acc, w, x, t) adding the sixteen products of the int8 lanes of
// V(w) and V(x) to the four int32 lanes of V(acc) (SDOT, or SMULL, SMLAL2
// and SADALP through V(t)), under the names KQ80, KQ40, KQ50, KQ4K, KQ5K
// and KQ6K.
// Every integer sum is exact, and each block's float steps are the Go
// kernel's, fused where the Go compiler fuses them on arm64, so the
// results are the Go kernels' bit for bit.

// func dotQ8_0Q80…(row *byte, q *int8, d *float32, blocks int) float32
// A Q8_0 row (blocks of d, 32 int8) times x rounded to Q8_0 (q, d).
TEXT KQ80, NOSPLIT, $0-36
	MOVD  row+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  blocks+24(FP), R3
	FMOVS ZR, F0

q80loop:
	MOVHU.P 2(R0), R4
	FMOVS   R4, F1
	FCVTHS  F1, F1
	VLD1.P  32(R0), [V4.B16, V5.B16]
	VLD1.P  32(R1), [V6.B16, V7.B16]
	VEOR    V16.B16, V16.B16, V16.B16
	DOT16(16, 4, 6, 17)
	DOT16(16, 5, 7, 18)
	Q8BLOCKEND
	SUBS    $1, R3
	BNE     q80loop
	FMOVS   F0, ret+32(FP)
	RET

// func dotQ4_0Q80…(row *byte, q *int8, d *float32, blocks int) float32
// A Q4_0 row (blocks of d, 16 bytes of nibbles: the low ones values 0–15,
// the high ones 16–31) times x rounded to Q8_0: each value nibble − 8 as
// int8.
TEXT KQ40, NOSPLIT, $0-36
	MOVD  row+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  blocks+24(FP), R3
	FMOVS ZR, F0
	VMOVI $15, V29.B16
	VMOVI $8, V30.B16

q40loop:
	MOVHU  (R0), R4
	FMOVS  R4, F1
	FCVTHS F1, F1
	ADD    $2, R0, R7
	VLD1   (R7), [V4.B16]
	ADD    $18, R0
	VAND   V29.B16, V4.B16, V10.B16
	VUSHR  $4, V4.B16, V11.B16
	VSUB   V30.B16, V10.B16, V10.B16
	VSUB   V30.B16, V11.B16, V11.B16
	VLD1.P 32(R1), [V6.B16, V7.B16]
	VEOR   V16.B16, V16.B16, V16.B16
	DOT16(16, 10, 6, 17)
	DOT16(16, 11, 7, 18)
	Q8BLOCKEND
	SUBS   $1, R3
	BNE    q40loop
	FMOVS  F0, ret+32(FP)
	RET

// func dotQ5_0Q80…(row *byte, q *int8, d *float32, blocks int) float32
// A Q5_0 row (blocks of d, 32 high bits, 16 bytes of low nibbles) times
// x rounded to Q8_0: each value (nibble | high bit·16) − 16 as int8.
TEXT KQ50, NOSPLIT, $0-36
	MOVD  row+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  blocks+24(FP), R3
	FMOVS ZR, F0
	MOVD  $q5bits<>(SB), R5
	VLD1  (R5), [V26.B16, V27.B16, V28.B16]
	VMOVI $15, V29.B16
	VMOVI $16, V30.B16

q50loop:
	MOVHU  (R0), R4
	FMOVS  R4, F1
	FCVTHS F1, F1
	MOVWU  2(R0), R6
	ADD    $6, R0, R7
	VLD1   (R7), [V4.B16]
	ADD    $22, R0
	Q5HIGH(R6)
	VAND   V29.B16, V4.B16, V10.B16
	VUSHR  $4, V4.B16, V11.B16
	VORR   V8.B16, V10.B16, V10.B16
	VORR   V9.B16, V11.B16, V11.B16
	VSUB   V30.B16, V10.B16, V10.B16
	VSUB   V30.B16, V11.B16, V11.B16
	VLD1.P 32(R1), [V6.B16, V7.B16]
	VEOR   V16.B16, V16.B16, V16.B16
	DOT16(16, 10, 6, 17)
	DOT16(16, 11, 7, 18)
	Q8BLOCKEND
	SUBS   $1, R3
	BNE    q50loop
	FMOVS  F0, ret+32(FP)
	RET

// func dotQ4_KQ8…(row *byte, q *int8, bs *int16, d *float32, blocks int) float32
// A Q4_K row times x quantized to q8K: per block d·d_x·Σ_j sc_j·(q·x over
// sub-block j) − dmin·d_x·Σ_j m_j·(Σ x over j), as dotQ4_KQ8Go.
TEXT KQ4K, NOSPLIT, $0-44
	K4START

q4kloop:
	K4HEAD
	ADD $16, R0, R5
	ADD $144, R0
	ZERO8
	Q4KPAIR(0, 1)
	Q4KPAIR(2, 3)
	Q4KPAIR(4, 5)
	Q4KPAIR(6, 7)
	K4TAIL
	SUBS  $1, R4
	BNE   q4kloop
	FMOVS F28, ret+40(FP)
	RET

// func dotQ5_KQ8…(row *byte, q *int8, bs *int16, d *float32, blocks int) float32
// A Q5_K row times x quantized to q8K: Q4_K's sums, each value's fifth
// bit from the block's 32 bytes of high bits, as dotQ5_KQ8Go.
TEXT KQ5K, NOSPLIT, $0-44
	K4START
	VMOVI $16, V23.B16

q5kloop:
	K4HEAD
	ADD  $16, R0, R5
	VLD1 (R5), [V14.B16, V15.B16]
	ADD  $48, R0, R5
	ADD  $176, R0
	ZERO8
	Q5KPAIR(0, 1)
	Q5KPAIR(2, 3)
	Q5KPAIR(4, 5)
	Q5KPAIR(6, 7)
	K4TAIL
	SUBS  $1, R4
	BNE   q5kloop
	FMOVS F28, ret+40(FP)
	RET

// func dotQ6_KQ8…(row *byte, q *int8, bs *int16, d *float32, blocks int) float32
// A Q6_K row times x quantized to q8K: per block d·d_x·Σ_s sc_s·(Σ q·x −
// 32·Σ x) over the 16 sub-blocks, as dotQ6_KQ8Go.
TEXT KQ6K, NOSPLIT, $0-44
	MOVD  row+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  bs+16(FP), R2
	MOVD  d+24(FP), R3
	MOVD  blocks+32(FP), R4
	FMOVS ZR, F15  // the sum (V0–V7 hold the block's integer sums)
	VMOVI $15, V22.B16
	VMOVI $0x30, V23.B16

q6kloop:
	VEOR V30.B16, V30.B16, V30.B16
	MOVD R0, R5         // ql
	ADD  $128, R0, R6   // qh
	ADD  $192, R0, R7   // scales
	Q6KHALF
	Q6KHALF
	// 32·Σ_s sc_s·bs_s
	VLD1.P 32(R2), [V12.H8, V13.H8]
	ADD    $192, R0, R7
	VLD1   (R7), [V31.B16]
	VSXTL8H(8, 31)
	VSXTL28H(9, 31)
	VSMULL4S(10, 12, 8)
	VSMLAL24S(10, 12, 8)
	VSMLAL4S(10, 13, 9)
	VSMLAL24S(10, 13, 9)
	VADDV4S(10, 10)
	VADDV4S(30, 30)
	FMOVS  F10, R8
	FMOVS  F30, R9
	SUBW   R8<<5, R9, R9  // sumi
	MOVHU  208(R0), R10
	FMOVS  R10, F1
	FCVTHS F1, F1
	FMOVS.P 4(R3), F2
	FMULS  F2, F1, F1  // d·d_x
	SCVTFWS R9, F3
	FMADDS F3, F15, F1, F15
	ADD    $210, R0
	SUBS   $1, R4
	BNE    q6kloop
	FMOVS  F15, ret+40(FP)
	RET
