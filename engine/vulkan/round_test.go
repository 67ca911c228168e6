//go:build cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/cpu"
	"stepthrough/engine/quant"
)

// roundRef rounds x in blocks of qk values as engine/cpu rounds the vector
// it multiplies with Q8_0, Q5_0 and Q4_0 rows (qk 32: d kept as binary16) or
// K-quant rows (qk 256: d a float), returning d·q: the numbers those
// kernels multiply.
func roundRef(x []float32, qk int) []float32 {
	out := make([]float32, len(x))
	for b := 0; b < len(x)/qk; b++ {
		blk := x[b*qk : (b+1)*qk]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		id, d := float32(0), amax/127
		if amax != 0 {
			id = 127 / amax
		}
		if qk == 32 {
			d = quant.F16ToF32(quant.F32ToF16(d))
		}
		for i, v := range blk {
			out[b*qk+i] = d * float32(math.RoundToEven(float64(v*id)))
		}
	}
	return out
}

// RoundX and the norm that rounds as it writes give, bit for bit, the
// numbers the CPU's int8 kernels multiply: blocks with exact halves (ties
// round to even), zeros, one large value, and a row offset.
func TestRoundX(t *testing.T) {
	d := openTest(t, false)
	r := rand.New(rand.NewPCG(5, 8))
	for _, qk := range []int{32, 256} {
		n, cols := 3, 2*256
		x := randVec(r, n*cols, 4)
		for i := range qk { // block 0: amax 127, so x·127/amax is x itself: halves are exact ties
			x[i] = float32(i%9) - 4.5
		}
		x[0] = 127
		clear(x[qk : 2*qk]) // a block of zeros
		x[2*qk+5] = 1e4     // one value far above the rest
		t.Run(fmt.Sprint("round ", qk), func(t *testing.T) {
			xb, rb := buf(t, d, x), buf(t, d, make([]float32, (n-1)*cols))
			run(t, d, func(c *cmd) { c.roundX(set(t, d, xb, rb), qk, (n-1)*cols, cols) })
			if diff := cmp.Diff(roundRef(x[cols:], qk), read(t, d, rb, (n-1)*cols)); diff != "" {
				t.Errorf("rows 1 and 2 rounded in blocks of %d (-cpu +vulkan):\n%s", qk, diff)
			}
		})
		t.Run(fmt.Sprint("rmsnorm round ", qk), func(t *testing.T) {
			g := randVec(r, cols, 2)
			want := make([]float32, 0, (n-1)*cols)
			for row := 1; row < n; row++ {
				normed := make([]float32, cols)
				cpu.RMSNorm(normed, x[row*cols:(row+1)*cols], g, 1e-5)
				want = append(want, roundRef(normed, qk)...)
			}
			xb, gb, ob := buf(t, d, x), buf(t, d, g), buf(t, d, make([]float32, (n-1)*cols))
			run(t, d, func(c *cmd) { c.rmsNormRound(set(t, d, xb, gb, ob), qk, 1, n-1, cols, 1e-5) })
			got := read(t, d, ob, (n-1)*cols)
			// the norm's scale is summed in another order than the CPU's:
			// equal within float rounding (a block's d with it, in blocks of
			// 256 where d is a float), the same 8-bit values but where a
			// value sits that close to a rounding boundary
			differ := 0
			for i := range want {
				if math.Abs(float64(want[i]-got[i])) > 1e-6*math.Abs(float64(want[i])) {
					differ++
				}
			}
			if differ > len(want)/200 {
				t.Errorf("%d of %d values differ from the CPU's norm rounded in blocks of %d", differ, len(want), qk)
			}
			t.Logf("blocks of %d: %d of %d values differ from the CPU's", qk, differ, len(want))
		})
	}
}
