package engine

import (
	"stepthrough/engine/kv"
	"stepthrough/engine/model"
)

// The errors every backend returns, wrapped, whichever ran: callers test
// them with errors.Is against these, not against a backend's package.
var (
	// ErrClosed: the loaded model was closed under the session.
	ErrClosed = model.ErrClosed
	// ErrContextFull: a pass would write past the session's positions.
	ErrContextFull = kv.ErrContextFull
)
