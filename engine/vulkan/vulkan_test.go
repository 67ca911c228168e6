//go:build cgo

package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	vk "github.com/vulkan-go/vulkan"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// openTest opens a device for tests: CPU devices allowed (lavapipe in CI),
// validation on. Without Vulkan the test skips, or fails under
// REQUIRE_VULKAN=1.
func openTest(t testing.TB, staging bool) *Device {
	t.Helper()
	d, err := Open(Options{AllowCPU: true, Validation: true, forceStaging: staging})
	if err != nil {
		if os.Getenv("REQUIRE_VULKAN") == "1" {
			t.Fatalf("REQUIRE_VULKAN=1: %v", err)
		}
		t.Skipf("no Vulkan: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if n, first := ValidationErrors(); n > 0 {
			t.Errorf("validation layer reported %d errors; first: %s", n, first)
		}
	})
	t.Logf("device: %s (validation %v, unified %v)", d.Info, d.Info.Validation, d.Info.Unified)
	return d
}

// nmse is Σ(a−b)²/Σa², llama.cpp's test-backend-ops measure.
func nmse(ref, got []float32) float64 {
	var num, den float64
	for i := range ref {
		d := float64(ref[i]) - float64(got[i])
		num += d * d
		den += float64(ref[i]) * float64(ref[i])
	}
	if den == 0 {
		return num
	}
	return num / den
}

const guard = 64 // floats of NaN sentinel after every output

// buf uploads v into a new buffer followed by a NaN guard region.
func buf(t testing.TB, d *Device, v []float32) *buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * (len(v) + guard))
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float32, len(v)+guard)
	copy(g, v)
	for i := len(v); i < len(g); i++ {
		g[i] = float32(math.NaN())
	}
	if err := d.writeF32(b, 0, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.free)
	return b
}

func rawBuf(t testing.TB, d *Device, data []byte) *buffer {
	b, err := d.NewBuffer(len(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.write(b, 0, data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.free)
	return b
}

// read returns n floats and checks the guard after them is untouched.
func read(t testing.TB, d *Device, b *buffer, n int) []float32 {
	t.Helper()
	out := make([]float32, n+guard)
	if err := d.readF32(b, 0, out); err != nil {
		t.Fatal(err)
	}
	for i := n; i < len(out); i++ {
		if !math.IsNaN(float64(out[i])) {
			t.Fatalf("out-of-bounds write: guard element %d is %g", i-n, out[i])
		}
	}
	return out[:n]
}

func run(t testing.TB, d *Device, rec func(c *cmd)) {
	t.Helper()
	c, err := d.Begin()
	if err != nil {
		t.Fatal(err)
	}
	rec(c)
	if err := c.submit(); err != nil {
		t.Fatal(err)
	}
}

func set(t testing.TB, d *Device, bufs ...*buffer) vk.DescriptorSet {
	t.Helper()
	s, err := d.newSet(bufs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randVec(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((r.Float64()*2 - 1) * scale)
	}
	return v
}

func expectNMSE(t *testing.T, what string, ref, got []float32, limit float64) {
	t.Helper()
	for i, v := range got {
		if math.IsNaN(float64(v)) && !math.IsNaN(float64(ref[i])) {
			t.Fatalf("%s: NaN at %d", what, i)
		}
	}
	if e := nmse(ref, got); e > limit {
		t.Errorf("%s: NMSE %.3g > %.0e", what, e, limit)
	}
}

func TestOps(t *testing.T) {
	for _, staging := range []bool{false, true} {
		t.Run(fmt.Sprintf("staging=%v", staging), func(t *testing.T) { testOps(t, staging) })
	}
}

func testOps(t *testing.T, staging bool) {
	d := openTest(t, staging)
	r := rand.New(rand.NewPCG(1, 2))
	pool := cpu.NewPool(2)
	defer pool.Close()

	t.Run("matmul", func(t *testing.T) {
		for _, typ := range []quant.Type{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
			shapes := [][3]int{{1, 32, 1}, {7, 64, 1}, {33, 96, 3}, {100, 288, 9}, {513, 256, 17}, {65, 64, 70}, {2048, 1024, 1}, {70000, 64, 1}}
			if typ == quant.F32 || typ == quant.F16 {
				shapes = append(shapes, [3]int{5, 1, 2}, [3]int{9, 17, 3}, [3]int{31, 100, 1})
			}
			if typ.BlockElems() == 256 { // K-quants: rows of whole 256-value blocks
				shapes = [][3]int{{1, 256, 1}, {7, 512, 1}, {33, 768, 3}, {65, 256, 20}, {300, 1024, 1}}
			}
			for _, s := range shapes {
				rows, cols, n := s[0], s[1], s[2]
				w, _ := quant.Quantize(typ, randVec(r, rows*cols, 1))
				x := randVec(r, n*cols, 1)
				tensor := &model.Tensor{Name: "w", Type: typ, Dims: []int{cols, rows}, Data: w}
				ref := make([]float32, n*rows)
				scratch := [][]float32{make([]float32, cpu.ScratchFloats(cols)), make([]float32, cpu.ScratchFloats(cols))}
				pool.MatMul(ref, tensor, x, n, scratch)
				wb, xb, yb := rawBuf(t, d, w), buf(t, d, x), buf(t, d, make([]float32, n*rows))
				run(t, d, func(c *cmd) { c.matMul(set(t, d, wb, xb, yb), shaderType(typ), rows, cols, n, 0) })
				expectNMSE(t, fmt.Sprintf("matmul %s %dx%d n=%d", typ, rows, cols, n), ref, read(t, d, yb, n*rows), 5e-4)
			}
		}
	})
	t.Run("get_rows", func(t *testing.T) {
		for _, typ := range []quant.Type{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
			rows, cols := 50, max(64, typ.BlockElems())
			w, _ := quant.Quantize(typ, randVec(r, rows*cols, 1))
			tensor := &model.Tensor{Name: "e", Type: typ, Dims: []int{cols, rows}, Data: w}
			ids := []uint32{3, 0, 49, 3, 17}
			ref := make([]float32, len(ids)*cols)
			for i, id := range ids {
				cpu.RowF32(tensor, int(id), ref[i*cols:(i+1)*cols])
			}
			idb := make([]byte, 4*len(ids))
			for i, id := range ids {
				binary.LittleEndian.PutUint32(idb[4*i:], id)
			}
			wb, ib, ob := rawBuf(t, d, w), rawBuf(t, d, idb), buf(t, d, make([]float32, len(ref)))
			run(t, d, func(c *cmd) { c.getRows(set(t, d, wb, ib, ob), shaderType(typ), cols, len(ids), false) })
			expectNMSE(t, "get_rows "+typ.String(), ref, read(t, d, ob, len(ref)), 1e-7)
			// add mode (learned position embeddings)
			run(t, d, func(c *cmd) { c.getRows(set(t, d, wb, ib, ob), shaderType(typ), cols, len(ids), true) })
			for i := range ref {
				ref[i] *= 2
			}
			expectNMSE(t, "get_rows add "+typ.String(), ref, read(t, d, ob, len(ref)), 1e-7)
		}
	})
	t.Run("norms", func(t *testing.T) {
		for _, cols := range []int{1, 7, 64, 100, 288, 1000} {
			n := 3
			x, w, b := randVec(r, n*cols, 3), randVec(r, cols, 1), randVec(r, cols, 1)
			ref := make([]float32, n*cols)
			for i := 0; i < n; i++ {
				cpu.RMSNorm(ref[i*cols:(i+1)*cols], x[i*cols:(i+1)*cols], w, 1e-5)
			}
			xb, wb, bb, ob := buf(t, d, x), buf(t, d, w), buf(t, d, b), buf(t, d, make([]float32, n*cols))
			run(t, d, func(c *cmd) { c.rmsNorm(set(t, d, xb, wb, ob), n, cols, 1e-5) })
			expectNMSE(t, fmt.Sprint("rmsnorm ", cols), ref, read(t, d, ob, n*cols), 1e-7)
			for i := 0; i < n; i++ {
				cpu.LayerNorm(ref[i*cols:(i+1)*cols], x[i*cols:(i+1)*cols], w, b, 1e-5)
			}
			run(t, d, func(c *cmd) { c.layerNorm(set(t, d, xb, wb, bb, ob), n, cols, 1e-5) })
			if cols > 1 { // a single element normalises to exactly 0, where NMSE is meaningless
				expectNMSE(t, fmt.Sprint("layernorm ", cols), ref, read(t, d, ob, n*cols), 1e-7)
			}
		}
	})
	t.Run("rope", func(t *testing.T) {
		for _, c := range []struct{ heads, hd, dims, pos0, n, mode int }{{8, 8, 8, 0, 5, 0}, {6, 48, 48, 17, 3, 0}, {4, 64, 32, 100, 2, 1}, {2, 16, 16, 0, 1, 1}} {
			stride := c.heads * c.hd
			x := randVec(r, c.n*stride, 1)
			ref := append([]float32(nil), x...)
			cache := make([]float32, c.hd+2)
			for t0 := 0; t0 < c.n; t0++ {
				row := ref[t0*stride : (t0+1)*stride]
				if c.mode == 0 {
					cpu.RopeNorm(row, c.heads, c.hd, c.dims, c.pos0+t0, 10000, cache)
				} else {
					cpu.RopeNeoX(row, c.heads, c.hd, c.dims, c.pos0+t0, 10000, cache)
				}
			}
			xb, fb := buf(t, d, x), buf(t, d, []float32{1})
			run(t, d, func(cm *cmd) {
				cm.rope(set(t, d, xb, fb), c.heads, c.hd, c.dims, c.pos0, c.n, nil, false, c.mode, stride)
			})
			expectNMSE(t, fmt.Sprintf("rope %+v", c), ref, read(t, d, xb, len(x)), 1e-3)
		}
	})
	t.Run("attention", func(t *testing.T) {
		for _, c := range []struct{ heads, kvHeads, hd, pos0, n int }{{8, 4, 8, 0, 5}, {6, 6, 48, 20, 1}, {4, 1, 16, 3, 7}, {2, 2, 64, 0, 1}} {
			ctx := c.pos0 + c.n
			qd, kvd := c.heads*c.hd, c.kvHeads*c.hd
			q, k, v := randVec(r, c.n*qd, 1), randVec(r, ctx*kvd, 1), randVec(r, ctx*kvd, 1)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			refS := make([]float32, c.n*c.heads*ctx)
			refW := make([]float32, len(refS))
			refO := make([]float32, c.n*qd)
			group := c.heads / c.kvHeads
			for t0 := 0; t0 < c.n; t0++ {
				for h := 0; h < c.heads; h++ {
					row := (t0*c.heads + h) * ctx
					vis := c.pos0 + t0 + 1
					for j := 0; j < ctx; j++ {
						if j >= vis {
							refS[row+j] = float32(math.Inf(-1))
							continue
						}
						var s float32
						for e := 0; e < c.hd; e++ {
							s += q[t0*qd+h*c.hd+e] * k[j*kvd+(h/group)*c.hd+e]
						}
						refS[row+j] = s * scale
					}
					copy(refW[row:row+ctx], refS[row:row+ctx])
					cpu.Softmax(refW[row : row+ctx])
					for j := 0; j < vis; j++ {
						for e := 0; e < c.hd; e++ {
							refO[t0*qd+h*c.hd+e] += refW[row+j] * v[j*kvd+(h/group)*c.hd+e]
						}
					}
				}
			}
			a := attn{heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, ctx: ctx, pos0: c.pos0, n: c.n, scale: scale, qStride: qd, kvDim: kvd, outStride: qd}
			qb, kb, vb, sb, ob := buf(t, d, q), buf(t, d, k), buf(t, d, v), buf(t, d, make([]float32, len(refS))), buf(t, d, make([]float32, len(refO)))
			run(t, d, func(cm *cmd) { cm.attnScores(set(t, d, qb, kb, sb), a) })
			gotS := read(t, d, sb, len(refS))
			for i := range refS {
				if math.IsInf(float64(refS[i]), -1) != math.IsInf(float64(gotS[i]), -1) {
					t.Fatalf("attention %+v: mask differs at %d", c, i)
				}
				if math.IsInf(float64(refS[i]), -1) {
					refS[i], gotS[i] = 0, 0
				}
			}
			expectNMSE(t, fmt.Sprintf("attn scores %+v", c), refS, gotS, 5e-4)
			run(t, d, func(cm *cmd) {
				cm.softmax(set(t, d, sb), ctx, c.n*c.heads)
				cm.attnOut(set(t, d, sb, vb, ob), a)
			})
			expectNMSE(t, fmt.Sprintf("softmax %+v", c), refW, read(t, d, sb, len(refW)), 1e-6)
			expectNMSE(t, fmt.Sprintf("attn out %+v", c), refO, read(t, d, ob, len(refO)), 5e-4)
		}
	})
	t.Run("elementwise", func(t *testing.T) {
		for _, n := range []int{1, 255, 257, 5000} {
			a, b := randVec(r, n, 6), randVec(r, n, 2)
			ref := make([]float32, n)
			for i := range ref {
				ref[i] = cpu.SiLU(a[i]) * b[i]
			}
			ab, bb := buf(t, d, a), buf(t, d, b)
			run(t, d, func(c *cmd) { c.swiGLU(set(t, d, ab, bb), n) })
			expectNMSE(t, fmt.Sprint("swiglu ", n), ref, read(t, d, ab, n), 1e-7)
			for i := range ref {
				ref[i] = cpu.GELU(b[i])
			}
			run(t, d, func(c *cmd) { c.gelu(set(t, d, bb), n) })
			expectNMSE(t, fmt.Sprint("gelu ", n), ref, read(t, d, bb, n), 1e-7)
			x, y := randVec(r, n, 1), randVec(r, n, 1)
			xb, yb := buf(t, d, x), buf(t, d, y)
			for i := range ref {
				ref[i] = x[i] + y[i]
			}
			run(t, d, func(c *cmd) { c.add(set(t, d, xb, yb), n, n) })
			expectNMSE(t, fmt.Sprint("add ", n), ref, read(t, d, xb, n), 1e-7)
		}
		// bias broadcast and strided copies (KV append, QKV split)
		x, bias := randVec(r, 3*10, 1), randVec(r, 10, 1)
		ref := make([]float32, 30)
		for i := range ref {
			ref[i] = x[i] + bias[i%10]
		}
		xb, bb := buf(t, d, x), buf(t, d, bias)
		run(t, d, func(c *cmd) { c.add(set(t, d, xb, bb), 30, 10) })
		expectNMSE(t, "bias add", ref, read(t, d, xb, 30), 1e-7)
		src := randVec(r, 3*12, 1)
		dst := make([]float32, 50)
		sb, db := buf(t, d, src), buf(t, d, dst)
		run(t, d, func(c *cmd) { c.copyRows(set(t, d, sb, db), 4, 3, 8, 12, 10, 5) })
		got := read(t, d, db, 50)
		for t0 := 0; t0 < 3; t0++ {
			for k := 0; k < 4; k++ {
				if got[10+t0*5+k] != src[8+t0*12+k] {
					t.Fatalf("copy_rows row %d col %d", t0, k)
				}
			}
		}
	})
}
