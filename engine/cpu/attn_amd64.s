//go:build !purego

#include "textflag.h"
#include "dot_amd64.h"

// A decode step's attention over the cached positions: the scores of each
// head's query against the keys, then the weighted sums of the values.
// Every number is exactly what dot and axpy give it one position at a
// time; what the kernels save is the work between: eight positions' sums
// reduced together, and (one head over a run, scoresAVX2 and
// valuesAVX2) the head's sums kept in registers across the positions, or
// (every head over whole rows, scoresRows8AVX2 and valuesRowsAVX2) each
// row read once and in order. attnTask.heads says which runs where.

// LOAD8 loads eight positions' sums (DOT_REDUCE's first three adds done)
// from 32-byte slots at P into Y0–Y7.
#define LOAD8(P) \
	VMOVUPS 0(P), Y0 \
	VMOVUPS 32(P), Y1 \
	VMOVUPS 64(P), Y2 \
	VMOVUPS 96(P), Y3 \
	VMOVUPS 128(P), Y4 \
	VMOVUPS 160(P), Y5 \
	VMOVUPS 192(P), Y6 \
	VMOVUPS 224(P), Y7

// REDUCE8 adds up the lanes of Y0–Y7 into the eight scores in Y9 (lane j
// position j's), pair by pair in DOT_REDUCE's order: the pairs (j, j+4)
// share a register, each half its position's four lanes added to the
// other four, then two rounds of VHADDPS (Y10–Y13: scratch).
#define REDUCE8 \
	VPERM2F128 $0x20, Y4, Y0, Y9 \
	VPERM2F128 $0x31, Y4, Y0, Y10 \
	VADDPS     Y10, Y9, Y9 \
	VPERM2F128 $0x20, Y5, Y1, Y11 \
	VPERM2F128 $0x31, Y5, Y1, Y10 \
	VADDPS     Y10, Y11, Y11 \
	VPERM2F128 $0x20, Y6, Y2, Y12 \
	VPERM2F128 $0x31, Y6, Y2, Y10 \
	VADDPS     Y10, Y12, Y12 \
	VPERM2F128 $0x20, Y7, Y3, Y13 \
	VPERM2F128 $0x31, Y7, Y3, Y10 \
	VADDPS     Y10, Y13, Y13 \
	VHADDPS    Y11, Y9, Y9 \
	VHADDPS    Y13, Y12, Y12 \
	VHADDPS    Y12, Y9, Y9

// func scoresAVX2(q *float32, keys *float32, kstride int, npos int, hd int, scale float32, out *float32)
// out[j] = dot(q[:hd], keys[j·kstride:][:hd])·scale for j < npos (kstride
// in floats, hd a multiple of 8, npos > 0), each summed exactly as dotAVX2
// sums it. Eight positions at a time: each position's four sums are added
// as DOT_REDUCE adds them into one register, kept in the frame, and the
// eight registers' lanes then reduced together, pair by pair in
// DOT_REDUCE's order, into the eight scores (lane i the position's i).
TEXT ·scoresAVX2(SB), NOSPLIT, $256-56
	MOVQ         q+0(FP), SI
	MOVQ         keys+8(FP), R8
	MOVQ         kstride+16(FP), R9
	SHLQ         $2, R9
	MOVQ         npos+24(FP), R10
	MOVQ         hd+32(FP), R11
	VBROADCASTSS scale+40(FP), Y8
	MOVQ         out+48(FP), R12

sblock:
	CMPQ R10, $8
	JL   stail
	XORQ BX, BX

spos:
	MOVQ SI, AX
	MOVQ R8, DI
	MOVQ R11, CX
	DOT_ZERO

s32:
	CMPQ CX, $32
	JL   s8
	DOT32(AX, DI)
	SUBQ $32, CX
	JMP  s32

s8:
	CMPQ CX, $8
	JL   sput
	DOT8(AX, DI)
	SUBQ $8, CX
	JMP  s8

sput:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, (SP)(BX*1)
	ADDQ    R9, R8
	ADDQ    $32, BX
	CMPQ    BX, $256
	JL      spos

	LOAD8(SP)
	REDUCE8
	VMULPS     Y8, Y9, Y9
	VMOVUPS    Y9, (R12)
	ADDQ       $32, R12
	SUBQ       $8, R10
	JMP        sblock

stail:
	TESTQ R10, R10
	JE    sdone
	MOVQ  SI, AX
	MOVQ  R8, DI
	MOVQ  R11, CX
	DOT_ZERO

st32:
	CMPQ CX, $32
	JL   st8
	DOT32(AX, DI)
	SUBQ $32, CX
	JMP  st32

st8:
	CMPQ CX, $8
	JL   stput
	DOT8(AX, DI)
	SUBQ $8, CX
	JMP  st8

stput:
	DOT_REDUCE
	VMULSS X8, X0, X0
	VMOVSS X0, (R12)
	ADDQ   $4, R12
	ADDQ   R9, R8
	DECQ   R10
	JMP    stail

sdone:
	VZEROUPPER
	RET

// VFMA adds w (Y8) times the eight values at SI+OFF to the sums R.
#define VFMA(OFF, R) VFMADD231PS OFF(SI), Y8, R

// func valuesAVX2(acc *float32, w *float32, vals *float32, vstride int, npos int, hd int)
// acc[:hd] += w[j]·vals[j·vstride:][:hd] for j < npos in order (vstride
// in floats, hd a multiple of 8, npos > 0), each element fused exactly
// as axpyAVX2 fuses it. The sums stay in registers for the whole run, 64
// values (eight registers: eight independent chains) at a time, then 32,
// then 8.
TEXT ·valuesAVX2(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ vals+16(FP), R10
	MOVQ vstride+24(FP), R9
	SHLQ $2, R9
	MOVQ npos+32(FP), R11
	MOVQ hd+40(FP), CX

v64:
	CMPQ    CX, $64
	JL      v32
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ    R8, AX
	MOVQ    R10, SI
	MOVQ    R11, DX

v64pos:
	VBROADCASTSS (AX), Y8
	VFMA(0, Y0)
	VFMA(32, Y1)
	VFMA(64, Y2)
	VFMA(96, Y3)
	VFMA(128, Y4)
	VFMA(160, Y5)
	VFMA(192, Y6)
	VFMA(224, Y7)
	ADDQ         $4, AX
	ADDQ         R9, SI
	DECQ         DX
	JNZ          v64pos
	VMOVUPS      Y0, 0(DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	VMOVUPS      Y4, 128(DI)
	VMOVUPS      Y5, 160(DI)
	VMOVUPS      Y6, 192(DI)
	VMOVUPS      Y7, 224(DI)
	ADDQ         $256, DI
	ADDQ         $256, R10
	SUBQ         $64, CX
	JMP          v64

v32:
	CMPQ    CX, $32
	JL      v8
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    R8, AX
	MOVQ    R10, SI
	MOVQ    R11, DX

v32pos:
	VBROADCASTSS (AX), Y8
	VFMA(0, Y0)
	VFMA(32, Y1)
	VFMA(64, Y2)
	VFMA(96, Y3)
	ADDQ         $4, AX
	ADDQ         R9, SI
	DECQ         DX
	JNZ          v32pos
	VMOVUPS      Y0, 0(DI)
	VMOVUPS      Y1, 32(DI)
	VMOVUPS      Y2, 64(DI)
	VMOVUPS      Y3, 96(DI)
	ADDQ         $128, DI
	ADDQ         $128, R10
	SUBQ         $32, CX
	JMP          v32

v8:
	CMPQ    CX, $8
	JL      vdone
	VMOVUPS (DI), Y0
	MOVQ    R8, AX
	MOVQ    R10, SI
	MOVQ    R11, DX

v8pos:
	VBROADCASTSS (AX), Y8
	VFMA(0, Y0)
	ADDQ         $4, AX
	ADDQ         R9, SI
	DECQ         DX
	JNZ          v8pos
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, R10
	SUBQ         $8, CX
	JMP          v8

vdone:
	VZEROUPPER
	RET

// func scoresRows8AVX2(q *float32, key *float32, kstride int, nh int, hd int, g0 int, group int, scale float32, out *float32, ostride int, scratch *float32)
// Eight cached positions' scores for nh query heads, reading each key row
// once, in order: out[h·ostride+j] = dot(q[h·hd:][:hd], key[j·kstride+kv·hd:][:hd])·scale
// for j < 8, kv moving on by one every group heads (the first head g0
// into its group). Each dot is summed as dotAVX2 sums it, its four sums
// added as DOT_REDUCE adds them into one register, kept in scratch (8·nh
// registers, head h's eight at 256h); the eight of a head are then reduced
// together in DOT_REDUCE's order. hd a multiple of 8.
TEXT ·scoresRows8AVX2(SB), NOSPLIT, $0-88
	MOVQ key+8(FP), R8
	MOVQ kstride+16(FP), R9
	SHLQ $2, R9
	MOVQ hd+32(FP), R11
	MOVQ scratch+80(FP), R12
	XORQ BX, BX

rpos:
	MOVQ q+0(FP), SI
	MOVQ R8, DX
	MOVQ g0+40(FP), R13
	MOVQ nh+24(FP), R10
	LEAQ (R12)(BX*1), R15

rhead:
	MOVQ DX, DI
	MOVQ R11, CX
	DOT_ZERO

r32:
	CMPQ CX, $32
	JL   r8
	DOT32(SI, DI)
	SUBQ $32, CX
	JMP  r32

r8:
	CMPQ CX, $8
	JL   rput
	DOT8(SI, DI)
	SUBQ $8, CX
	JMP  r8

rput:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, (R15)
	ADDQ    $256, R15
	INCQ    R13
	CMPQ    R13, group+48(FP)
	JL      rsame
	XORQ    R13, R13
	MOVQ    DI, DX // the next kv head's slice follows this one's

rsame:
	DECQ R10
	JNZ  rhead
	ADDQ R9, R8
	ADDQ $32, BX
	CMPQ BX, $256
	JL   rpos

	VBROADCASTSS scale+56(FP), Y8
	MOVQ         out+64(FP), R14
	MOVQ         ostride+72(FP), R9
	SHLQ         $2, R9
	MOVQ         nh+24(FP), R10
	MOVQ         R12, R15

rnet:
	LOAD8(R15)
	REDUCE8
	VMULPS     Y8, Y9, Y9
	VMOVUPS    Y9, (R14)
	ADDQ       $256, R15
	ADDQ       R9, R14
	DECQ       R10
	JNZ        rnet
	VZEROUPPER
	RET

// func valuesRowsAVX2(acc *float32, w *float32, wstride int, vals *float32, vstride int, npos int, nh int, hd int, g0 int, group int)
// npos cached positions' values into nh heads' sums, reading each value
// row once, in order: acc[h·hd:][:hd] += w[h·wstride+j]·val_j[kv·hd:][:hd]
// for j < npos in order, kv as scoresRows8AVX2 moves it, each element
// fused exactly as axpyAVX2 fuses it. hd a multiple of 8, npos > 0.
TEXT ·valuesRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ vals+24(FP), R8
	MOVQ vstride+32(FP), R9
	SHLQ $2, R9
	MOVQ w+8(FP), R12
	MOVQ wstride+16(FP), R14
	SHLQ $2, R14
	MOVQ npos+40(FP), BX

wpos:
	MOVQ acc+0(FP), DI
	MOVQ R8, DX
	MOVQ R12, AX
	MOVQ g0+64(FP), R13
	MOVQ nh+48(FP), R10

whead:
	VBROADCASTSS (AX), Y15
	MOVQ         DX, SI
	MOVQ         hd+56(FP), CX

w32:
	CMPQ        CX, $32
	JL          w8
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VFMADD231PS (SI), Y15, Y0
	VFMADD231PS 32(SI), Y15, Y1
	VFMADD231PS 64(SI), Y15, Y2
	VFMADD231PS 96(SI), Y15, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $128, DI
	ADDQ        $128, SI
	SUBQ        $32, CX
	JMP         w32

w8:
	CMPQ        CX, $8
	JL          wnext
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         w8

wnext:
	ADDQ R14, AX
	INCQ R13
	CMPQ R13, group+72(FP)
	JL   wsame
	XORQ R13, R13
	MOVQ SI, DX

wsame:
	DECQ R10
	JNZ  whead
	ADDQ R9, R8
	ADDQ $4, R12
	DECQ BX
	JNZ  wpos
	VZEROUPPER
	RET
