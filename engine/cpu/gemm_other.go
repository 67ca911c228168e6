//go:build !amd64 || purego

package cpu

// useGemmB and useGemm report whether the broadcast kernels run here:
// only on amd64.
const (
	useGemmB = false
	useGemm  = false
)

// The kernel tables are empty off amd64.
var (
	gemmKernels   [5][9]gemmKernel
	gemmKernelsT  [4]gemmKernel
	gemmKernelsT6 [4]gemmKernel
)

// The kernels' shape, unused here.
const gemmLanes, gemmAcc, gemmMaxZ, gemmTRows = 16, 24, 4, 8
