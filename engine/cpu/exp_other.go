//go:build (!amd64 && !arm64) || purego

package cpu

func maxf(x []float32) float32                 { return maxGo(x) }
func expSub(x []float32, s, m float32) float32 { return expSubGo(x, s, m) }
func scale(x []float32, s float32)             { scaleGo(x, s) }
func siluMul(a, b []float32)                   { siluMulGo(a, b) }
func gelu(a []float32)                         { geluGo(a) }
