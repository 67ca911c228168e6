package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/compare"
	"stepthrough/engine/model"
	"stepthrough/session"
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

// admitPatching checks activation patching of two prompts of clean and
// corrupt tokens against the work budget and holds its memory (release
// gives it back).
func (s *Server) admitPatching(m *model.Model, clean, corrupt int) (release func(), err error) {
	const fix = "use shorter prompts"
	if clean == corrupt { // else Patch says why not
		layers := m.Config.Layers
		what := fmt.Sprintf("this patching runs %d passes of %d tokens (%d layers × %d positions, and the two prompts)", layers*clean+2, clean, layers, clean)
		if err := s.checkWork(what, patchWork(m, clean), fix); err != nil {
			return nil, err
		}
	}
	return s.holdMemory(patchBytes(m, max(clean, corrupt)), "this patching", "its KV cache and the clean run's residual stream", fix)
}

// admitCompare checks a comparison of lanes over a prompt of prompt
// tokens, passes token passes and n tokens against the work budget and
// holds its memory (release gives it back).
func (s *Server) admitCompare(m *model.Model, prompt int, lanes []compare.Strategy, passes, n int) (release func(), err error) {
	const fix = "use a shorter prompt, or fewer tokens, lanes or beams"
	what := fmt.Sprintf("this comparison reads a prompt of %d tokens %d times and runs %d token passes", prompt, 3+len(lanes), passes)
	if err := s.checkWork(what, compareWork(m, prompt, len(lanes), passes, n), fix); err != nil {
		return nil, err
	}
	return s.holdMemory(compareBytes(m, prompt, lanes, n), "this comparison", "the KV caches of its lanes and beams", fix)
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

// holdMemory reserves bytes of the memory budget for one request's work
// (session.Pool.Hold); a full budget is a 503 like a full set of slots.
func (s *Server) holdMemory(bytes int64, what, holds, fix string) (release func(), err error) {
	release, err = s.sessions.Hold(bytes, what, holds, fix)
	if errors.Is(err, session.ErrBusy) {
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, err.Error())
	}
	return release, err
}

// sessionBytes is what one engine session of ctx positions holds: its KV
// cache (float32 K and V, every layer) and a row of logits with a copy.
func sessionBytes(m *model.Model, ctx int) int64 {
	c := m.Config
	return int64(c.Layers)*int64(c.KVDim())*8*int64(ctx) + 2*int64(c.Vocab)*4
}

// patchBytes is what activation patching of n positions holds: its
// session, the clean run's residual stream after every layer and
// position, and the two runs' logits.
func patchBytes(m *model.Model, n int) int64 {
	c := m.Config
	return sessionBytes(m, n) + int64(c.Layers)*int64(n)*int64(c.Embd)*4 + 2*int64(c.Vocab)*4
}

// compareBytes is what a comparison holds at most: the shared and the
// separate prefill's sessions, each lane's (a beam lane one per beam and
// a spare, a speculative lane its draft's too, counted at the target's
// size, an edited lane a scratch one), every one of the whole context,
// and each lane's steps.
func compareBytes(m *model.Model, prompt int, lanes []compare.Strategy, n int) int64 {
	sessions, k := 2, 0
	for _, st := range lanes {
		sessions += max(2, st.Width+1)
		k = max(k, st.K)
	}
	return int64(sessions)*sessionBytes(m, prompt+n+1+k) + int64(len(lanes))*int64(n)*256
}

// workError is how a page shows work that failed: a refusal's own status
// and message (503: no work slot or no memory now), else 400 and the
// error.
func workError(err error) (int, string) {
	if he, ok := err.(*echo.HTTPError); ok {
		return he.Code, fmt.Sprint(he.Message)
	}
	return http.StatusBadRequest, err.Error()
}
