//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"
#include "q4kscales_amd64.h"

// The Q4_K product for several vectors, as dotQ8_0Q80v8r4VNNI does for
// Q8_0 but two rows to a 512-bit register: lane 2v holds the pair's first
// row times vector v, lane 2v+1 its second. Each pair's block is unpacked
// once (nibbles to bytes, scales and mins), its two rows' groups of four
// values side by side; each group is broadcast as such a pair against the
// eight vectors' four (x+128, unsigned), each doubled into two lanes, so a
// sub-block's eight VPDPBUSD land in the row's lane for the vector. The
// exact integer sums Σ sc·(q·qx) and Σ m·(Σ qx) are then fused into their
// float sums once per block, as dotQ4_KQ8AVX2 fuses them for one vector,
// bit for bit. Each block's sums start from the row's block correction,
// −128·Σ sc·(Σ q): what the offset of 128 adds (kBlockSums, computed once
// per matrix).

// The stack frame: per pair p (rows 2p and 2p+1), 640 bytes from 640·p:
// its 8 sub-blocks of 64 bytes (group g of the pair's values at 8g, as
// pairValues interleaves them), then its 8 scales as int32 and its 8
// mins as int16 pairs (m, m), 64 bytes each, as PAIR_STORE writes them.
#define SC2(P, O) (640*(P)+512+(O))(SP)
#define MN2(P, O) (640*(P)+576+(O))(SP)

// PAIR_PREP unpacks the blocks at RA and RB, pair P's rows, into its part
// of the frame (Z28: 0x0f bytes; Z3–Z7: scratch).
#define PAIR_PREP(RA, RB, P) \
	Q4K_SCALES_AT(RA, R13, R14, AX, BX, DI) \
	VMOVQ R13, X3 \
	VPMOVZXBD X3, Y3 \
	VMOVQ R14, X4 \
	VPMOVZXBD X4, Y4 \
	VPSLLD $16, Y4, Y5 \
	VPORD Y5, Y4, Y4 \
	Q4K_SCALES_AT(RB, R13, R14, AX, BX, DI) \
	VMOVQ R13, X5 \
	VPMOVZXBD X5, Y5 \
	VMOVQ R14, X6 \
	VPMOVZXBD X6, Y6 \
	VPSLLD $16, Y6, Y7 \
	VPORD Y7, Y6, Y6 \
	PAIR_STORE(Y3, Y5, 640*(P)+512) \
	PAIR_STORE(Y4, Y6, 640*(P)+576) \
	PAIR_NIBBLES(RA, RB, P, 0) \
	PAIR_NIBBLES(RA, RB, P, 1) \
	PAIR_NIBBLES(RA, RB, P, 2) \
	PAIR_NIBBLES(RA, RB, P, 3)

// PAIR_NIBBLES splits the 32 bytes of nibbles Q of both rows into
// sub-blocks 2Q (low nibbles) and 2Q+1 (high), the rows' groups
// interleaved by Z29.
#define PAIR_NIBBLES(RA, RB, P, Q) \
	VMOVDQU (16+32*(Q))(RA), Y3 \
	VINSERTI64X4 $1, (16+32*(Q))(RB), Z3, Z3 \
	VPSRLW $4, Z3, Z4 \
	VPANDD Z28, Z3, Z3 \
	VPANDD Z28, Z4, Z4 \
	VPERMD Z3, Z29, Z3 \
	VPERMD Z4, Z29, Z4 \
	VMOVDQU32 Z3, (640*(P)+128*(Q))(SP) \
	VMOVDQU32 Z4, (640*(P)+128*(Q)+64)(SP)

// GROUP adds group G of sub-block J of both pairs times the vectors'
// (each doubled by Z30) to Z13 and Z14.
#define GROUP(J, G) \
	VPERMD (256*(J)+32*(G))(R9), Z30, Z0 \
	VBROADCASTI32X2 (64*(J)+8*(G))(SP), Z1 \
	VBROADCASTI32X2 (640+64*(J)+8*(G))(SP), Z2 \
	VPDPBUSD Z1, Z0, Z13 \
	VPDPBUSD Z2, Z0, Z14

// SUB adds sub-block J (scales at byte O of the pair's) of both pairs,
// scaled, to Z9 and Z10.
#define SUB(J, O) \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	GROUP(J, 0) \
	GROUP(J, 1) \
	GROUP(J, 2) \
	GROUP(J, 3) \
	GROUP(J, 4) \
	GROUP(J, 5) \
	GROUP(J, 6) \
	GROUP(J, 7) \
	VBROADCASTI32X2 SC2(0, O), Z1 \
	VBROADCASTI32X2 SC2(1, O), Z2 \
	VPMULLD Z1, Z13, Z13 \
	VPMULLD Z2, Z14, Z14 \
	VPADDD Z13, Z9, Z9 \
	VPADDD Z14, Z10, Z10

// MINS adds sub-block J's mins (byte O of the pair's) times the vectors'
// sums over its two sixteens to Z24 and Z25.
#define MINS(J, O) \
	VPERMD (2048+32*(J))(R9), Z30, Z0 \
	VBROADCASTI32X2 MN2(0, O), Z1 \
	VBROADCASTI32X2 MN2(1, O), Z2 \
	VPDPWSSD Z1, Z0, Z24 \
	VPDPWSSD Z2, Z0, Z25

// FUSE fuses the pair RA, RB's integer sums S and mins M into ACC and ACCM
// (Z8: the vectors' d_x, doubled; R8: the binary16 table; Z15: scratch).
#define FUSE(RA, RB, S, M, ACC, ACCM) \
	VCVTDQ2PS S, S \
	VCVTDQ2PS M, M \
	PAIR_F16(0, RA, RB) \
	VMULPS Z8, Z15, Z15 \
	VFMADD231PS S, Z15, ACC \
	PAIR_F16(2, RA, RB) \
	VMULPS Z8, Z15, Z15 \
	VFMADD231PS M, Z15, ACCM

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
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21

q4v8block:
	ROW_AHEAD(SI)
	ROW_AHEAD(R10)
	ROW_AHEAD(R11)
	ROW_AHEAD(R12)
	PAIR_PREP(SI, R10, 0)
	PAIR_PREP(R11, R12, 1)
	KC2_NEXT
	SUB(0, PG0)
	SUB(1, PG1)
	SUB(2, PG2)
	SUB(3, PG3)
	SUB(4, PG4)
	SUB(5, PG5)
	SUB(6, PG6)
	SUB(7, PG7)
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	MINS(0, PG0)
	MINS(1, PG1)
	MINS(2, PG2)
	MINS(3, PG3)
	MINS(4, PG4)
	MINS(5, PG5)
	MINS(6, PG6)
	MINS(7, PG7)
	VMOVUPS 2304(R9), Y8
	VPERMD Z8, Z30, Z8
	FUSE(SI, R10, Z9, Z24, Z16, Z20)
	FUSE(R11, R12, Z10, Z25, Z17, Z21)
	ROWS4_NEXT(144)
	ADDQ $2336, R9
	DECQ CX
	JNZ  q4v8block

	VSUBPS Z20, Z16, Z16
	VSUBPS Z21, Z17, Z17
	KZLANES_STORE(q4v8done)

q4v8done:
	VZEROUPPER
	RET
