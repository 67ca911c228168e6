package views

import (
	"fmt"
	"strings"
)

// The softmax panel's sentences about the run's sampler chain: what it
// keeps at the sliders' settings and what each slider changes. They only
// word what the session measured (SoftmaxPanel.Funnel: the engine's chain
// run over the step's logits).

// chainT is the temperature the chain ran at, as a setting.
func chainT(s *SoftmaxPanel) string {
	if s.ChainT <= 0 {
		return "T = 0 (greedy)"
	}
	return "T = " + fx(s.ChainT)
}

// chainCounts lists the chain's steps that changed the candidates, in
// order: "top-k (k = 40) 1024 → 40, top-p (p = 0.95) 40 → 14".
func chainCounts(s *SoftmaxPanel) string {
	var parts []string
	for _, f := range s.Funnel {
		if f.Skipped || f.In == f.Out {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s) %d → %d", f.Name, f.Setting, f.In, f.Out))
	}
	if len(parts) == 0 {
		return "no step removes a token"
	}
	return strings.Join(parts, ", ")
}

// funnelIndex is the position of a step in the chain, or -1.
func funnelIndex(s *SoftmaxPanel, name string) int {
	for i, f := range s.Funnel {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// filtersAfter names the filters that run (not skipped) after step i.
func filtersAfter(s *SoftmaxPanel, i int) []string {
	var out []string
	for _, f := range s.Funnel[i+1:] {
		if !f.Skipped && f.Name != "temperature" && f.Name != "penalties" {
			out = append(out, f.Name)
		}
	}
	return out
}

// temperatureEffect says what the temperature slider changes in this
// run's chain, and what it does not.
func temperatureEffect(s *SoftmaxPanel) string {
	at := funnelIndex(s, "temperature")
	if at < 0 {
		return "This chain has no temperature step: the temperature slider redraws these bars only; the chain keeps the same tokens and draws at T = 1."
	}
	after := filtersAfter(s, at)
	if len(after) == 0 {
		return "The temperature slider redraws these bars and the draw's odds among the kept tokens; it does not change which tokens are kept, because in this chain every filter runs before temperature, on the probabilities at T = 1."
	}
	return fmt.Sprintf("The temperature slider redraws these bars and changes which tokens are kept: in this chain temperature runs first, so %s after it cut the probabilities at the slider's T.", andList(after))
}

// topPEffect says where the top-p slider's cut is made in this chain.
func topPEffect(s *SoftmaxPanel) string {
	at := funnelIndex(s, "top-p")
	switch {
	case at < 0:
		return "This chain has no top-p step: the top-p slider changes nothing it keeps."
	case s.Funnel[at].Skipped:
		return "Top-p 1 keeps every token top-p receives: no cut."
	}
	var before []string
	t := "1"
	for _, f := range s.Funnel[:at] {
		switch {
		case f.Name == "temperature":
			t = fx(s.ChainT)
		case !f.Skipped:
			before = append(before, f.Name)
		}
	}
	from := "all the tokens"
	if len(before) > 0 {
		from = "the tokens " + andList(before) + " kept"
	}
	return fmt.Sprintf("The top-p slider moves top-p's cut, which the chain makes on %s, renormalised at T = %s (%d tokens), not on these bars' cumulative column: the sampler stage for top-p shows the cumulative column it follows.", from, t, s.Funnel[at].In)
}

// andList joins names as a sentence does: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
