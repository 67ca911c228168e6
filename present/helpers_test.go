package present

import (
	"path/filepath"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/registry"
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

// synthRegistry offers one synthesized model, as name.
func synthRegistry(t *testing.T, name string, o model.SynthOptions) *registry.Registry {
	t.Helper()
	w, err := model.Synthesize(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := w.WriteFile(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	reg := registry.New([]string{dir})
	t.Cleanup(reg.Close)
	return reg
}
