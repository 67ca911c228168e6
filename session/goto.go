package session

import (
	"slices"

	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// gotoStage moves, within the current token step, to the stage a click on
// the model map or the pipeline strip names: stage, and its 1-based layer
// or filter ("0" or absent where none applies).
func (s *Session) gotoStage(get spec.Getter) error {
	w, err := spec.StageAt(get)
	if err != nil {
		return err
	}
	k := trace.Kind(w.StageName)
	if !slices.Contains(trace.Kinds, k) {
		return errorf("there is no stage %q", w.StageName)
	}
	if len(s.cur.Steps) == 0 {
		return errorf("run a prompt first")
	}
	if !s.seekStage(k, w.Layer, w.Filter-1) {
		return errorf("this token step has no %s stage there", w.StageName)
	}
	return nil
}
