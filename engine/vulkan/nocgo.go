//go:build !cgo

package vulkan

import "errors"

// Info describes a device (unused without cgo).
type Info struct {
	Name, Type, Driver, API string
	Subgroup                uint32
	MemoryMiB               uint64
	Unified, Validation     bool
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
