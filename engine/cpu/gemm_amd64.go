//go:build !purego

package cpu

// useGemm reports whether a broadcast GEMM runs here: the AVX-512 kernels
// (useGemmB), else the AVX2 ones (8 floats a register).
var useGemm = useGemmB || useAVX2

// gemmLanes is the floats in one of the kernels' registers; gemmAcc the
// most accumulator registers a kernel holds; gemmMaxZ the most registers
// of B's row.
var gemmLanes, gemmAcc, gemmMaxZ = func() (int, int, int) {
	if useGemmB {
		return 16, 24, 4
	}
	return 8, 12, 3
}()

// gemmKernels[z][m] is the kernel of m rows and z registers of columns at
// this width.
var gemmKernels = func() [5][9]gemmKernel {
	if useGemmB {
		return gemm512Kernels
	}
	return gemm256Kernels
}()

// gemmKernelsT[z] is the kernel of gemmTRows rows and z registers of
// columns that stores its tile transposed, at this width.
var gemmKernelsT = func() [4]gemmKernel {
	if useGemmB {
		return gemm512KernelsT
	}
	return gemm256KernelsT
}()

// gemmTRows is the rows of the kernels that store transposed: eight
// (an in-register transpose of 16 columns), four at AVX2 (of 8).
var gemmTRows = func() int {
	if useGemmB {
		return 8
	}
	return 4
}()

// gemmKernelsT6[z] is the six-row kernel of z registers of columns that
// stores its tile transposed, where there is one: AVX2's of two registers.
var gemmKernelsT6 = func() [4]gemmKernel {
	if useGemmB {
		return [4]gemmKernel{}
	}
	return gemm256KernelsT6
}()
