//go:build !amd64

package cpu

func dot(a, b []float32) float32 { return dotGo(a, b) }

func dotQ8_0(row []byte, x []float32) float32 { return dotQ8_0Go(row, x) }
