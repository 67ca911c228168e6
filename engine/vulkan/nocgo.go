//go:build !cgo

package vulkan

import (
	"context"
	"errors"

	"stepthrough/engine/intervene"
)

// Info describes a device (unused without cgo).
type Info struct {
	Name, Type, Driver, API string
	Subgroup                uint32
	MemoryMiB               uint64
	Unified, Validation     bool
	SubgroupArith           bool
}

// Options choose a device (unused without cgo).
type Options struct{ AllowCPU, Validation, ForceStaging bool }

// ErrNoDevice means no usable device was found.
var ErrNoDevice = errors.New("no suitable Vulkan device")

// errNoCgo is returned by everything in a build without cgo.
var errNoCgo = errors.New("Vulkan backend not built: this binary was built with CGO_ENABLED=0")

// Device is unavailable without cgo.
type Device struct{ Info Info }

// Open always fails without cgo.
func Open(Options) (*Device, error) { return nil, errNoCgo }

// Close does nothing.
func (d *Device) Close() {}

// String describes the device.
func (i Info) String() string { return i.Name }

// Loaded is unavailable without cgo.
type Loaded struct{}

// Load always fails without cgo.
func Load(d *Device, m any, ctxLen int) (*Loaded, error) { return nil, errNoCgo }

// Own, Close and NewRunner satisfy the engine's use of a Loaded model.
func (l *Loaded) Own()                               {}
func (l *Loaded) Context() int                       { return 0 }
func (l *Loaded) Close()                             {}
func (l *Loaded) NewRunner(ctx int) (*Runner, error) { return nil, errNoCgo }

// Runner is unavailable without cgo.
type Runner struct{}

// NewOwnedRunner always fails without cgo.
func NewOwnedRunner(d *Device, m any, ctxLen int) (*Runner, error) { return nil, errNoCgo }

// Fork, CopyStateFrom, SetEdits and Truncate satisfy the engine's use of
// a runner.
func (r *Runner) Fork() (*Runner, error)            { return nil, errNoCgo }
func (r *Runner) CopyStateFrom(src *Runner) error   { return errNoCgo }
func (r *Runner) SetEdits(set *intervene.Set) error { return errNoCgo }
func (r *Runner) Truncate(n int)                    {}

// Forward, Pos, Capacity, Reset and Close satisfy engine.Backend.
func (r *Runner) Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	return nil, errNoCgo
}
func (r *Runner) Pos() int      { return 0 }
func (r *Runner) Capacity() int { return 0 }
func (r *Runner) Reset()        {}
func (r *Runner) Close()        {}

// ValidationErrors reports nothing without cgo.
func ValidationErrors() (int, string) { return 0, "" }
