// Command gemmgen writes engine/cpu/gemm_amd64.s and its declarations
// (gemm_kernels_amd64.go): the AVX-512 micro-kernels
// of the broadcast GEMM (gemm.go), one per tile shape, so every shape's
// loop is unrolled in registers without a hand-written copy each.
//
// Kernel gemmM_Z_S computes an M-row by 16·Z-column tile of C = A·B over k:
// C[i][j] = Σ_p A[i·lda + p] · B[p·ldb + j]. Each step of p loads Z vectors
// of B's row p, broadcasts A[i][p] for each of the M rows and does M·Z fused
// multiply-adds into M·Z accumulator registers (at most 24 of the 32). S is
// how C is stored: "R" as rows (C[i·ldc + j]), "T" transposed (C[j·ldc + i], for
// products whose output is [vector][row]; eight rows and whole registers
// only).
//
// It also writes gemm256_amd64.s: the same kernels for AVX2 (FMA on
// 256-bit registers, 8 columns each, no AVX-512), gemmYM_Z_R for Z up
// to 3 and M·Z at most 12 accumulators of the 16 registers (three hold
// B's row, one the broadcast), and transposed ones of four rows, and of
// six for two registers of columns.
//
// Run it with `go generate ./engine/cpu`; TestGemmKernelsFresh fails when
// the committed files differ from its output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
)

// maxRows is the most rows a kernel holds (row pointers: three bases).
const maxRows = 8

// shapes lists the kernels: for each Z up to maxZ (vectors of 16
// columns, or 8 for AVX2), rows 1 to the most that fit acc accumulators.
func shapes(maxZ, acc int) [][2]int {
	var s [][2]int
	for z := 1; z <= maxZ; z++ {
		for m := 1; m <= min(maxRows, acc/z); m++ {
			s = append(s, [2]int{m, z})
		}
	}
	return s
}

// The AVX-512 kernels' Z and accumulators, and the AVX2 ones'; the AVX2
// kernels that store transposed have four rows (a 4×8 transpose per
// register of columns), and one of six rows for two registers (12
// accumulators: its two rows past the fourth stored as pairs).
const (
	maxZ512, acc512 = 4, 24
	maxZ256, acc256 = 3, 12
	maxRowsT256     = 4
	rowsT6, zT6     = 6, 2
)

func main() {
	dir := flag.String("d", ".", "the directory to write gemm_amd64.s and gemm_kernels_amd64.go into")
	flag.Parse()
	var asm, asm256, decl bytes.Buffer
	asm.WriteString(header + "\n" + constraint + "\n#include \"textflag.h\"\n")
	asm256.WriteString(header + "\n" + constraint + "\n#include \"textflag.h\"\n")
	decl.WriteString(header + "\n" + constraint + "\npackage cpu\n")
	for _, s := range shapes(maxZ512, acc512) {
		for _, st := range []byte{'R', 'T'} {
			if st == 'T' && s[0] != maxRows {
				continue
			}
			kernel(&asm, avx512, s[0], s[1], st)
			fmt.Fprintf(&decl, "\n//go:noescape\nfunc gemm%d_%d_%c(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int)\n", s[0], s[1], st)
		}
	}
	for _, s := range shapes(maxZ256, acc256) {
		for _, st := range []byte{'R', 'T'} {
			if st == 'T' && s[0] != maxRowsT256 && (s[0] != rowsT6 || s[1] != zT6) {
				continue
			}
			kernel(&asm256, avx2, s[0], s[1], st)
			fmt.Fprintf(&decl, "\n//go:noescape\nfunc gemmY%d_%d_%c(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int)\n", s[0], s[1], st)
		}
	}
	table := func(name, prefix string, maxZ, acc int) {
		fmt.Fprintf(&decl, "var %s = [5][9]gemmKernel{\n", name)
		for z := 1; z <= maxZ; z++ {
			fmt.Fprintf(&decl, "\t%d: {", z)
			for _, s := range shapes(maxZ, acc) {
				if s[1] == z {
					fmt.Fprintf(&decl, "%d: %s%d_%d_R, ", s[0], prefix, s[0], z)
				}
			}
			decl.WriteString("},\n")
		}
		decl.WriteString("}\n")
	}
	decl.WriteString("\n// gemm512Kernels[z][m] is the kernel of m rows and z vectors of 16 columns.\n")
	table("gemm512Kernels", "gemm", maxZ512, acc512)
	decl.WriteString("\n// gemm256Kernels[z][m] is the AVX2 kernel of m rows and z vectors of 8\n// columns.\n")
	table("gemm256Kernels", "gemmY", maxZ256, acc256)
	decl.WriteString("\n// gemm512KernelsT[z] is the eight-row kernel of z vectors of 16 columns\n// that stores its tile transposed.\nvar gemm512KernelsT = [4]gemmKernel{")
	for z := 1; z <= 3; z++ {
		fmt.Fprintf(&decl, "%d: gemm8_%d_T, ", z, z)
	}
	decl.WriteString("}\n")
	decl.WriteString("\n// gemm256KernelsT[z] is the AVX2 four-row kernel of z vectors of 8\n// columns that stores its tile transposed.\nvar gemm256KernelsT = [4]gemmKernel{")
	for z := 1; z <= 3; z++ {
		fmt.Fprintf(&decl, "%d: gemmY%d_%d_T, ", z, maxRowsT256, z)
	}
	decl.WriteString("}\n")
	fmt.Fprintf(&decl, "\n// gemm256KernelsT6[z] is the AVX2 six-row kernel of z vectors of 8\n// columns that stores its tile transposed, where there is one.\nvar gemm256KernelsT6 = [4]gemmKernel{%d: gemmY%d_%d_T}\n", zT6, rowsT6, zT6)
	src, err := format.Source(decl.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	for name, b := range map[string][]byte{"gemm_amd64.s": asm.Bytes(), "gemm256_amd64.s": asm256.Bytes(), "gemm_kernels_amd64.go": src} {
		if err := os.WriteFile(filepath.Join(*dir, name), b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

const header = "// Code generated by gemmgen (engine/cpu/internal/gemmgen); DO NOT EDIT.\n"

// constraint leaves the kernels out of a purego build, which runs the Go
// fallbacks on amd64 (CI tests them that way).
const constraint = "//go:build !purego\n"

// rowAddr is row i's operand at the current p: rows 0–2 from R8, 3–5 from
// R10, 6–7 from R11, each with stride R9.
func rowAddr(i int) string {
	base := []string{"R8", "R10", "R11"}[i/3]
	switch i % 3 {
	case 0:
		return "(" + base + ")"
	case 1:
		return "(" + base + ")(R9*1)"
	}
	return "(" + base + ")(R9*2)"
}

// isa is what a kernel's width changes: its name's prefix, register
// letter, bytes a register, the zeroing instruction, B's first register,
// and the broadcast registers (two alternating, or one).
type isa struct {
	prefix, reg string
	bytes       int
	zero        string
	bReg        int
	bcast       []int
}

var (
	avx512 = isa{"gemm", "Z", 64, "VPXORD", 24, []int{28, 29}}
	avx2   = isa{"gemmY", "Y", 32, "VXORPS", 12, []int{15}}
)

// kernel writes the kernel of m rows and z registers of columns at
// width w, its tile stored as rows (st 'R') or transposed ('T', AVX-512).
func kernel(b *bytes.Buffer, w isa, m, z int, st byte) {
	name := fmt.Sprintf("%s%d_%d_%c", w.prefix, m, z, st)
	p := func(format string, args ...any) { fmt.Fprintf(b, "\t"+format+"\n", args...) }
	fmt.Fprintf(b, "\n// func %s(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int)\n", name)
	fmt.Fprintf(b, "TEXT ·%s(SB), NOSPLIT, $0-56\n", name)
	p("MOVQ a+0(FP), R8")
	p("MOVQ lda+8(FP), R9")
	p("SHLQ $2, R9")
	p("LEAQ (R8)(R9*2), R10")
	p("ADDQ R9, R10")
	p("LEAQ (R10)(R9*2), R11")
	p("ADDQ R9, R11")
	p("MOVQ b+16(FP), DI")
	p("MOVQ ldb+24(FP), BX")
	p("SHLQ $2, BX")
	p("MOVQ k+32(FP), CX")
	r := w.reg
	for i := 0; i < m*z; i++ {
		p("%s %s%d, %s%d, %s%d", w.zero, r, i, r, i, r, i)
	}
	p("TESTQ CX, CX")
	p("JE %s_store", name)
	fmt.Fprintf(b, "%s_loop:\n", name)
	for j := 0; j < z; j++ {
		p("VMOVUPS %d(DI), %s%d", w.bytes*j, r, w.bReg+j)
	}
	for i := 0; i < m; i++ {
		br := w.bcast[i%len(w.bcast)]
		p("VBROADCASTSS %s, %s%d", rowAddr(i), r, br)
		for j := 0; j < z; j++ {
			p("VFMADD231PS %s%d, %s%d, %s%d", r, w.bReg+j, r, br, r, i*z+j)
		}
	}
	p("ADDQ $4, R8")
	p("ADDQ $4, R10")
	p("ADDQ $4, R11")
	p("ADDQ BX, DI")
	p("DECQ CX")
	p("JNE %s_loop", name)
	fmt.Fprintf(b, "%s_store:\n", name)
	p("MOVQ c+40(FP), DX")
	p("MOVQ ldc+48(FP), SI")
	p("SHLQ $2, SI")
	if st == 'R' {
		for i := 0; i < m; i++ {
			for j := 0; j < z; j++ {
				p("VMOVUPS %s%d, %d(DX)", r, i*z+j, w.bytes*j)
			}
			if i < m-1 {
				p("ADDQ SI, DX")
			}
		}
	} else if w.reg == "Z" {
		storeT(p, z)
	} else {
		if m == rowsT6 {
			storeT2(p, z)
		}
		storeT4(p, z)
	}
	p("VZEROUPPER")
	p("RET")
}

// storeT4 stores a 4-row AVX2 tile transposed: per register of 8
// columns, the four rows' accumulators are interleaved (pairs of rows,
// then pairs of pairs), leaving in each 128-bit half one column's four
// rows, which go to c + l·ldc (the low halves columns 0–3, the high ones
// 4–7).
func storeT4(p func(string, ...any), z int) {
	for j := 0; j < z; j++ {
		a := func(i int) int { return i*z + j }
		p("VUNPCKLPS Y%d, Y%d, Y12", a(1), a(0))
		p("VUNPCKHPS Y%d, Y%d, Y13", a(1), a(0))
		p("VUNPCKLPS Y%d, Y%d, Y14", a(3), a(2))
		p("VUNPCKHPS Y%d, Y%d, Y15", a(3), a(2))
		p("VSHUFPS $0x44, Y14, Y12, Y%d", a(0))
		p("VSHUFPS $0xEE, Y14, Y12, Y%d", a(1))
		p("VSHUFPS $0x44, Y15, Y13, Y%d", a(2))
		p("VSHUFPS $0xEE, Y15, Y13, Y%d", a(3))
		// column 8j+q at R8+q·ldc: R8, R8+ldc, R8+2ldc, R9 = R8+3ldc; 4–7 from R8+4ldc
		p("MOVQ DX, R8")
		p("LEAQ (R8)(SI*2), R9")
		p("ADDQ SI, R9")
		p("LEAQ (R8)(SI*4), R10")
		p("LEAQ (R9)(SI*4), R11")
		p("VMOVUPS X%d, (R8)", a(0))
		p("VMOVUPS X%d, (R8)(SI*1)", a(1))
		p("VMOVUPS X%d, (R8)(SI*2)", a(2))
		p("VMOVUPS X%d, (R9)", a(3))
		p("VEXTRACTF128 $1, Y%d, (R10)", a(0))
		p("VEXTRACTF128 $1, Y%d, (R10)(SI*1)", a(1))
		p("VEXTRACTF128 $1, Y%d, (R10)(SI*2)", a(2))
		p("VEXTRACTF128 $1, Y%d, (R11)", a(3))
		if j < z-1 {
			p("LEAQ (R10)(SI*4), DX")
		}
	}
}

// storeT2 stores rows 4 and 5 of an AVX2 tile transposed, before storeT4
// stores rows 0–3 (it leaves DX, c, alone): per register of 8 columns the
// two rows' accumulators are interleaved, which leaves each column's pair
// of floats in one 64-bit lane (columns 0, 1 | 4, 5 of one register, 2, 3
// | 6, 7 of the other), and column q's pair goes to c + q·ldc + 4 floats.
func storeT2(p func(string, ...any), z int) {
	p("MOVQ DX, AX")
	for j := 0; j < z; j++ {
		a := func(i int) int { return i*z + j }
		p("VUNPCKLPS Y%d, Y%d, Y12", a(5), a(4)) // columns 0, 1 | 4, 5
		p("VUNPCKHPS Y%d, Y%d, Y13", a(5), a(4)) // columns 2, 3 | 6, 7
		p("VEXTRACTF128 $1, Y12, X14")
		p("VEXTRACTF128 $1, Y13, X15")
		p("MOVQ AX, R8")
		p("LEAQ (R8)(SI*2), R9")
		p("ADDQ SI, R9")
		p("LEAQ (R8)(SI*4), R10")
		p("LEAQ (R9)(SI*4), R11")
		p("VMOVQ X12, 16(R8)")
		p("VMOVHPS X12, 16(R8)(SI*1)")
		p("VMOVQ X13, 16(R8)(SI*2)")
		p("VMOVHPS X13, 16(R9)")
		p("VMOVQ X14, 16(R10)")
		p("VMOVHPS X14, 16(R10)(SI*1)")
		p("VMOVQ X15, 16(R10)(SI*2)")
		p("VMOVHPS X15, 16(R11)")
		if j < z-1 {
			p("LEAQ (R10)(SI*4), AX")
		}
	}
}

// storeT stores an 8-row tile transposed: vector column l of the tile (one
// lane across the eight row accumulators) becomes eight floats at
// c + l·ldc, through an in-register transpose (a scatter per register is
// microcoded and slow). Per group of 16 columns: unpack pairs of rows
// (interleaved floats, then interleaved pairs), which leaves four rows of
// lanes {q, q+4, q+8, q+12} in each register, then join rows 0–3 and 4–7
// of a lane by 128-bit shuffles and store each lane's eight floats.
func storeT(p func(string, ...any), z int) {
	p("LEAQ (SI)(SI*2), BX") // 3·ldc
	for j := 0; j < z; j++ {
		a := func(i int) int { return i*z + j }
		for i := 0; i < 8; i += 2 {
			p("VUNPCKLPS Z%d, Z%d, Z%d", a(i+1), a(i), 24+i)
			p("VUNPCKHPS Z%d, Z%d, Z%d", a(i+1), a(i), 25+i)
		}
		for h := 0; h < 2; h++ { // rows 0–3 from Z24–27, rows 4–7 from Z28–31
			t := 24 + 4*h
			p("VUNPCKLPD Z%d, Z%d, Z%d", t+2, t, a(4*h+0))
			p("VUNPCKHPD Z%d, Z%d, Z%d", t+2, t, a(4*h+1))
			p("VUNPCKLPD Z%d, Z%d, Z%d", t+3, t+1, a(4*h+2))
			p("VUNPCKHPD Z%d, Z%d, Z%d", t+3, t+1, a(4*h+3))
		}
		// lane 4g+q of this group is at R8+g·4·ldc + q·ldc
		p("MOVQ DX, R8")
		p("LEAQ (R8)(SI*4), R9")
		p("LEAQ (R8)(SI*8), R10")
		p("LEAQ (R10)(SI*4), R11")
		base := []string{"R8", "R9", "R10", "R11"}
		at := func(g, q int) string {
			switch q {
			case 0:
				return "(" + base[g] + ")"
			case 3:
				return "(" + base[g] + ")(BX*1)"
			}
			return fmt.Sprintf("(%s)(SI*%d)", base[g], q)
		}
		for q := 0; q < 4; q++ {
			u, v := a(q), a(4+q)
			p("VSHUFF32X4 $0x44, Z%d, Z%d, Z24", v, u)
			p("VSHUFF32X4 $0xD8, Z24, Z24, Z24")
			p("VSHUFF32X4 $0xEE, Z%d, Z%d, Z25", v, u)
			p("VSHUFF32X4 $0xD8, Z25, Z25, Z25")
			p("VMOVUPS Y24, %s", at(0, q))
			p("VEXTRACTF32X8 $1, Z24, %s", at(1, q))
			p("VMOVUPS Y25, %s", at(2, q))
			p("VEXTRACTF32X8 $1, Z25, %s", at(3, q))
		}
		if j < z-1 {
			p("LEAQ (R11)(SI*4), DX")
		}
	}
}
