//go:build !purego

#include "textflag.h"

// Vector kernels built on expf's steps (exp.go), eight values at a time.
// expSub, max and scale take n as a multiple of 8 (the Go wrappers do the
// tail); siluMul and gelu take any n and do their tail with masked loads,
// so a value's result never depends on where it sits in the slice.

DATA expP1<>+0(SB)/4, $0x3ab743ce
DATA expP1<>+4(SB)/4, $0x3ab743ce
DATA expP1<>+8(SB)/4, $0x3ab743ce
DATA expP1<>+12(SB)/4, $0x3ab743ce
DATA expP1<>+16(SB)/4, $0x3ab743ce
DATA expP1<>+20(SB)/4, $0x3ab743ce
DATA expP1<>+24(SB)/4, $0x3ab743ce
DATA expP1<>+28(SB)/4, $0x3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/4, $0x3c088908
DATA expP2<>+4(SB)/4, $0x3c088908
DATA expP2<>+8(SB)/4, $0x3c088908
DATA expP2<>+12(SB)/4, $0x3c088908
DATA expP2<>+16(SB)/4, $0x3c088908
DATA expP2<>+20(SB)/4, $0x3c088908
DATA expP2<>+24(SB)/4, $0x3c088908
DATA expP2<>+28(SB)/4, $0x3c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/4, $0x3d2aa9c1
DATA expP3<>+4(SB)/4, $0x3d2aa9c1
DATA expP3<>+8(SB)/4, $0x3d2aa9c1
DATA expP3<>+12(SB)/4, $0x3d2aa9c1
DATA expP3<>+16(SB)/4, $0x3d2aa9c1
DATA expP3<>+20(SB)/4, $0x3d2aa9c1
DATA expP3<>+24(SB)/4, $0x3d2aa9c1
DATA expP3<>+28(SB)/4, $0x3d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/4, $0x3e2aaaaa
DATA expP4<>+4(SB)/4, $0x3e2aaaaa
DATA expP4<>+8(SB)/4, $0x3e2aaaaa
DATA expP4<>+12(SB)/4, $0x3e2aaaaa
DATA expP4<>+16(SB)/4, $0x3e2aaaaa
DATA expP4<>+20(SB)/4, $0x3e2aaaaa
DATA expP4<>+24(SB)/4, $0x3e2aaaaa
DATA expP4<>+28(SB)/4, $0x3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/4, $0x3f000000
DATA expP5<>+4(SB)/4, $0x3f000000
DATA expP5<>+8(SB)/4, $0x3f000000
DATA expP5<>+12(SB)/4, $0x3f000000
DATA expP5<>+16(SB)/4, $0x3f000000
DATA expP5<>+20(SB)/4, $0x3f000000
DATA expP5<>+24(SB)/4, $0x3f000000
DATA expP5<>+28(SB)/4, $0x3f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

DATA expI127<>+0(SB)/4, $0x7f
DATA expI127<>+4(SB)/4, $0x7f
DATA expI127<>+8(SB)/4, $0x7f
DATA expI127<>+12(SB)/4, $0x7f
DATA expI127<>+16(SB)/4, $0x7f
DATA expI127<>+20(SB)/4, $0x7f
DATA expI127<>+24(SB)/4, $0x7f
DATA expI127<>+28(SB)/4, $0x7f
GLOBL expI127<>(SB), RODATA|NOPTR, $32

DATA expS<>+0(SB)/4, $0xc2aeac4f // lo -87.33654
DATA expS<>+4(SB)/4, $0x42b00000 // hi 88.0
DATA expS<>+8(SB)/4, $0x3fb8aa3b // log2e 1.4426950408889634
DATA expS<>+12(SB)/4, $0x3f318000 // ln2hi 0.693359375
DATA expS<>+16(SB)/4, $0xb95e8083 // ln2lo -0.00021219444
DATA expS<>+20(SB)/4, $0x39506967 // p0 0.000198756915
DATA expS<>+24(SB)/4, $0x3f800000 // one 1.0
DATA expS<>+28(SB)/4, $0x3d372713 // geluk 0.044715
DATA expS<>+32(SB)/4, $0xbfcc422a // gelum -1.5957691216057308
GLOBL expS<>(SB), RODATA|NOPTR, $36

// tailMask<>+4(8-r) is a mask of r lanes.
DATA tailMask<>+0(SB)/4, $0xffffffff
DATA tailMask<>+4(SB)/4, $0xffffffff
DATA tailMask<>+8(SB)/4, $0xffffffff
DATA tailMask<>+12(SB)/4, $0xffffffff
DATA tailMask<>+16(SB)/4, $0xffffffff
DATA tailMask<>+20(SB)/4, $0xffffffff
DATA tailMask<>+24(SB)/4, $0xffffffff
DATA tailMask<>+28(SB)/4, $0xffffffff
DATA tailMask<>+32(SB)/4, $0
DATA tailMask<>+36(SB)/4, $0
DATA tailMask<>+40(SB)/4, $0
DATA tailMask<>+44(SB)/4, $0
DATA tailMask<>+48(SB)/4, $0
DATA tailMask<>+52(SB)/4, $0
DATA tailMask<>+56(SB)/4, $0
DATA tailMask<>+60(SB)/4, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// TAILMASK sets Y6 to the first CX (1–7) lanes.
#define TAILMASK \
	MOVQ    $8, AX \
	SUBQ    CX, AX \
	LEAQ    tailMask<>(SB), DX \
	VMOVUPS (DX)(AX*4), Y6

// EXPCONSTS loads the registers EXP8 reads: Y8 one, Y9 hi, Y10 lo,
// Y11 ln2lo, Y12 ln2hi, Y13 log2e.
#define EXPCONSTS \
	VBROADCASTSS expS<>+24(SB), Y8 \
	VBROADCASTSS expS<>+4(SB), Y9  \
	VBROADCASTSS expS<>+0(SB), Y10 \
	VBROADCASTSS expS<>+16(SB), Y11 \
	VBROADCASTSS expS<>+12(SB), Y12 \
	VBROADCASTSS expS<>+8(SB), Y13

// EXP8 sets Y0 = e^Y0 (Y1, Y2, Y3 scratch): 0 below lo, NaN kept.
#define EXP8 \
	VCMPPS       $0x05, Y10, Y0, Y3 \
	VMAXPS       Y0, Y10, Y0 \
	VMINPS       Y0, Y9, Y0 \
	VMULPS       Y13, Y0, Y1 \
	VROUNDPS     $0, Y1, Y1 \
	VFNMADD231PS Y12, Y1, Y0 \
	VFNMADD231PS Y11, Y1, Y0 \
	VBROADCASTSS expS<>+20(SB), Y2 \
	VFMADD213PS  expP1<>(SB), Y0, Y2 \
	VFMADD213PS  expP2<>(SB), Y0, Y2 \
	VFMADD213PS  expP3<>(SB), Y0, Y2 \
	VFMADD213PS  expP4<>(SB), Y0, Y2 \
	VFMADD213PS  expP5<>(SB), Y0, Y2 \
	VCVTPS2DQ    Y1, Y1 \
	VPADDD       expI127<>(SB), Y1, Y1 \
	VPSLLD       $23, Y1, Y1 \
	VMULPS       Y0, Y2, Y2 \
	VFMADD213PS  Y0, Y0, Y2 \
	VADDPS       Y8, Y2, Y2 \
	VMULPS       Y1, Y2, Y0 \
	VANDPS       Y3, Y0, Y0

// func expSubAVX2(x *float32, n int, s, m float32) float32
// x[i] = e^(x[i]·s - m), returns the sum.
TEXT ·expSubAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y7
	VBROADCASTSS m+20(FP), Y14
	EXPCONSTS
	VXORPS Y15, Y15, Y15

esloop:
	CMPQ CX, $8
	JL   esdone
	VMOVUPS     (SI), Y0
	VFMSUB213PS Y14, Y7, Y0
	EXP8
	VMOVUPS Y0, (SI)
	VADDPS  Y0, Y15, Y15
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     esloop

esdone:
	VEXTRACTF128 $1, Y15, X0
	VADDPS       X0, X15, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func siluMulAVX2(a, b *float32, n int)
// a[i] = a[i]·b[i] / (1 + e^-a[i]).
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	EXPCONSTS
	VXORPS Y14, Y14, Y14

smloop:
	CMPQ CX, $8
	JL   smtail
	VMOVUPS (SI), Y4
	VMULPS  (DI), Y4, Y5
	VSUBPS  Y4, Y14, Y0
	EXP8
	VADDPS  Y8, Y0, Y0
	VDIVPS  Y0, Y5, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     smloop

smtail:
	CMPQ CX, $0
	JE   smdone
	TAILMASK
	VMASKMOVPS (SI), Y6, Y4
	VMASKMOVPS (DI), Y6, Y5
	VMULPS     Y5, Y4, Y5
	VSUBPS     Y4, Y14, Y0
	EXP8
	VADDPS     Y8, Y0, Y0
	VDIVPS     Y0, Y5, Y0
	VMASKMOVPS Y0, Y6, (SI)

smdone:
	VZEROUPPER
	RET

// GELU8 sets Y0 = GELU(Y4).
#define GELU8 \
	VMULPS      Y4, Y4, Y0 \
	VFMADD213PS Y8, Y14, Y0 \
	VMULPS      Y4, Y0, Y0 \
	VMULPS      Y15, Y0, Y0 \
	EXP8 \
	VADDPS      Y8, Y0, Y0 \
	VDIVPS      Y0, Y4, Y0

// func geluAVX2(a *float32, n int)
// a[i] = a[i] / (1 + e^(-2c(a + k·a³))), the tanh GELU.
TEXT ·geluAVX2(SB), NOSPLIT, $0-16
	MOVQ a+0(FP), SI
	MOVQ n+8(FP), CX
	EXPCONSTS
	VBROADCASTSS expS<>+28(SB), Y14
	VBROADCASTSS expS<>+32(SB), Y15

geloop:
	CMPQ CX, $8
	JL   getail
	VMOVUPS (SI), Y4
	GELU8
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     geloop

getail:
	CMPQ CX, $0
	JE   gedone
	TAILMASK
	VMASKMOVPS (SI), Y6, Y4
	GELU8
	VMASKMOVPS Y0, Y6, (SI)

gedone:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	ADDQ    $32, SI
	SUBQ    $8, CX

mxloop:
	CMPQ CX, $8
	JL   mxdone
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    mxloop

mxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// func scaleAVX2(x *float32, n int, s float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y1

scloop:
	CMPQ CX, $8
	JL   scdone
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     scloop

scdone:
	VZEROUPPER
	RET
