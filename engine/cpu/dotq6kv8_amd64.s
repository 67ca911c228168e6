//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The Q6_K product for several vectors, as dotQ4_KQ8v8r4VNNI does for
// Q4_K: each row's block is unpacked once (six-bit values to bytes,
// scales); each pair of its groups of four values is broadcast against
// the eight vectors' pairs (x+128, unsigned), so a sub-block's two
// VPDPBUSD leave each vector's sums over its even and its odd groups side
// by side, scaled by the sub-block's scale. The exact sum
// Σ sc·(Σ q·qx − 32·Σ qx) is completed once per block, its even and odd
// lanes added two rows at a time, and fused into the float sum as
// dotQ6_KQ8AVX2 fuses it for one vector, bit for bit. Each block's sums
// start from the row's block correction, −128·Σ sc·(Σ q): what the offset
// of 128 adds (kBlockSums, computed once per matrix).

// The stack frame: per row k (of four), 352 bytes from 352·k: its 256
// values as bytes, its 16 scales as int32 and as int16.
#define SCD(K, J) (352*(K)+256+4*(J))(SP)
#define SCP(K, J) (352*(K)+320+4*(J))(SP)

// Q6_QUARTER stores quarter Q's 32 values (V) for row K.
#define Q6_QUARTER(K, Q, V) VMOVDQU V, (352*(K)+32*(Q))(SP)

// Q6_HALF unpacks half H (128 values) of row K's block at R (Y28: 0x0f
// bytes, Y27: 0x30 bytes; Y1–Y3, Y5, Y14: scratch).
#define Q6_HALF(R, K, H) \
	VMOVDQU (64*(H))(R), Y1 \
	VMOVDQU (64*(H)+32)(R), Y2 \
	VMOVDQU (128+32*(H))(R), Y3 \
	VPANDD Y28, Y1, Y5 \
	VPSLLW $4, Y3, Y14 \
	VPANDD Y27, Y14, Y14 \
	VPORD Y14, Y5, Y5 \
	Q6_QUARTER(K, 4*(H), Y5) \
	VPANDD Y28, Y2, Y5 \
	VPSLLW $2, Y3, Y14 \
	VPANDD Y27, Y14, Y14 \
	VPORD Y14, Y5, Y5 \
	Q6_QUARTER(K, 4*(H)+1, Y5) \
	VPSRLW $4, Y1, Y5 \
	VPANDD Y28, Y5, Y5 \
	VPANDD Y27, Y3, Y14 \
	VPORD Y14, Y5, Y5 \
	Q6_QUARTER(K, 4*(H)+2, Y5) \
	VPSRLW $4, Y2, Y5 \
	VPANDD Y28, Y5, Y5 \
	VPSRLW $2, Y3, Y14 \
	VPANDD Y27, Y14, Y14 \
	VPORD Y14, Y5, Y5 \
	Q6_QUARTER(K, 4*(H)+3, Y5)

// Q6_PREP unpacks row K's block at R into its part of the frame.
#define Q6_PREP(R, K) \
	VPMOVSXBD 192(R), Y15 \
	VMOVDQU Y15, SCD(K, 0) \
	VPMOVSXBD 200(R), Y15 \
	VMOVDQU Y15, SCD(K, 8) \
	VPMOVSXBW 192(R), Y15 \
	VMOVDQU Y15, SCP(K, 0) \
	Q6_HALF(R, K, 0) \
	Q6_HALF(R, K, 1)

// Q6_SUB adds row K's sub-block S (the pairs of groups at byte O of its
// values, B: scratch) times the vectors' pairs XA and XB, scaled by sc_S,
// to ACC (T: scratch).
#define Q6_SUB(K, S, O, XA, XB, ACC, T, B) \
	VPBROADCASTQ (352*(K)+(O))(SP), B \
	VPXORD T, T, T \
	VPDPBUSD B, XA, T \
	VPBROADCASTQ (352*(K)+(O)+8)(SP), B \
	VPDPBUSD B, XB, T \
	VPMULLD.BCST SCD(K, S), T, T \
	VPADDD T, ACC, ACC

// Q6_Q loads quarter Q's four pairs of groups of the vectors (R9) and
// adds its two sub-blocks for the four rows.
#define Q6_Q(Q) \
	VMOVDQU32 (256*(Q))(R9), Z0 \
	VMOVDQU32 (256*(Q)+64)(R9), Z1 \
	VMOVDQU32 (256*(Q)+128)(R9), Z2 \
	VMOVDQU32 (256*(Q)+192)(R9), Z3 \
	Q6_SUB(0, 2*(Q), 32*(Q), Z0, Z1, Z9, Z12, Z4) \
	Q6_SUB(1, 2*(Q), 32*(Q), Z0, Z1, Z10, Z13, Z5) \
	Q6_SUB(2, 2*(Q), 32*(Q), Z0, Z1, Z11, Z14, Z6) \
	Q6_SUB(3, 2*(Q), 32*(Q), Z0, Z1, Z18, Z15, Z7) \
	Q6_SUB(0, 2*(Q)+1, 32*(Q)+16, Z2, Z3, Z9, Z12, Z4) \
	Q6_SUB(1, 2*(Q)+1, 32*(Q)+16, Z2, Z3, Z10, Z13, Z5) \
	Q6_SUB(2, 2*(Q)+1, 32*(Q)+16, Z2, Z3, Z11, Z14, Z6) \
	Q6_SUB(3, 2*(Q)+1, 32*(Q)+16, Z2, Z3, Z18, Z15, Z7)

// Q6_OFFSET takes 32·Σ_s sc_s·(the vectors' Σ qx over sub-block s) from
// row K's sums S (Z0–Z3: the vectors' sums over each 16 in pairs; M, B:
// scratch).
#define Q6_OFFSET(K, S, M, B) \
	PAIRS4(352*(K)+320, M, B) \
	VPSLLD $5, M, M \
	VPSUBD M, S, S

// Q6_FUSE fuses the rows RA's and RB's sums SA and SB into ACC (Z8: the
// vectors' d_x in PAIR_ADD's order; R8: the binary16 table; Z20, Z21,
// Z25: scratch).
#define Q6_FUSE(RA, RB, SA, SB, ACC) \
	PAIR_ADD(SA, SB, Z20, Z21) \
	VCVTDQ2PS Z20, Z20 \
	ROWS_F16(208, RA, RB, Z25) \
	VMULPS Z8, Z25, Z25 \
	VFMADD231PS Z20, Z25, ACC

// Q6_AHEAD fetches the block ahead bytes (DX) past the row at R into L2.
#define Q6_AHEAD(R) \
	PREFETCHT1 (R)(DX*1) \
	PREFETCHT1 64(R)(DX*1) \
	PREFETCHT1 128(R)(DX*1) \
	PREFETCHT1 192(R)(DX*1)

// func dotQ6_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)
// Four Q6_K rows (stride bytes apart) times a group of eight vectors laid
// out by q8K.layLanes (per block 2368 bytes): the four rows' results for
// vector v go to out[v·vstride/4 + 0..3], for the first lanes vectors
// (lanes > 0). kc holds the rows' block corrections, block by block four
// side by side (kBlockSums). The rows ahead bytes on are fetched into L2
// meanwhile.
TEXT ·dotQ6_KQ8v8r4VNNI(SB), $1408-80
	KLANES_ARGS
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z27

q6v8block:
	Q6_AHEAD(SI)
	Q6_AHEAD(R10)
	Q6_AHEAD(R11)
	Q6_AHEAD(R12)
	Q6_PREP(SI, 0)
	Q6_PREP(R10, 1)
	Q6_PREP(R11, 2)
	Q6_PREP(R12, 3)
	KC4_EVEN
	Q6_Q(0)
	Q6_Q(1)
	Q6_Q(2)
	Q6_Q(3)
	Q6_Q(4)
	Q6_Q(5)
	Q6_Q(6)
	Q6_Q(7)
	VMOVDQU32 2048(R9), Z0
	VMOVDQU32 2112(R9), Z1
	VMOVDQU32 2176(R9), Z2
	VMOVDQU32 2240(R9), Z3
	Q6_OFFSET(0, Z9, Z19, Z4)
	Q6_OFFSET(1, Z10, Z22, Z5)
	Q6_OFFSET(2, Z11, Z23, Z6)
	Q6_OFFSET(3, Z18, Z24, Z7)
	VMOVDQU32 2304(R9), Z8
	Q6_FUSE(SI, R10, Z9, Z10, Z16)
	Q6_FUSE(R11, R12, Z11, Z18, Z17)
	ROWS4_NEXT(210)
	ADDQ $2368, R9
	DECQ CX
	JNZ  q6v8block

	KLANES_STORE(q6v8done)

q6v8done:
	VZEROUPPER
	RET
