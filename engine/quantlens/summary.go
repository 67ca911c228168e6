package quantlens

import (
	"cmp"
	"slices"
)

// Spread is a set of values summed up: the least, the median and the
// largest, and the mean.
type Spread struct {
	Min, Median, Max, Mean float64
}

// SpreadOf sums up v (the zero Spread for none).
func SpreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Min: s[0], Median: med, Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

// WorstHead is the head whose pattern moved most (the largest mean
// Jensen–Shannon divergence), -1 for a layer without heads.
func (l Layer) WorstHead() (int, Head) {
	worst := -1
	for h, hd := range l.Heads {
		if worst < 0 || hd.JSMean > l.Heads[worst].JSMean {
			worst = h
		}
	}
	if worst < 0 {
		return -1, Head{}
	}
	return worst, l.Heads[worst]
}

// LensAgreements counts the positions where the lens's top tokens agree.
func (l Layer) LensAgreements() int {
	n := 0
	for _, ok := range l.LensAgree {
		if ok {
			n++
		}
	}
	return n
}

// MeanKL is the final KL divergence averaged over positions.
func (r *Report) MeanKL() float64 {
	var s float64
	for _, st := range r.Final {
		s += st.KL
	}
	return s / float64(max(1, len(r.Final)))
}

// Agreement is the share of positions whose likeliest next token is the
// same under both types.
func (r *Report) Agreement() float64 {
	same := 0
	for _, st := range r.Final {
		if !st.Flipped {
			same++
		}
	}
	return float64(same) / float64(max(1, len(r.Final)))
}

// FragileHead is one head's pattern change (layer and head 0-based).
type FragileHead struct {
	Layer, Index int
	Head
}

// FragileHeads are the k heads whose patterns moved most (by mean
// Jensen–Shannon divergence), the most first.
func (r *Report) FragileHeads(k int) []FragileHead {
	var all []FragileHead
	for l, layer := range r.Layers {
		for h, hd := range layer.Heads {
			all = append(all, FragileHead{Layer: l, Index: h, Head: hd})
		}
	}
	slices.SortStableFunc(all, func(a, b FragileHead) int { return cmp.Compare(b.JSMean, a.JSMean) })
	return all[:min(k, len(all))]
}
