//go:build cgo

package vulkan

import (
	"fmt"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"
)

const setsPerPool = 1024

// newSet allocates a descriptor set binding bufs to bindings 0, 1, ….
func (d *Device) newSet(bufs ...*buffer) (vk.DescriptorSet, error) {
	if len(bufs) > maxBindings {
		return nil, fmt.Errorf("vulkan: %d buffers, at most %d", len(bufs), maxBindings)
	}
	var set vk.DescriptorSet
	try := func() vk.Result {
		if len(d.pools) == 0 {
			return vk.ErrorOutOfPoolMemory
		}
		info := &vk.DescriptorSetAllocateInfo{SType: vk.StructureTypeDescriptorSetAllocateInfo, DescriptorPool: d.pools[len(d.pools)-1], DescriptorSetCount: 1, PSetLayouts: []vk.DescriptorSetLayout{d.dsl}}
		defer info.Free()
		return vk.AllocateDescriptorSets(d.dev, info, &set)
	}
	if r := try(); r != vk.Success {
		pool, res := d.fns.descriptorPool(d.dev, setsPerPool, setsPerPool*maxBindings)
		if err := check(res, "descriptor pool"); err != nil {
			return nil, err
		}
		d.pools = append(d.pools, pool)
		if err := check(try(), "allocate descriptor set"); err != nil {
			return nil, err
		}
	}
	handles := make([]vk.Buffer, len(bufs))
	for i, b := range bufs {
		handles[i] = b.buf
	}
	d.fns.writeSet(d.dev, set, handles)
	if d.setPool == nil {
		d.setPool = map[vk.DescriptorSet]vk.DescriptorPool{}
	}
	d.setPool[set] = d.pools[len(d.pools)-1]
	return set, nil
}

// freeSets returns descriptor sets to their pools (a closed Runner's).
func (d *Device) freeSets(sets ...vk.DescriptorSet) {
	for _, s := range sets {
		if p, ok := d.setPool[s]; ok {
			vk.FreeDescriptorSets(d.dev, p, 1, &s)
			delete(d.setPool, s)
		}
	}
}

// cmd records work into a command buffer: the device's own, re-recorded
// for every pass, or a Recorded one kept for replay.
type cmd struct {
	d    *Device
	cb   vk.CommandBuffer
	sets []vk.DescriptorSet
	n    int // dispatches recorded
}

// Begin starts recording into the device's command buffer.
func (d *Device) Begin() (*cmd, error) { return d.begin(d.cmd, true) }

func (d *Device) begin(cb vk.CommandBuffer, once bool) (*cmd, error) {
	if err := check(vk.ResetCommandBuffer(cb, 0), "reset command buffer"); err != nil {
		return nil, err
	}
	var flags vk.CommandBufferUsageFlags
	if once {
		flags = vk.CommandBufferUsageFlags(vk.CommandBufferUsageOneTimeSubmitBit)
	}
	info := &vk.CommandBufferBeginInfo{SType: vk.StructureTypeCommandBufferBeginInfo, Flags: flags}
	defer info.Free()
	if err := check(vk.BeginCommandBuffer(cb, info), "begin command buffer"); err != nil {
		return nil, err
	}
	return &cmd{d: d, cb: cb, sets: make([]vk.DescriptorSet, 1)}, nil
}

// recorded is a command buffer recorded once and submitted many times (a
// decode step, whose varying position the shaders read from a buffer).
type recorded struct {
	d  *Device
	cb vk.CommandBuffer
	n  int // dispatches it holds
}

// record starts recording a command buffer for replay; End finishes it.
func (d *Device) record() (*cmd, error) {
	cbs := make([]vk.CommandBuffer, 1)
	if err := check(vk.AllocateCommandBuffers(d.dev, &vk.CommandBufferAllocateInfo{SType: vk.StructureTypeCommandBufferAllocateInfo, CommandPool: d.cmdPool, Level: vk.CommandBufferLevelPrimary, CommandBufferCount: 1}, cbs), "command buffer"); err != nil {
		return nil, err
	}
	c, err := d.begin(cbs[0], false)
	if err != nil {
		vk.FreeCommandBuffers(d.dev, d.cmdPool, 1, cbs)
	}
	return c, err
}

// end finishes a recording made by Record.
func (c *cmd) end() (*recorded, error) {
	if err := check(vk.EndCommandBuffer(c.cb), "end command buffer"); err != nil {
		vk.FreeCommandBuffers(c.d.dev, c.d.cmdPool, 1, []vk.CommandBuffer{c.cb})
		return nil, err
	}
	return &recorded{d: c.d, cb: c.cb, n: c.n}, nil
}

// run submits the recorded work and waits for it.
func (r *recorded) run() error { return r.d.run(r.cb) }

// free releases the command buffer.
func (r *recorded) free() {
	if r != nil && r.cb != nil {
		vk.FreeCommandBuffers(r.d.dev, r.d.cmdPool, 1, []vk.CommandBuffer{r.cb})
		r.cb = nil
	}
}

// dispatch records one compute dispatch followed by a barrier, so the next
// dispatch sees its writes.
func (c *cmd) dispatch(pipeline string, set vk.DescriptorSet, push []uint32, gx, gy, gz uint32) {
	p, ok := c.d.pipelines[pipeline]
	if !ok {
		panic("vulkan: no pipeline " + pipeline) // a programming error: names are fixed in this package
	}
	vk.CmdBindPipeline(c.cb, vk.PipelineBindPointCompute, p)
	c.sets[0] = set
	vk.CmdBindDescriptorSets(c.cb, vk.PipelineBindPointCompute, c.d.layout, 0, 1, c.sets, 0, nil)
	if len(push) > 0 {
		var words [pushWords]uint32
		copy(words[:], push)
		vk.CmdPushConstants(c.cb, c.d.layout, vk.ShaderStageFlags(vk.ShaderStageComputeBit), 0, pushWords*4, unsafe.Pointer(&words[0]))
	}
	vk.CmdDispatch(c.cb, max(gx, 1), max(gy, 1), max(gz, 1))
	c.barrier()
	c.n++
}

// barrier makes earlier shader and transfer writes visible to later work.
func (c *cmd) barrier() {
	c.d.fns.barrier(c.cb, vk.PipelineStageFlags(vk.PipelineStageComputeShaderBit|vk.PipelineStageTransferBit),
		vk.PipelineStageFlags(vk.PipelineStageComputeShaderBit|vk.PipelineStageTransferBit|vk.PipelineStageHostBit),
		vk.AccessFlags(vk.AccessShaderWriteBit|vk.AccessTransferWriteBit),
		vk.AccessFlags(vk.AccessShaderReadBit|vk.AccessShaderWriteBit|vk.AccessTransferReadBit|vk.AccessTransferWriteBit|vk.AccessHostReadBit))
}

// copy records a buffer-to-buffer copy of size bytes.
func (c *cmd) copy(src, dst *buffer, srcOff, dstOff, size int) {
	c.d.fns.copyBuffer(c.cb, src.buf, dst.buf, uint64(srcOff), uint64(dstOff), uint64(size))
	c.barrier()
}

// submit ends recording, runs the work and waits for it.
func (c *cmd) submit() error {
	if err := check(vk.EndCommandBuffer(c.cb), "end command buffer"); err != nil {
		return err
	}
	return c.d.run(c.cb)
}

// run submits a recorded command buffer and waits for it.
func (d *Device) run(cb vk.CommandBuffer) error {
	if err := check(d.fns.submit(d.queue, cb, d.fence), "submit"); err != nil {
		return err
	}
	fences := []vk.Fence{d.fence}
	if err := check(vk.WaitForFences(d.dev, 1, fences, vk.True, 60_000_000_000), "wait"); err != nil {
		return err
	}
	return check(vk.ResetFences(d.dev, 1, fences), "reset fence")
}
