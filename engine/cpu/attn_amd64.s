//go:build !purego

#include "textflag.h"
#include "dot_amd64.h"

// func dotHeadsAVX2(q *float32, key *float32, nh int, hd int, g0 int, group int, scale float32, out *float32, ostride int)
// One key row's scores for nh query heads: out[h·ostride] =
// dot(q[h·hd:][:hd], key[kv·hd:][:hd])·scale, where kv starts at 0 and
// moves on by one every group heads (the first head is g0 into its
// group); hd a multiple of 8. Each dot is summed exactly as dotAVX2 sums
// it.
TEXT ·dotHeadsAVX2(SB), NOSPLIT, $0-72
	MOVQ q+0(FP), SI
	MOVQ key+8(FP), R8
	MOVQ nh+16(FP), R10
	MOVQ hd+24(FP), R11
	MOVQ g0+32(FP), R13
	MOVQ group+40(FP), R14
	VMOVSS scale+48(FP), X8
	MOVQ out+56(FP), R12
	MOVQ ostride+64(FP), R9
	SHLQ $2, R9

dhead:
	TESTQ R10, R10
	JE    dhdone
	MOVQ  R8, DX
	MOVQ  R11, CX
	DOT_ZERO

dh32:
	CMPQ CX, $32
	JL   dh8
	DOT32(SI, DX)
	SUBQ $32, CX
	JMP  dh32

dh8:
	CMPQ CX, $8
	JL   dhreduce
	DOT8(SI, DX)
	SUBQ $8, CX
	JMP  dh8

dhreduce:
	DOT_REDUCE
	VMULSS X8, X0, X0
	VMOVSS X0, (R12)
	ADDQ   R9, R12
	INCQ   R13
	CMPQ   R13, R14
	JL     dhsame
	XORQ   R13, R13
	MOVQ   DX, R8 // the next kv head's row follows this one's

dhsame:
	DECQ R10
	JMP  dhead

dhdone:
	VZEROUPPER
	RET

// func axpyHeadsAVX2(acc *float32, w *float32, wstride int, val *float32, nh int, hd int, g0 int, group int)
// One value row into nh heads' sums: acc[h·hd:][:hd] += w[h·wstride] ·
// val[kv·hd:][:hd], kv as dotHeadsAVX2 moves it; hd a multiple of 8. Each
// element is fused exactly as axpyAVX2 fuses it.
TEXT ·axpyHeadsAVX2(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), R8
	MOVQ wstride+16(FP), R9
	SHLQ $2, R9
	MOVQ val+24(FP), R10
	MOVQ nh+32(FP), R11
	MOVQ hd+40(FP), R12
	MOVQ g0+48(FP), R13
	MOVQ group+56(FP), R14

ahead:
	TESTQ R11, R11
	JE    ahdone
	VBROADCASTSS (R8), Y0
	MOVQ R10, SI
	MOVQ R12, CX

ah8:
	CMPQ CX, $8
	JL   ahnext
	AXPY8(DI, SI, Y0)
	SUBQ $8, CX
	JMP  ah8

ahnext:
	ADDQ R9, R8
	INCQ R13
	CMPQ R13, R14
	JL   ahsame
	XORQ R13, R13
	MOVQ SI, R10 // the next kv head's row follows this one's

ahsame:
	DECQ R11
	JMP  ahead

ahdone:
	VZEROUPPER
	RET
