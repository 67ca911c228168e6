//go:build amd64 || arm64

package cpu

// pause is a spin-wait hint to the CPU (pause_*.s).
func pause()
