package present

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"stepthrough/engine/trace"
	"stepthrough/views"
)

// Before-round context shown and cache positions drawn around a round.
const (
	specContext = 6
	specKVBack  = 6
	// residual tokens listed (the rest are counted)
	specResidualShown = 12
)

// specPanel builds the view of a speculative round at one phase.
func specPanel(phase string) func(*snap, *trace.Step, trace.Stage) views.Panel {
	return func(s *snap, st *trace.Step, _ trace.Stage) views.Panel { return s.speculative(st, phase) }
}

func (s *snap) speculative(st *trace.Step, phase string) views.Panel {
	sp := st.Speculative
	labels := s.pieces(st)
	p := &views.SpeculativePanel{Phase: phase, Draft: s.Run.Draft, K: len(sp.Proposed), Greedy: s.Run.Sampler.Temperature == 0, TopsRaw: sp.TopsRaw,
		Before: labels[max(0, sp.Pos-specContext):min(sp.Pos, len(labels))], Accepted: sp.Accepted, Bonus: sp.Bonus,
		RolledBack: sp.RolledBack, DraftDropped: sp.DraftRolledBack, DraftMS: sp.DraftMS, VerifyMS: sp.VerifyMS,
		ResidualCount: sp.ResidualCount, Residual: s.probBars(sp.Residual[:min(len(sp.Residual), specResidualShown)]), CompareURL: s.specCompareURL()}
	for i, x := range sp.Proposed {
		pr := views.SpecProposal{Pos: sp.Pos + i, Token: views.Bar{ID: x, Piece: s.piece(x), Value: float64(sp.Q[i])}, Q: float64(sp.Q[i]), Verdict: "unchecked"}
		if i < len(sp.QTop) {
			pr.QTop = s.probBars(sp.QTop[i])
		}
		if i < len(sp.P) {
			pr.P, pr.Verdict = float64(sp.P[i]), "rejected"
			if i < sp.Accepted {
				pr.Verdict = "accepted"
			}
		}
		if i < len(sp.PTop) {
			pr.PTop = s.probBars(sp.PTop[i])
		}
		if i < len(sp.U) {
			pr.U, pr.HasU = sp.U[i], true
		}
		p.Proposals = append(p.Proposals, pr)
	}
	p.Next = views.Bar{ID: sp.Next, Piece: s.piece(sp.Next)}
	if sp.Bonus && len(sp.PTop) > len(sp.Proposed) {
		for _, c := range sp.PTop[len(sp.Proposed)] {
			if c.ID == sp.Next {
				p.Next.Value = float64(c.P)
			}
		}
	}
	step := slices.Index(s.Cursor.Steps, st)
	p.Emitted = s.GenBefore(step+1) - s.GenBefore(step)
	kept := st.Pos0 + st.N - sp.RolledBack
	for pos := max(0, st.Pos0-specKVBack); pos < st.Pos0+st.N && pos < len(labels); pos++ {
		state := "kept"
		switch {
		case pos >= kept:
			state = "dropped"
		case pos >= st.Pos0:
			state = "new"
		}
		p.Cells = append(p.Cells, views.KVCell{Pos: pos, Piece: labels[pos], State: state})
	}
	for i, x := range s.Cursor.Steps[:step+1] {
		if x.Speculative != nil {
			p.Rounds++
			p.Proposed += len(x.Speculative.Proposed)
			p.Kept += x.Speculative.Accepted
			ms, n := x.Speculative.DraftMS+x.Speculative.VerifyMS, s.GenBefore(i+1)-s.GenBefore(i)
			p.RunMS += ms
			p.RunTokens += n
			if ms > 0 && n > 0 {
				p.RoundMSPerToken = append(p.RoundMSPerToken, ms/float64(n))
			}
		}
	}
	p.PlainStepMS, p.PlainStepRange = s.PlainStepMS, s.PlainStepRange
	return p
}

// probBars draws candidates by probability, the first the longest bar.
func (s *snap) probBars(cs []trace.Candidate) []views.Bar {
	var out []views.Bar
	for _, c := range cs {
		w := 100.0
		if cs[0].P > 0 {
			w = 100 * float64(c.P) / float64(cs[0].P)
		}
		out = append(out, views.Bar{ID: c.ID, Piece: s.piece(c.ID), Value: float64(c.P), Width: w})
	}
	return out
}

// specCompareURL opens Compare with this run's prompt and sampler settings
// as a plain lane and as a speculative one, to measure both side by side.
func (s *snap) specCompareURL() string {
	lane := s.laneSpec()
	q := url.Values{"prompt": {s.Run.Prompt}, "model": {s.Run.Model}, "n": {strconv.Itoa(min(s.Run.MaxTokens, 256))},
		"lane": {lane, fmt.Sprintf("%s,spec=%s,k=%d", lane, s.Run.Draft, s.Run.DraftK)}}
	return "/compare?" + q.Encode()
}
