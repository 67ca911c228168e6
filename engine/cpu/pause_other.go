//go:build !amd64 && !arm64

package cpu

// pause is a spin-wait hint; this architecture gets none.
func pause() {}
