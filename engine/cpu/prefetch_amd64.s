//go:build !purego

#include "textflag.h"

// func prefetchL2(p *byte, n int)
// Fetches the n bytes from p into L2, a cache line at a time, without
// waiting for them: at the start of a range of rows, what the kernels'
// own prefetch (a fixed distance ahead of the row they multiply) has not
// asked for.
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX
prefetchloop:
	CMPQ SI, CX
	JAE  prefetchdone
	PREFETCHT1 (SI)
	ADDQ $64, SI
	JMP  prefetchloop
prefetchdone:
	RET
