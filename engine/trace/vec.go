package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Vec is a float32 vector that survives JSON: numbers in their shortest
// float32 form, and the non-finite values (masked attention scores are
// -Inf) as the strings "-Infinity", "Infinity" and "NaN".
type Vec []float32

// MarshalJSON implements json.Marshaler.
func (v Vec) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+len(v)*10)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(float64(x)):
			b = append(b, `"NaN"`...)
		case math.IsInf(float64(x), 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(float64(x), -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *Vec) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*v = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Vec, len(raw))
	for i, r := range raw {
		switch string(r) {
		case `"NaN"`:
			out[i] = float32(math.NaN())
		case `"Infinity"`:
			out[i] = float32(math.Inf(1))
		case `"-Infinity"`:
			out[i] = float32(math.Inf(-1))
		default:
			f, err := strconv.ParseFloat(string(r), 32)
			if err != nil {
				return fmt.Errorf("trace: vector element %d: %w", i, err)
			}
			out[i] = float32(f)
		}
	}
	*v = out
	return nil
}

func vec(x []float32) Vec { return Vec(append([]float32(nil), x...)) }

// rows copies an n×d row-major block into n vectors.
func rows(x []float32, n, d int) []Vec {
	out := make([]Vec, n)
	for t := range out {
		out[t] = vec(x[t*d : (t+1)*d])
	}
	return out
}
