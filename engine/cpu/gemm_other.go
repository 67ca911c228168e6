//go:build !amd64 || purego

package cpu

// useGemmB reports whether the broadcast kernels run here: only on amd64.
const useGemmB = false

// The kernel tables are empty off amd64.
var (
	gemmKernels  [5][9]gemmKernel
	gemmKernelsT [4]gemmKernel
)
