//go:build !purego

#include "textflag.h"
#include "dot_amd64.h"

// A decode step's attention, one head over a run of cached positions:
// the scores of its query against each key, then the weighted sum of the
// values. A head's numbers are each exactly what dot and axpy give them
// one position at a time; what the run saves is the work between: eight
// positions' sums reduced together, and the head's sums kept in registers
// across the positions instead of loaded and stored for each.

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

	// positions 0–7 in Y0–Y7; pairs (j, j+4) share a register, each
	// half its position's four lanes summed with the other four
	VMOVUPS    0(SP), Y0
	VMOVUPS    32(SP), Y1
	VMOVUPS    64(SP), Y2
	VMOVUPS    96(SP), Y3
	VMOVUPS    128(SP), Y4
	VMOVUPS    160(SP), Y5
	VMOVUPS    192(SP), Y6
	VMOVUPS    224(SP), Y7
	VPERM2F128 $0x20, Y4, Y0, Y9
	VPERM2F128 $0x31, Y4, Y0, Y10
	VADDPS     Y10, Y9, Y9           // 0 | 4
	VPERM2F128 $0x20, Y5, Y1, Y11
	VPERM2F128 $0x31, Y5, Y1, Y10
	VADDPS     Y10, Y11, Y11         // 1 | 5
	VPERM2F128 $0x20, Y6, Y2, Y12
	VPERM2F128 $0x31, Y6, Y2, Y10
	VADDPS     Y10, Y12, Y12         // 2 | 6
	VPERM2F128 $0x20, Y7, Y3, Y13
	VPERM2F128 $0x31, Y7, Y3, Y10
	VADDPS     Y10, Y13, Y13         // 3 | 7
	VHADDPS    Y11, Y9, Y9           // 0 0 1 1 | 4 4 5 5
	VHADDPS    Y13, Y12, Y12         // 2 2 3 3 | 6 6 7 7
	VHADDPS    Y12, Y9, Y9           // 0 1 2 3 | 4 5 6 7
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
