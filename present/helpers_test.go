package present

import (
	"stepthrough/session"
	"stepthrough/spec"
)

func run(prompt string) spec.Run {
	r := spec.Default("lesson.gguf")
	r.Prompt, r.Backend = prompt, "cpu"
	return r
}

// snapOf is where se stands, as the builders read it.
func snapOf(se *session.Session) *snap {
	sn := se.Snapshot()
	return &snap{&sn}
}
