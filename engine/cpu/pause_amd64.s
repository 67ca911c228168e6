#include "textflag.h"

// func pause()
// A spin-wait hint: lets the core's other hardware thread run and keeps a
// polling loop from flooding the memory pipeline.
TEXT ·pause(SB), NOSPLIT, $0-0
	PAUSE
	RET
