#include "textflag.h"

// func pause()
// A spin-wait hint (YIELD), as PAUSE on amd64.
TEXT ·pause(SB), NOSPLIT, $0-0
	YIELD
	RET
