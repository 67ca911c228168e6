//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The Q6_K product for several vectors, a vector per lane, as
// dotQ4_KQ8v8r4VNNI does for Q4_K: each row's block is unpacked once
// (six-bit values to bytes, scales), each group of four of its values is
// broadcast against the eight vectors' four (x+128, unsigned), a
// sub-block's four VPDPBUSD land in the vector's lane, and the exact sum
// Σ sc·(Σ q·qx − 32·Σ qx) is fused into the float sum once per block for
// all eight, as dotQ6_KQ8AVX2 fuses it for one vector, bit for bit. Each
// block's sums start from the row's block correction, −128·Σ sc·(Σ q):
// what the offset of 128 adds (kBlockSums, computed once per matrix).

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

// Q6_SUB adds row K's sub-block S (four groups of four at byte O of its
// values) times the vectors' (X0–X3), scaled by sc_S, to ACC (Y13:
// scratch).
#define Q6_SUB(K, S, O, X0, X1, X2, X3, ACC) \
	VPXORD Y13, Y13, Y13 \
	VPDPBUSD.BCST (352*(K)+(O))(SP), X0, Y13 \
	VPDPBUSD.BCST (352*(K)+(O)+4)(SP), X1, Y13 \
	VPDPBUSD.BCST (352*(K)+(O)+8)(SP), X2, Y13 \
	VPDPBUSD.BCST (352*(K)+(O)+12)(SP), X3, Y13 \
	VPMULLD.BCST SCD(K, S), Y13, Y13 \
	VPADDD Y13, ACC, ACC

// Q6_Q loads quarter Q's eight groups of the vectors (R9) and adds its
// two sub-blocks for the four rows.
#define Q6_Q(Q) \
	LOAD8(256*(Q)) \
	Q6_SUB(0, 2*(Q), 32*(Q), Y0, Y1, Y2, Y3, Y9) \
	Q6_SUB(0, 2*(Q)+1, 32*(Q)+16, Y4, Y5, Y6, Y7, Y9) \
	Q6_SUB(1, 2*(Q), 32*(Q), Y0, Y1, Y2, Y3, Y10) \
	Q6_SUB(1, 2*(Q)+1, 32*(Q)+16, Y4, Y5, Y6, Y7, Y10) \
	Q6_SUB(2, 2*(Q), 32*(Q), Y0, Y1, Y2, Y3, Y11) \
	Q6_SUB(2, 2*(Q)+1, 32*(Q)+16, Y4, Y5, Y6, Y7, Y11) \
	Q6_SUB(3, 2*(Q), 32*(Q), Y0, Y1, Y2, Y3, Y12) \
	Q6_SUB(3, 2*(Q)+1, 32*(Q)+16, Y4, Y5, Y6, Y7, Y12)

// Q6_OFFSET takes 32·Σ_s sc_s·(the vectors' Σ qx over sub-block s) from
// row K's sums S (Y0–Y7: the vectors' sums over each 16, in pairs; Y13:
// scratch).
#define Q6_OFFSET(K, S) \
	PAIRS8(352*(K)+320, Y13) \
	VPSLLD $5, Y13, Y13 \
	VPSUBD Y13, S, S

// Q6_FUSE fuses the row at R's sums S into ACC (Y8: the vectors' d_x, R8:
// the binary16 table, Y15: scratch).
#define Q6_FUSE(R, S, ACC) \
	VCVTDQ2PS S, S \
	MOVWLZX 208(R), AX \
	VMULPS.BCST (R8)(AX*4), Y8, Y15 \
	VFMADD231PS S, Y15, ACC

// Q6_AHEAD fetches the block ahead bytes (DX) past the row at R into L2.
#define Q6_AHEAD(R) \
	PREFETCHT1 (R)(DX*1) \
	PREFETCHT1 64(R)(DX*1) \
	PREFETCHT1 128(R)(DX*1) \
	PREFETCHT1 192(R)(DX*1)

// func dotQ6_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)
// Four Q6_K rows (stride bytes apart) times a group of eight vectors laid
// out by q8K.layLanes: the four rows' results for vector v go to
// out[v·vstride/4 + 0..3], for the first lanes vectors (lanes > 0). kc
// holds the rows' block corrections, block by block four side by side
// (kBlockSums). The rows ahead bytes on are fetched into L2 meanwhile.
TEXT ·dotQ6_KQ8v8r4VNNI(SB), $1408-80
	KLANES_ARGS
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Y27

q6v8block:
	Q6_AHEAD(SI)
	Q6_AHEAD(R10)
	Q6_AHEAD(R11)
	Q6_AHEAD(R12)
	Q6_PREP(SI, 0)
	Q6_PREP(R10, 1)
	Q6_PREP(R11, 2)
	Q6_PREP(R12, 3)
	KC4_NEXT
	Q6_Q(0)
	Q6_Q(1)
	Q6_Q(2)
	Q6_Q(3)
	Q6_Q(4)
	Q6_Q(5)
	Q6_Q(6)
	Q6_Q(7)
	LOAD8(2048)
	Q6_OFFSET(0, Y9)
	Q6_OFFSET(1, Y10)
	Q6_OFFSET(2, Y11)
	Q6_OFFSET(3, Y12)
	VMOVUPS 2304(R9), Y8
	Q6_FUSE(SI, Y9, Y16)
	Q6_FUSE(R10, Y10, Y17)
	Q6_FUSE(R11, Y11, Y18)
	Q6_FUSE(R12, Y12, Y19)
	ROWS4_NEXT(210)
	ADDQ $2336, R9
	DECQ CX
	JNZ  q6v8block

	KLANES_STORE(q6v8done)

q6v8done:
	VZEROUPPER
	RET
