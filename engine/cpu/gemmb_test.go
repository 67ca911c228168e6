package cpu

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// TestGemmAB checks every broadcast kernel shape against a float64 loop:
// row counts 1–19 (each kernel height and its tails), 16–208 columns
// (one to four vector registers of 16, one to three of 8 at AVX2, and
// several column blocks), inner lengths 1–37, with strides wider than
// the data.
func TestGemmAB(t *testing.T) {
	if !useGemm {
		t.Skip("the broadcast GEMM needs AVX2 or AVX-512; this CPU uses the tile kernels")
	}
	testGemmAB(t)
}

func testGemmAB(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 19} {
		for _, n := range []int{8, 16, 24, 32, 40, 48, 64, 80, 208} {
			if n%gemmLanes != 0 {
				continue
			}
			for _, k := range []int{1, 2, 7, 37} {
				lda, ldb, ldc := k+3, n+5, n+2
				a, b := randVec(rng, (m-1)*lda+k), randVec(rng, (k-1)*ldb+n)
				c := make([]float32, (m-1)*ldc+n+1)
				c[len(c)-1] = 42 // past the last row: must stay
				gemmAB(c, ldc, a, lda, b, ldb, m, n, k)
				for i := range m {
					for j := range n {
						want := 0.0
						for p := range k {
							want += float64(a[i*lda+p]) * float64(b[p*ldb+j])
						}
						if d := math.Abs(float64(c[i*ldc+j]) - want); d > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("m=%d n=%d k=%d: c[%d][%d] = %g, want %g", m, n, k, i, j, c[i*ldc+j], want)
						}
					}
				}
				if c[len(c)-1] != 42 {
					t.Fatalf("m=%d n=%d k=%d: wrote past the output", m, n, k)
				}
			}
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestMatMulPanels checks weight products through the packed panels
// against one vector at a time: vector counts around the panel edges
// (16, 47, 48, 49, 97, 130) and those whose last register-wide panel is
// split with the one before (32, 56 and 128 at AVX2, 64 and 112 at
// AVX-512; 49 and 97 at both), row counts that are not multiples of 8, F32
// and a quantized type (rows dequantized per block), one and two threads.
func TestMatMulPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		for _, shape := range [][2]int{{64, 437}, {96, 501}} { // cols, rows: the token embedding's
			cols, rows := shape[0], shape[1]
			m := synthModel(t, model.SynthOptions{Arch: "llama", Embd: cols, Layers: 1, Heads: 2, FFN: 64, Vocab: rows, Context: 8, Type: typ})
			w := m.Weights.TokEmbd
			for _, threads := range []int{1, 2} {
				p := NewPool(threads)
				scratch := make([][]float32, threads)
				for i := range scratch {
					scratch[i] = make([]float32, ScratchFloats(cols))
				}
				for _, n := range []int{16, 32, 47, 48, 49, 56, 64, 97, 112, 128, 130} {
					x := randVec(rng, n*cols)
					out := make([]float32, n*rows+1)
					out[n*rows] = 7
					p.MatMul(out[:n*rows], w, x, n, scratch)
					one := make([]float32, rows)
					for v := range n {
						p.MatMul(one, w, x[v*cols:(v+1)*cols], 1, scratch)
						for r := range rows {
							if d := math.Abs(float64(out[v*rows+r] - one[r])); d > 1e-4*(1+math.Abs(float64(one[r]))) {
								t.Fatalf("%s %d×%d, %d threads, n=%d: vector %d row %d = %g, alone %g", typ, rows, cols, threads, n, v, r, out[v*rows+r], one[r])
							}
						}
					}
					if out[n*rows] != 7 {
						t.Fatalf("n=%d: wrote past the output", n)
					}
				}
				p.Close()
			}
		}
	}
}

// TestGemmKernelsFresh regenerates the micro-kernels and compares them
// with the committed files.
func TestGemmKernelsFresh(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./internal/gemmgen", "-d", dir)
	cmd.Env = append(os.Environ(), "GOARCH=", "GOOS=") // the host's, when this test runs as another's (GOARCH=arm64 go test -exec qemu-aarch64-static)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gemmgen: %v\n%s", err, out)
	}
	for _, name := range []string{"gemm_amd64.s", "gemm256_amd64.s", "gemm_kernels_amd64.go"} {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(fresh) != string(committed) {
			t.Errorf("%s differs from gemmgen's output: run `go generate ./engine/cpu` and commit it", name)
		}
	}
}

// TestDecodeRow checks the Q8_0, Q4_K, Q5_K and Q6_K row decoders against
// quant.Dequantize bit for bit, and x quantized for the K-quant kernels
// back to floats against the plain loop.
func TestDecodeRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		typ quant.Type
		n   int
	}{{quant.Q8_0, 32}, {quant.Q8_0, 64}, {quant.Q8_0, 768}, {quant.Q4_K, 256}, {quant.Q4_K, 768}, {quant.Q4_K, 2048}, {quant.Q5_K, 256}, {quant.Q5_K, 2048}, {quant.Q6_K, 256}, {quant.Q6_K, 768}} {
		n := c.n
		x := randVec(rng, n)
		raw, err := quant.Quantize(c.typ, x)
		if err != nil {
			t.Fatal(err)
		}
		want, got := make([]float32, n), make([]float32, n)
		if err := quant.Dequantize(c.typ, raw, want); err != nil {
			t.Fatal(err)
		}
		decodeRowInto(c.typ, raw, got)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s n=%d: value %d = %g, want %g", c.typ, n, i, got[i], want[i])
			}
		}
	}
	// random bytes: every bit pattern of the six-bit scales and mins (and
	// of Q6_K's, and every fifth bit of Q5_K), with finite f16 scales
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		raw := make([]byte, 8*typ.BlockBytes())
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		fixScales(typ, raw)
		want, got := make([]float32, 8*256), make([]float32, 8*256)
		if err := quant.Dequantize(typ, raw, want); err != nil {
			t.Fatal(err)
		}
		decodeRowInto(typ, raw, got)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s random bytes: value %d = %g, want %g", typ, i, got[i], want[i])
			}
		}
	}
	var z q8K
	z.resize(3, 512)
	quantizeQ8K(randVec(rng, 3*512), &z, 0)
	got := make([]float32, 3*512)
	z.dequantize(got)
	for i, v := range z.q {
		if want := z.d[i/256] * float32(v); got[i] != want {
			t.Fatalf("q8K value %d = %g, want %g", i, got[i], want)
		}
	}
}
