//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"
#include "q4kscales_amd64.h"

// The Q4_K product for several vectors, as dotQ8_0Q80v8r4VNNI does for
// Q8_0: each row's block is unpacked once (nibbles to bytes, scales and
// mins); each pair of its groups of four values is broadcast against the
// eight vectors' pairs (x+128, unsigned), so a sub-block's four VPDPBUSD
// leave each vector's sums over its even and its odd groups side by side,
// scaled by the sub-block's scale. The even and odd sums, and the mins'
// Σ m·(Σ qx), are added once per block, two rows at a time, and fused
// into their float sums as dotQ4_KQ8AVX2 fuses them for one vector, bit
// for bit. Each block's sums start from the row's block correction,
// −128·Σ sc·(Σ q): what the offset of 128 adds (kBlockSums, computed
// once per matrix).

// The stack frame: per row k (of four), 320 bytes from 320·k: its 256
// values as bytes, its 8 scales as int32 and its 8 mins as int16 pairs
// (m, m).
#define SC(K, J) (320*(K)+256+4*(J))(SP)
#define MP(K, J) (320*(K)+288+4*(J))(SP)

// ROW_PREP unpacks row K's block at R into its part of the frame (Z28:
// 0x0f bytes; Y14, Y15: scratch).
#define ROW_PREP(R, K) \
	Q4K_SCALES_AT(R, R13, R14, AX, BX, DI) \
	VMOVQ R13, X15 \
	VPMOVZXBD X15, Y15 \
	VMOVDQU Y15, SC(K, 0) \
	VMOVQ R14, X15 \
	VPMOVZXBD X15, Y15 \
	VPSLLD $16, Y15, Y14 \
	VPOR Y14, Y15, Y15 \
	VMOVDQU Y15, MP(K, 0) \
	ROW_NIBBLES(R, K, 0) \
	ROW_NIBBLES(R, K, 1) \
	ROW_NIBBLES(R, K, 2) \
	ROW_NIBBLES(R, K, 3)

// ROW_NIBBLES splits the 32 bytes of nibbles P of row K's block at R into
// sub-blocks 2P (low nibbles) and 2P+1 (high).
#define ROW_NIBBLES(R, K, P) \
	VMOVDQU (16+32*(P))(R), Y15 \
	VPANDD Y28, Y15, Y14 \
	VMOVDQU Y14, (320*(K)+64*(P))(SP) \
	VPSRLW $4, Y15, Y15 \
	VPANDD Y28, Y15, Y15 \
	VMOVDQU Y15, (320*(K)+64*(P)+32)(SP)

// SUB_ROW adds row K's sub-block J (its four pairs of groups broadcast,
// B: scratch) times the vectors' pairs (Z0–Z3), scaled by sc_J, to S
// (T: scratch).
#define SUB_ROW(K, J, S, T, B) \
	VPBROADCASTQ (320*(K)+32*(J))(SP), B \
	VPXORD T, T, T \
	VPDPBUSD B, Z0, T \
	VPBROADCASTQ (320*(K)+32*(J)+8)(SP), B \
	VPDPBUSD B, Z1, T \
	VPBROADCASTQ (320*(K)+32*(J)+16)(SP), B \
	VPDPBUSD B, Z2, T \
	VPBROADCASTQ (320*(K)+32*(J)+24)(SP), B \
	VPDPBUSD B, Z3, T \
	VPMULLD.BCST SC(K, J), T, T \
	VPADDD T, S, S

// SUB loads sub-block J's four pairs of groups of the vectors (R9) and
// adds them for the four rows.
#define SUB(J) \
	VMOVDQU32 (256*(J))(R9), Z0 \
	VMOVDQU32 (256*(J)+64)(R9), Z1 \
	VMOVDQU32 (256*(J)+128)(R9), Z2 \
	VMOVDQU32 (256*(J)+192)(R9), Z3 \
	SUB_ROW(0, J, Z9, Z12, Z4) \
	SUB_ROW(1, J, Z10, Z13, Z5) \
	SUB_ROW(2, J, Z11, Z14, Z6) \
	SUB_ROW(3, J, Z18, Z15, Z7)

// MINS_ROW sets M to row K's Σ_j m_j·(the vectors' Σ qx over sub-block
// j), even sub-blocks in lane 2v and odd ones in 2v+1 (Z0–Z3: the
// vectors' sums over each 16 in pairs; B: scratch).
#define MINS_ROW(K, M, B) PAIRS4(320*(K)+288, M, B)

// FUSE fuses the rows RA's and RB's sums SA, SB and mins MA, MB into ACC
// and ACCM (Z8: the vectors' d_x in PAIR_ADD's order; R8: the binary16
// table; K2: lanes 2 and 3 of each 128 bits; Z25–Z27: scratch).
#define FUSE(RA, RB, SA, SB, MA, MB, ACC, ACCM) \
	PAIR_ADD(SA, SB, Z25, Z26) \
	PAIR_ADD(MA, MB, Z26, Z27) \
	VCVTDQ2PS Z25, Z25 \
	VCVTDQ2PS Z26, Z26 \
	ROWS_F16(0, RA, RB, Z27) \
	VMULPS Z8, Z27, Z27 \
	VFMADD231PS Z25, Z27, ACC \
	ROWS_F16(2, RA, RB, Z27) \
	VMULPS Z8, Z27, Z27 \
	VFMADD231PS Z26, Z27, ACCM

// ROW_AHEAD fetches the block ahead bytes (DX) past the row at R into L2.
#define ROW_AHEAD(R) \
	PREFETCHT1 (R)(DX*1) \
	PREFETCHT1 64(R)(DX*1) \
	PREFETCHT1 128(R)(DX*1)

// func dotQ4_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)
// Four Q4_K rows (stride bytes apart) times a group of eight vectors laid
// out by q8K.layLanes (per block 2368 bytes): the four rows' results for
// vector v go to out[v·vstride/4 + 0..3], for the first lanes vectors
// (lanes > 0). kc holds the rows' block corrections, block by block four
// side by side (kBlockSums). The rows ahead bytes on are fetched into L2
// meanwhile.
TEXT ·dotQ4_KQ8v8r4VNNI(SB), $1280-80
	KLANES_ARGS
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21

q4v8block:
	ROW_AHEAD(SI)
	ROW_AHEAD(R10)
	ROW_AHEAD(R11)
	ROW_AHEAD(R12)
	ROW_PREP(SI, 0)
	ROW_PREP(R10, 1)
	ROW_PREP(R11, 2)
	ROW_PREP(R12, 3)
	KC4_EVEN
	SUB(0)
	SUB(1)
	SUB(2)
	SUB(3)
	SUB(4)
	SUB(5)
	SUB(6)
	SUB(7)
	VMOVDQU32 2048(R9), Z0
	VMOVDQU32 2112(R9), Z1
	VMOVDQU32 2176(R9), Z2
	VMOVDQU32 2240(R9), Z3
	MINS_ROW(0, Z19, Z4)
	MINS_ROW(1, Z22, Z5)
	MINS_ROW(2, Z23, Z6)
	MINS_ROW(3, Z24, Z7)
	VMOVDQU32 2304(R9), Z8
	FUSE(SI, R10, Z9, Z10, Z19, Z22, Z16, Z20)
	FUSE(R11, R12, Z11, Z18, Z23, Z24, Z17, Z21)
	ROWS4_NEXT(144)
	ADDQ $2368, R9
	DECQ CX
	JNZ  q4v8block

	VSUBPS Z20, Z16, Z16
	VSUBPS Z21, Z17, Z17
	KLANES_STORE(q4v8done)

q4v8done:
	VZEROUPPER
	RET
