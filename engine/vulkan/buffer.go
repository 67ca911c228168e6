//go:build cgo

package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"
)

// buffer is a storage buffer on the device. On unified-memory devices it
// stays mapped and ptr points at it; otherwise it is device-local and read
// and written through a staging buffer.
type buffer struct {
	d    *Device
	buf  vk.Buffer
	mem  vk.DeviceMemory
	size int
	ptr  unsafe.Pointer
}

// maxBuffer caps one allocation (weights are uploaded tensor by tensor).
const maxBuffer = 4 << 30

// NewBuffer allocates a device buffer of size bytes (rounded up to 4).
func (d *Device) NewBuffer(size int) (*buffer, error) {
	flags := vk.MemoryPropertyDeviceLocalBit
	if d.mapped {
		flags |= vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit
	}
	return d.newBuffer(size, flags, d.mapped)
}

// newHostBuffer allocates a host-visible, mapped buffer: a readback
// target that a recorded command buffer copies into.
func (d *Device) newHostBuffer(size int) (*buffer, error) {
	return d.newBuffer(size, vk.MemoryPropertyHostVisibleBit|vk.MemoryPropertyHostCoherentBit, true)
}

func (d *Device) newBuffer(size int, flags vk.MemoryPropertyFlagBits, mapIt bool) (*buffer, error) {
	size = max(4, (size+3)&^3)
	if size > maxBuffer {
		return nil, fmt.Errorf("vulkan: buffer of %d bytes exceeds %d", size, maxBuffer)
	}
	usage := vk.BufferUsageStorageBufferBit | vk.BufferUsageTransferSrcBit | vk.BufferUsageTransferDstBit
	var buf vk.Buffer
	if err := check(vk.CreateBuffer(d.dev, &vk.BufferCreateInfo{SType: vk.StructureTypeBufferCreateInfo, Size: vk.DeviceSize(size), Usage: vk.BufferUsageFlags(usage), SharingMode: vk.SharingModeExclusive}, nil, &buf), "create buffer"); err != nil {
		return nil, err
	}
	var req vk.MemoryRequirements
	vk.GetBufferMemoryRequirements(d.dev, buf, &req)
	req.Deref()
	typ, ok := uint32(0), false
	for i := uint32(0); i < d.memProps.MemoryTypeCount; i++ {
		mt := d.memProps.MemoryTypes[i]
		mt.Deref()
		if req.MemoryTypeBits&(1<<i) != 0 && vk.MemoryPropertyFlagBits(mt.PropertyFlags)&flags == flags {
			typ, ok = i, true
			break
		}
	}
	if !ok {
		vk.DestroyBuffer(d.dev, buf, nil)
		return nil, fmt.Errorf("vulkan: no memory type with flags %#x", flags)
	}
	var mem vk.DeviceMemory
	if err := check(vk.AllocateMemory(d.dev, &vk.MemoryAllocateInfo{SType: vk.StructureTypeMemoryAllocateInfo, AllocationSize: req.Size, MemoryTypeIndex: typ}, nil, &mem), fmt.Sprintf("allocate %d bytes", size)); err != nil {
		vk.DestroyBuffer(d.dev, buf, nil)
		return nil, err
	}
	b := &buffer{d: d, buf: buf, mem: mem, size: size}
	if err := check(vk.BindBufferMemory(d.dev, buf, mem, 0), "bind memory"); err != nil {
		b.free()
		return nil, err
	}
	if mapIt {
		var p unsafe.Pointer
		if err := check(vk.MapMemory(d.dev, mem, 0, vk.DeviceSize(size), 0, &p), "map memory"); err != nil {
			b.free()
			return nil, err
		}
		b.ptr = p
	}
	return b, nil
}

// free releases the buffer.
func (b *buffer) free() {
	if b == nil || b.buf == nil {
		return
	}
	if b.ptr != nil {
		vk.UnmapMemory(b.d.dev, b.mem)
	}
	vk.DestroyBuffer(b.d.dev, b.buf, nil)
	vk.FreeMemory(b.d.dev, b.mem, nil)
	b.buf = nil
}

func (b *buffer) bytes() []byte { return unsafe.Slice((*byte)(b.ptr), b.size) }

func (d *Device) stage(n int) (*buffer, error) {
	if d.staging != nil && d.staging.size >= n {
		return d.staging, nil
	}
	d.staging.free()
	s, err := d.newBuffer(max(n, 1<<20), vk.MemoryPropertyHostVisibleBit|vk.MemoryPropertyHostCoherentBit, true)
	d.staging = s
	return s, err
}

// write copies src into b at byte offset off (the device must be idle).
func (d *Device) write(b *buffer, off int, src []byte) error {
	if off < 0 || off+len(src) > b.size {
		return fmt.Errorf("vulkan: write of %d bytes at %d overflows a %d-byte buffer", len(src), off, b.size)
	}
	if len(src) == 0 {
		return nil
	}
	if b.ptr != nil {
		copy(b.bytes()[off:], src)
		return nil
	}
	for len(src) > 0 { // through the staging buffer, in pieces of at most 64 MiB
		n := min(len(src), 64<<20)
		s, err := d.stage(n)
		if err != nil {
			return err
		}
		copy(s.bytes(), src[:n])
		c, err := d.Begin()
		if err != nil {
			return err
		}
		c.copy(s, b, 0, off, n)
		if err := c.submit(); err != nil {
			return err
		}
		src, off = src[n:], off+n
	}
	return nil
}

// read copies len(dst) bytes of b from byte offset off into dst.
func (d *Device) read(b *buffer, off int, dst []byte) error {
	if off < 0 || off+len(dst) > b.size {
		return fmt.Errorf("vulkan: read of %d bytes at %d overflows a %d-byte buffer", len(dst), off, b.size)
	}
	if b.ptr != nil {
		copy(dst, b.bytes()[off:])
		return nil
	}
	for len(dst) > 0 {
		n := min(len(dst), 64<<20)
		s, err := d.stage(n)
		if err != nil {
			return err
		}
		c, err := d.Begin()
		if err != nil {
			return err
		}
		c.copy(b, s, off, 0, n)
		if err := c.submit(); err != nil {
			return err
		}
		copy(dst[:n], s.bytes())
		dst, off = dst[n:], off+n
	}
	return nil
}

// writeF32 writes floats at element offset off.
func (d *Device) writeF32(b *buffer, off int, v []float32) error {
	if b.ptr != nil && (off+len(v))*4 <= b.size && off >= 0 {
		copy(unsafe.Slice((*float32)(b.ptr), b.size/4)[off:], v)
		return nil
	}
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return d.write(b, 4*off, buf)
}

// readF32 reads len(dst) floats from element offset off.
func (d *Device) readF32(b *buffer, off int, dst []float32) error {
	if b.ptr != nil && (off+len(dst))*4 <= b.size && off >= 0 {
		copy(dst, unsafe.Slice((*float32)(b.ptr), b.size/4)[off:])
		return nil
	}
	buf := make([]byte, 4*len(dst))
	if err := d.read(b, 4*off, buf); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return nil
}
