package server

import (
	"fmt"
	"time"

	"stepthrough/engine/model"
)

// Defaults of Config.WorkBudget and WorkTimeout: 100 G multiply-adds is
// about 5 s of CPU (activation patching on the lesson model ran about
// 20 G a CPU-second on the 2-core machine it was measured on).
const (
	defaultWorkBudget  = 100e9
	defaultWorkTimeout = 30 * time.Second
)

// checkWork refuses work estimated (model.PassWork) at more than the
// per-request budget, before it starts: the answer says what the work
// is, the estimate and the limit, and what to change.
func (s *Server) checkWork(what string, work int64, fix string) error {
	if work <= s.cfg.WorkBudget {
		return nil
	}
	return fmt.Errorf("%s: about %s multiply-adds, over the %s one request may take (--work-budget): %s", what, giga(work), giga(s.cfg.WorkBudget), fix)
}

// giga writes a count in billions ("12.5 G").
func giga(n int64) string { return fmt.Sprintf("%.1f G", float64(n)/1e9) }

// patchWork is activation patching's estimate: the clean and corrupted
// runs, then one run of the corrupted prompt per layer and position.
func patchWork(m *model.Model, n int) int64 {
	return int64(2+m.Config.Layers*n) * m.PassWork(n, 0, 1)
}

// compareWork is a comparison's estimate: the prompt read for the
// warm-up, the shared prefill, the separate one and each lane's own (a
// lane with edits reads it again), then every token pass (passes, each
// counted at the longest context).
func compareWork(m *model.Model, prompt, lanes, passes, n int) int64 {
	return int64(3+lanes)*m.PassWork(prompt, 0, 1) + int64(passes)*m.PassWork(1, prompt+n, 1)
}
