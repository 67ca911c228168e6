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
	best := -1
	var bv T // x[best], held in a register: greedy decoding scans a vocabulary per token
	for i, v := range x {
		if v > bv || best < 0 && v == v {
			best, bv = i, v
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
