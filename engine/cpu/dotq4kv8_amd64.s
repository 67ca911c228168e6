//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"
#include "q4kscales_amd64.h"

// The Q4_K product for several vectors, a vector per lane (AVX-512 VL,
// BW and VNNI, 256-bit registers), as dotQ8_0Q80v8r4VNNI does for Q8_0:
// each row's block is unpacked once (nibbles to bytes, scales and mins),
// each group of four of its values is broadcast against the eight
// vectors' four (x+128, unsigned) and a sub-block's eight VPDPBUSD land in
// the same lane; the exact integer sums Σ sc·(q·qx) and Σ m·(Σ qx) are
// then fused into their float sums once per block for all eight, as
// dotQ4_KQ8AVX2 fuses them for one vector, bit for bit. Each block's sums
// start from the row's block correction, −128·Σ sc·(Σ q): what the
// offset of 128 adds (kBlockSums, computed once per matrix).

// The stack frame: per row k (of four), 320 bytes from 320·k: its 256
// values as bytes, its 8 scales as int32 and its 8 mins as int16 pairs
// (m, m).
#define SC(K, J) (320*(K)+256+4*(J))(SP)
#define MP(K, J) (320*(K)+288+4*(J))(SP)

// ROW_PREP unpacks row K's block at R into its part of the frame (Y28:
// 0x0f bytes).
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
	VMOVDQU (16+32*P)(R), Y15 \
	VPANDD Y28, Y15, Y14 \
	VMOVDQU Y14, (320*(K)+64*P)(SP) \
	VPSRLW $4, Y15, Y15 \
	VPANDD Y28, Y15, Y15 \
	VMOVDQU Y15, (320*(K)+64*P+32)(SP)

// SUB_ROW adds row K's sub-block J times the eight vectors' values
// (Y0–Y7), scaled by sc_J, to S (Y13: scratch).
#define SUB_ROW(K, J, S) \
	VPXORD Y13, Y13, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J))(SP), Y0, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+4)(SP), Y1, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+8)(SP), Y2, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+12)(SP), Y3, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+16)(SP), Y4, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+20)(SP), Y5, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+24)(SP), Y6, Y13 \
	VPDPBUSD.BCST (320*(K)+32*(J)+28)(SP), Y7, Y13 \
	VPMULLD.BCST SC(K, J), Y13, Y13 \
	VPADDD Y13, S, S

// SUB loads sub-block J's eight groups of the vectors (R9) and adds them
// for the four rows.
#define SUB(J) \
	LOAD8(256*(J)) \
	SUB_ROW(0, J, Y9) \
	SUB_ROW(1, J, Y10) \
	SUB_ROW(2, J, Y11) \
	SUB_ROW(3, J, Y12)

// MINS_ROW sets M to row K's Σ_j m_j·(the vectors' Σ qx over sub-block j)
// (Y0–Y7: the vectors' sums over each 16, in pairs).
#define MINS_ROW(K, M) PAIRS8(320*(K)+288, M)

// FUSE_ROW fuses the row at R's integer sums S and mins M into ACC and
// ACCM (Y8: the vectors' d_x, R8: the binary16 table, Y15: scratch).
#define FUSE_ROW(R, S, M, ACC, ACCM) \
	VCVTDQ2PS S, S \
	VCVTDQ2PS M, M \
	MOVWLZX (R), AX \
	VMULPS.BCST (R8)(AX*4), Y8, Y15 \
	VFMADD231PS S, Y15, ACC \
	MOVWLZX 2(R), AX \
	VMULPS.BCST (R8)(AX*4), Y8, Y15 \
	VFMADD231PS M, Y15, ACCM

// ROW_AHEAD fetches the block ahead bytes (DX) past the row at R into L2.
#define ROW_AHEAD(R) \
	PREFETCHT1 (R)(DX*1) \
	PREFETCHT1 64(R)(DX*1) \
	PREFETCHT1 128(R)(DX*1)

// func dotQ4_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)
// Four Q4_K rows (stride bytes apart) times a group of eight vectors laid
// out by q8K.layLanes (per block 2336 bytes: for each four values the eight
// vectors' as unsigned bytes x+128, then per pair of 16 their sums as
// int16 pairs, then their d_x): the four rows' results for vector v go to
// out[v·vstride/4 + 0..3], for the first lanes vectors (lanes > 0). kc
// holds the rows' block corrections, block by block four side by side
// (kBlockSums). The rows ahead bytes on are fetched into L2 meanwhile.
TEXT ·dotQ4_KQ8v8r4VNNI(SB), $1280-80
	KLANES_ARGS
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23

q4v8block:
	ROW_AHEAD(SI)
	ROW_AHEAD(R10)
	ROW_AHEAD(R11)
	ROW_AHEAD(R12)
	ROW_PREP(SI, 0)
	ROW_PREP(R10, 1)
	ROW_PREP(R11, 2)
	ROW_PREP(R12, 3)
	KC4_NEXT
	SUB(0)
	SUB(1)
	SUB(2)
	SUB(3)
	SUB(4)
	SUB(5)
	SUB(6)
	SUB(7)
	LOAD8(2048)
	MINS_ROW(0, Y24)
	MINS_ROW(1, Y25)
	MINS_ROW(2, Y26)
	MINS_ROW(3, Y27)
	VMOVUPS 2304(R9), Y8
	FUSE_ROW(SI, Y9, Y24, Y16, Y20)
	FUSE_ROW(R10, Y10, Y25, Y17, Y21)
	FUSE_ROW(R11, Y11, Y26, Y18, Y22)
	FUSE_ROW(R12, Y12, Y27, Y19, Y23)
	ROWS4_NEXT(144)
	ADDQ $2336, R9
	DECQ CX
	JNZ  q4v8block

	VSUBPS Y20, Y16, Y16
	VSUBPS Y21, Y17, Y17
	VSUBPS Y22, Y18, Y18
	VSUBPS Y23, Y19, Y19
	KLANES_STORE(q4v8done)

q4v8done:
	VZEROUPPER
	RET
