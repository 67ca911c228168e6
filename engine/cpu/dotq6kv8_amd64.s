//go:build !purego

#include "textflag.h"
#include "lanes_amd64.h"

// The Q6_K product for several vectors, two rows to a 512-bit register as
// dotQ4_KQ8v8r4VNNI has them: each pair's block is unpacked once (six-bit
// values to bytes, scales), its two rows' groups of four values side by
// side; each group is broadcast as such a pair against the eight vectors'
// four (x+128, unsigned), each doubled into two lanes, so a sub-block's
// four VPDPBUSD land in the row's lane for the vector. The exact sum
// Σ sc·(Σ q·qx − 32·Σ qx) is fused into the float sum once per block, as
// dotQ6_KQ8AVX2 fuses it for one vector, bit for bit. Each block's sums
// start from the row's block correction, −128·Σ sc·(Σ q): what the offset
// of 128 adds (kBlockSums, computed once per matrix).

// The stack frame: per pair p (rows 2p and 2p+1), 704 bytes from 704·p:
// its 8 quarters (32 values) of 64 bytes (group g of the pair's values
// at 8g, as pairValues interleaves them), then its 16 scales as int32
// (128 bytes) and as int16 pairs (64 bytes), as PAIR_STORE writes them.
#define Q6V(P, Q, O) (704*(P)+64*(Q)+(O))(SP)
#define Q6SC(P, O) (704*(P)+512+(O))(SP)
#define Q6SP(P, O) (704*(P)+640+(O))(SP)

// The four quarters of a half of both rows' blocks, from their low bits
// L1 (the half's first 32 bytes of each row), L2 (the next 32) and high
// bits H, into OUT (Z28: 0x0f bytes, Z27: 0x30 bytes; T: scratch).
#define Q6_Q0(L1, L2, H, OUT, T) \
	VPANDD Z28, L1, OUT \
	VPSLLW $4, H, T \
	VPANDD Z27, T, T \
	VPORD T, OUT, OUT

#define Q6_Q1(L1, L2, H, OUT, T) \
	VPANDD Z28, L2, OUT \
	VPSLLW $2, H, T \
	VPANDD Z27, T, T \
	VPORD T, OUT, OUT

#define Q6_Q2(L1, L2, H, OUT, T) \
	VPSRLW $4, L1, OUT \
	VPANDD Z28, OUT, OUT \
	VPANDD Z27, H, T \
	VPORD T, OUT, OUT

#define Q6_Q3(L1, L2, H, OUT, T) \
	VPSRLW $4, L2, OUT \
	VPANDD Z28, OUT, OUT \
	VPSRLW $2, H, T \
	VPANDD Z27, T, T \
	VPORD T, OUT, OUT

// Q6_LOAD2 loads the 32 bytes at OFF of the rows at RA and RB as the
// halves of Z (Y: its low half).
#define Q6_LOAD2(RA, RB, OFF, Y, Z) \
	VMOVDQU OFF(RA), Y \
	VINSERTI64X4 $1, OFF(RB), Z, Z

// Q6_STORE interleaves the rows' groups of quarter Q in Z (Z29) and
// stores it as pair P's.
#define Q6_STORE(Z, P, Q) \
	VPERMD Z, Z29, Z \
	VMOVDQU32 Z, Q6V(P, Q, 0)

// Q6_HALF unpacks half H (128 values) of the blocks at RA and RB into pair
// P's quarters 4H–4H+3 (Z1–Z3, Z5, Z14: scratch).
#define Q6_HALF(RA, RB, P, H) \
	Q6_LOAD2(RA, RB, (64*(H)), Y1, Z1) \
	Q6_LOAD2(RA, RB, (64*(H)+32), Y2, Z2) \
	Q6_LOAD2(RA, RB, (128+32*(H)), Y3, Z3) \
	Q6_Q0(Z1, Z2, Z3, Z5, Z14) \
	Q6_STORE(Z5, P, 4*(H)) \
	Q6_Q1(Z1, Z2, Z3, Z5, Z14) \
	Q6_STORE(Z5, P, 4*(H)+1) \
	Q6_Q2(Z1, Z2, Z3, Z5, Z14) \
	Q6_STORE(Z5, P, 4*(H)+2) \
	Q6_Q3(Z1, Z2, Z3, Z5, Z14) \
	Q6_STORE(Z5, P, 4*(H)+3)

// Q6_PREP unpacks the blocks at RA and RB, pair P's rows, into its part of
// the frame.
#define Q6_PREP(RA, RB, P) \
	VPMOVSXBD 192(RA), Y3 \
	VPMOVSXBD 192(RB), Y4 \
	PAIR_STORE(Y3, Y4, 704*(P)+512) \
	VPMOVSXBD 200(RA), Y3 \
	VPMOVSXBD 200(RB), Y4 \
	PAIR_STORE(Y3, Y4, 704*(P)+576) \
	VPMOVSXBW 192(RA), Y3 \
	VPMOVSXBW 192(RB), Y4 \
	PAIR_STORE(Y3, Y4, 704*(P)+640) \
	Q6_HALF(RA, RB, P, 0) \
	Q6_HALF(RA, RB, P, 1)

// Q6_GROUP adds group G of quarter Q of both pairs times the vectors'
// (each doubled by Z30) to Z13 and Z14.
#define Q6_GROUP(Q, G) \
	VPERMD (256*(Q)+32*(G))(R9), Z30, Z0 \
	VBROADCASTI32X2 Q6V(0, Q, 8*(G)), Z1 \
	VBROADCASTI32X2 Q6V(1, Q, 8*(G)), Z2 \
	VPDPBUSD Z1, Z0, Z13 \
	VPDPBUSD Z2, Z0, Z14

// Q6_SUB adds the sub-block of quarter Q made of groups G0–G0+3, scaled
// by its scale (at byte OS of the pair's), to Z9 and Z10.
#define Q6_SUB(Q, G0, OS) \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	Q6_GROUP(Q, G0) \
	Q6_GROUP(Q, G0+1) \
	Q6_GROUP(Q, G0+2) \
	Q6_GROUP(Q, G0+3) \
	VBROADCASTI32X2 Q6SC(0, OS), Z1 \
	VBROADCASTI32X2 Q6SC(1, OS), Z2 \
	VPMULLD Z1, Z13, Z13 \
	VPMULLD Z2, Z14, Z14 \
	VPADDD Z13, Z9, Z9 \
	VPADDD Z14, Z10, Z10

// Q6_Q adds quarter Q's two sub-blocks (scales at OA and OB).
#define Q6_Q(Q, OA, OB) \
	Q6_SUB(Q, 0, OA) \
	Q6_SUB(Q, 4, OB)

// Q6_OFFSET adds scale pair J (byte O of the pair's) times the vectors'
// sums over its two sixteens to Z24 and Z25.
#define Q6_OFFSET(J, O) \
	VPERMD (2048+32*(J))(R9), Z30, Z0 \
	VBROADCASTI32X2 Q6SP(0, O), Z1 \
	VBROADCASTI32X2 Q6SP(1, O), Z2 \
	VPDPWSSD Z1, Z0, Z24 \
	VPDPWSSD Z2, Z0, Z25

// Q6_FUSE fuses the pair RA, RB's sums S into ACC (Z8: the vectors' d_x,
// doubled; R8: the binary16 table; Z15: scratch).
#define Q6_FUSE(RA, RB, S, ACC) \
	VCVTDQ2PS S, S \
	PAIR_F16(208, RA, RB) \
	VMULPS Z8, Z15, Z15 \
	VFMADD231PS S, Z15, ACC

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
	VPBROADCASTD AX, Z27

q6v8block:
	Q6_AHEAD(SI)
	Q6_AHEAD(R10)
	Q6_AHEAD(R11)
	Q6_AHEAD(R12)
	Q6_PREP(SI, R10, 0)
	Q6_PREP(R11, R12, 1)
	KC2_NEXT
	Q6_Q(0, PG0, PG1)
	Q6_Q(1, PG2, PG3)
	Q6_Q(2, PG4, PG5)
	Q6_Q(3, PG6, PG7)
	Q6_Q(4, 64+PG0, 64+PG1)
	Q6_Q(5, 64+PG2, 64+PG3)
	Q6_Q(6, 64+PG4, 64+PG5)
	Q6_Q(7, 64+PG6, 64+PG7)
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	Q6_OFFSET(0, PG0)
	Q6_OFFSET(1, PG1)
	Q6_OFFSET(2, PG2)
	Q6_OFFSET(3, PG3)
	Q6_OFFSET(4, PG4)
	Q6_OFFSET(5, PG5)
	Q6_OFFSET(6, PG6)
	Q6_OFFSET(7, PG7)
	VPSLLD $5, Z24, Z24
	VPSLLD $5, Z25, Z25
	VPSUBD Z24, Z9, Z9
	VPSUBD Z25, Z10, Z10
	VMOVUPS 2304(R9), Y8
	VPERMD Z8, Z30, Z8
	Q6_FUSE(SI, R10, Z9, Z16)
	Q6_FUSE(R11, R12, Z10, Z17)
	ROWS4_NEXT(210)
	ADDQ $2336, R9
	DECQ CX
	JNZ  q6v8block

	KZLANES_STORE(q6v8done)

q6v8done:
	VZEROUPPER
	RET
