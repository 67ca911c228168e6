package sample

import "math"

// Helpers over a whole distribution that every part of the engine reads
// the same way: the API's logprobs, perplexity, the quantization compare,
// beams and speculative decoding, the classroom's polls.

// LogSoftmax returns log softmax(logits) in float64 (temperature 1).
func LogSoftmax(logits []float32) []float64 {
	lse := LogSumExp(logits)
	out := make([]float64, len(logits))
	for i, v := range logits {
		out[i] = float64(v) - lse
	}
	return out
}

// KL is the Kullback–Leibler divergence of q from ref in nats, both given
// as log-probabilities (LogSoftmax): Σ p·(log p − log q) over ref's
// tokens, never below 0 (rounding can give −1e-17).
func KL(ref, q []float64) float64 {
	var kl float64
	for i, a := range ref {
		if p := math.Exp(a); p > 0 {
			kl += p * (a - q[i])
		}
	}
	return math.Max(0, kl)
}

// LogSumExp is log Σ exp(logits), computed stably in float64: logit i's
// log-probability is logits[i] − LogSumExp(logits), with no allocation.
func LogSumExp(logits []float32) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	return m + math.Log(sum)
}

// Argmax returns the index of the largest value, NaNs aside; the first
// one wins ties (-1 when there is none).
func Argmax[T float32 | float64](x []T) int {
	// Greedy decoding scans a vocabulary per token: four running maxima
	// (comparisons NaNs never pass) with where each was first seen.
	m := T(math.Inf(-1))
	m0, m1, m2, m3 := m, m, m, m
	i0, i1, i2, i3 := -1, -1, -1, -1
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		if v[0] > m0 {
			m0, i0 = v[0], i
		}
		if v[1] > m1 {
			m1, i1 = v[1], i+1
		}
		if v[2] > m2 {
			m2, i2 = v[2], i+2
		}
		if v[3] > m3 {
			m3, i3 = v[3], i+3
		}
	}
	for ; i < len(x); i++ {
		if x[i] > m0 {
			m0, i0 = x[i], i
		}
	}
	best, bv := i0, m0
	for _, c := range [3]struct {
		v T
		i int
	}{{m1, i1}, {m2, i2}, {m3, i3}} {
		if c.i >= 0 && (best < 0 || c.v > bv || c.v == bv && c.i < best) {
			best, bv = c.i, c.v
		}
	}
	if best < 0 { // no value above −∞: the first −∞, if any
		for i, v := range x {
			if v == m {
				return i
			}
		}
	}
	return best
}

// Rank is where x[i] stands among x, from 1 (the largest): one more than
// how many values are larger (ties share the better rank; NaNs never
// count as larger).
func Rank[T float32 | float64](x []T, i int32) int {
	r := 1
	for _, v := range x {
		if v > x[i] {
			r++
		}
	}
	return r
}

// TopN returns the indices of the n largest values, largest first, ties
// by the lower index (NaNs are never among them). It takes O(len(x)·n)
// time and no more than n+1 indices of memory: n is a handful.
func TopN[T float32 | float64](x []T, n int) []int32 {
	if n <= 0 {
		return nil
	}
	ids := make([]int32, 0, n+1)
	for i, v := range x {
		if v != v { // NaN
			continue
		}
		k := len(ids)
		for k > 0 && x[ids[k-1]] < v {
			k--
		}
		if k < n {
			ids = append(ids, 0)
			copy(ids[k+1:], ids[k:])
			ids[k] = int32(i)
			ids = ids[:min(len(ids), n)]
		}
	}
	return ids
}
