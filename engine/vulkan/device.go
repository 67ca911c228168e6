//go:build cgo

package vulkan

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"
)

//go:embed shaders/spv/*.spv
var spirv embed.FS

// maxBindings is the number of storage buffers every pipeline's single
// descriptor-set layout declares; pushWords the push-constant words.
const (
	maxBindings = 8
	pushWords   = 16
)

// Options choose and configure a device.
type Options struct {
	// AllowCPU permits a CPU-type device (Mesa lavapipe). Automatic choice
	// leaves it out: the Go CPU backend is faster there.
	AllowCPU bool
	// Validation enables the Khronos validation layer (when installed) and
	// counts its errors (see ValidationErrors).
	Validation bool
	// forceStaging uses device-local buffers with staging copies even when
	// host-visible device memory exists: the discrete-GPU path, testable on
	// lavapipe.
	forceStaging bool
}

// Info describes the device that runs.
type Info struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // discrete, integrated, virtual, cpu, other
	Driver   string `json:"driver"`
	API      string `json:"api"`
	Subgroup uint32 `json:"subgroup_size"`
	// SubgroupArith reports subgroup arithmetic in compute shaders, which
	// the fused path's matrix products reduce with.
	SubgroupArith bool   `json:"subgroup_arithmetic"`
	MemoryMiB     uint64 `json:"memory_mib"` // largest device-local heap
	Unified       bool   `json:"unified_memory"`
	Validation    bool   `json:"validation"`
}

func (i Info) String() string {
	return fmt.Sprintf("%s (%s; driver %s; Vulkan %s; subgroup %d; %d MiB)", i.Name, i.Type, strings.TrimSpace(i.Driver), i.API, i.Subgroup, i.MemoryMiB)
}

// Device is an open Vulkan Device with the engine's pipelines.
type Device struct {
	Info Info

	inst vk.Instance
	fns  *cmdFns // recording calls through our own shims (see shim.go)
	// messenger counts validation errors (nil without validation)
	messenger unsafe.Pointer
	phys      vk.PhysicalDevice
	dev       vk.Device
	queue     vk.Queue
	family    uint32
	memProps  vk.PhysicalDeviceMemoryProperties
	mapped    bool // buffers live in host-visible device memory and stay mapped

	dsl       vk.DescriptorSetLayout
	layout    vk.PipelineLayout
	pipelines map[string]vk.Pipeline
	modules   []vk.ShaderModule
	cmdPool   vk.CommandPool
	cmd       vk.CommandBuffer
	fence     vk.Fence
	staging   *buffer
	pools     []vk.DescriptorPool
	setPool   map[vk.DescriptorSet]vk.DescriptorPool // the pool each live set came from
	pinner    runtime.Pinner
}

func check(r vk.Result, what string) error {
	if r != vk.Success {
		return fmt.Errorf("vulkan: %s: %w", what, vk.Error(r))
	}
	return nil
}

func cstr(s string) string { return s + "\x00" }

var deviceTypeNames = map[vk.PhysicalDeviceType]string{
	vk.PhysicalDeviceTypeDiscreteGpu:   "discrete",
	vk.PhysicalDeviceTypeIntegratedGpu: "integrated",
	vk.PhysicalDeviceTypeVirtualGpu:    "virtual",
	vk.PhysicalDeviceTypeCpu:           "cpu",
}

// errNoDevice means no usable device was found (not a failure of one).
var errNoDevice = errors.New("no suitable Vulkan device")

// Open loads Vulkan, picks a device and builds the pipelines. Preference:
// discrete, integrated, virtual, then (only with AllowCPU) a CPU device.
func Open(opt Options) (*Device, error) {
	// the binding hands the driver C copies of create-info slices that a
	// finalizer frees once a collection finds them unreachable — possibly
	// mid-call; no collection runs while the device is set up (the long
	// calls, pipeline builds, go through shim.go instead)
	defer pauseGC()()
	if os.Getenv("XDG_RUNTIME_DIR") == "" {
		os.Setenv("XDG_RUNTIME_DIR", os.TempDir()) // lavapipe's loader warns otherwise
	}
	if err := load(); err != nil {
		return nil, err
	}
	d := &Device{pipelines: map[string]vk.Pipeline{}}
	layers, exts := []string{}, []string{}
	if opt.Validation && hasLayer("VK_LAYER_KHRONOS_validation") {
		layers = append(layers, cstr("VK_LAYER_KHRONOS_validation"))
		exts = append(exts, cstr("VK_EXT_debug_utils"))
		d.Info.Validation = true
	}
	app := &vk.ApplicationInfo{SType: vk.StructureTypeApplicationInfo, PApplicationName: cstr("stepthrough"), PEngineName: cstr("stepthrough"), ApiVersion: vk.MakeVersion(1, 1, 0)}
	ici := &vk.InstanceCreateInfo{SType: vk.StructureTypeInstanceCreateInfo, PApplicationInfo: app,
		EnabledLayerCount: uint32(len(layers)), PpEnabledLayerNames: layers, EnabledExtensionCount: uint32(len(exts)), PpEnabledExtensionNames: exts}
	var inst vk.Instance
	if err := check(vk.CreateInstance(ici, nil, &inst), "create instance"); err != nil {
		return nil, err
	}
	d.inst = inst
	if err := vk.InitInstance(inst); err != nil {
		d.Close()
		return nil, err
	}
	fns, err := loadCmdFns(inst)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.fns = fns
	if d.Info.Validation {
		d.messenger = installMessenger(inst)
	}
	if err := d.pick(opt); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.init(opt); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func hasLayer(name string) bool {
	if load() != nil {
		return false
	}
	var n uint32
	vk.EnumerateInstanceLayerProperties(&n, nil)
	props := make([]vk.LayerProperties, n)
	vk.EnumerateInstanceLayerProperties(&n, props)
	for _, p := range props {
		p.Deref()
		if vk.ToString(p.LayerName[:]) == name {
			return true
		}
	}
	return false
}

// Devices lists the physical devices Vulkan reports, for messages.
func (d *Device) devices() ([]vk.PhysicalDevice, error) {
	var n uint32
	if err := check(vk.EnumeratePhysicalDevices(d.inst, &n, nil), "enumerate devices"); err != nil {
		return nil, err
	}
	devs := make([]vk.PhysicalDevice, n)
	if n > 0 {
		if err := check(vk.EnumeratePhysicalDevices(d.inst, &n, devs), "enumerate devices"); err != nil {
			return nil, err
		}
	}
	return devs, nil
}

func (d *Device) pick(opt Options) error {
	devs, err := d.devices()
	if err != nil {
		return err
	}
	rank := map[vk.PhysicalDeviceType]int{vk.PhysicalDeviceTypeDiscreteGpu: 4, vk.PhysicalDeviceTypeIntegratedGpu: 3, vk.PhysicalDeviceTypeVirtualGpu: 2, vk.PhysicalDeviceTypeCpu: 1}
	best, bestRank := -1, 0
	var seen []string
	for i, p := range devs {
		var props vk.PhysicalDeviceProperties
		vk.GetPhysicalDeviceProperties(p, &props)
		props.Deref()
		seen = append(seen, fmt.Sprintf("%s (%s)", vk.ToString(props.DeviceName[:]), deviceTypeNames[props.DeviceType]))
		r := rank[props.DeviceType]
		if props.DeviceType == vk.PhysicalDeviceTypeCpu && !opt.AllowCPU {
			continue
		}
		if props.ApiVersion < vk.MakeVersion(1, 1, 0) {
			continue
		}
		if _, ok := computeFamily(p); !ok {
			continue
		}
		if r > bestRank {
			best, bestRank = i, r
		}
	}
	if best < 0 {
		if len(seen) == 0 {
			return fmt.Errorf("%w: the Vulkan loader reports no devices", errNoDevice)
		}
		return fmt.Errorf("%w: found %s (a CPU device is used only when asked for explicitly)", errNoDevice, strings.Join(seen, ", "))
	}
	d.phys = devs[best]
	var props vk.PhysicalDeviceProperties
	vk.GetPhysicalDeviceProperties(d.phys, &props)
	props.Deref()
	d.Info.Name = vk.ToString(props.DeviceName[:])
	d.Info.Type = deviceTypeNames[props.DeviceType]
	if d.Info.Type == "" {
		d.Info.Type = "other"
	}
	v := props.ApiVersion
	d.Info.API = fmt.Sprintf("%d.%d.%d", v>>22, (v>>12)&0x3ff, v&0xfff)
	d.Info.Subgroup, d.Info.SubgroupArith, d.Info.Driver, _ = deviceExtraProps(d.inst, d.phys)
	vk.GetPhysicalDeviceMemoryProperties(d.phys, &d.memProps)
	d.memProps.Deref()
	for i := uint32(0); i < d.memProps.MemoryHeapCount; i++ {
		h := d.memProps.MemoryHeaps[i]
		h.Deref()
		if vk.MemoryHeapFlagBits(h.Flags)&vk.MemoryHeapDeviceLocalBit != 0 {
			d.Info.MemoryMiB = max(d.Info.MemoryMiB, uint64(h.Size)>>20)
		}
	}
	return nil
}

func computeFamily(p vk.PhysicalDevice) (uint32, bool) {
	var n uint32
	vk.GetPhysicalDeviceQueueFamilyProperties(p, &n, nil)
	fams := make([]vk.QueueFamilyProperties, n)
	vk.GetPhysicalDeviceQueueFamilyProperties(p, &n, fams)
	for i, f := range fams {
		f.Deref()
		if vk.QueueFlagBits(f.QueueFlags)&vk.QueueComputeBit != 0 {
			return uint32(i), true
		}
	}
	return 0, false
}

func (d *Device) init(opt Options) error {
	d.family, _ = computeFamily(d.phys)
	qci := []vk.DeviceQueueCreateInfo{{SType: vk.StructureTypeDeviceQueueCreateInfo, QueueFamilyIndex: d.family, QueueCount: 1, PQueuePriorities: []float32{1}}}
	dci := &vk.DeviceCreateInfo{SType: vk.StructureTypeDeviceCreateInfo, QueueCreateInfoCount: 1, PQueueCreateInfos: qci}
	var dev vk.Device
	if err := check(vk.CreateDevice(d.phys, dci, nil, &dev), "create device"); err != nil {
		return err
	}
	d.dev = dev
	var q vk.Queue
	vk.GetDeviceQueue(d.dev, d.family, 0, &q)
	d.queue = q
	_, d.mapped = d.memoryType(vk.MemoryPropertyDeviceLocalBit | vk.MemoryPropertyHostVisibleBit | vk.MemoryPropertyHostCoherentBit)
	d.mapped = d.mapped && !opt.forceStaging
	d.Info.Unified = d.mapped

	bindings := make([]vk.DescriptorSetLayoutBinding, maxBindings)
	for i := range bindings {
		bindings[i] = vk.DescriptorSetLayoutBinding{Binding: uint32(i), DescriptorType: vk.DescriptorTypeStorageBuffer, DescriptorCount: 1, StageFlags: vk.ShaderStageFlags(vk.ShaderStageComputeBit)}
	}
	var dsl vk.DescriptorSetLayout
	if err := check(vk.CreateDescriptorSetLayout(d.dev, &vk.DescriptorSetLayoutCreateInfo{SType: vk.StructureTypeDescriptorSetLayoutCreateInfo, BindingCount: maxBindings, PBindings: bindings}, nil, &dsl), "descriptor set layout"); err != nil {
		return err
	}
	d.dsl = dsl
	var layout vk.PipelineLayout
	pcr := []vk.PushConstantRange{{StageFlags: vk.ShaderStageFlags(vk.ShaderStageComputeBit), Size: pushWords * 4}}
	if err := check(vk.CreatePipelineLayout(d.dev, &vk.PipelineLayoutCreateInfo{SType: vk.StructureTypePipelineLayoutCreateInfo, SetLayoutCount: 1, PSetLayouts: []vk.DescriptorSetLayout{d.dsl}, PushConstantRangeCount: 1, PPushConstantRanges: pcr}, nil, &layout), "pipeline layout"); err != nil {
		return err
	}
	d.layout = layout
	if err := d.buildPipelines(); err != nil {
		return err
	}
	var pool vk.CommandPool
	if err := check(vk.CreateCommandPool(d.dev, &vk.CommandPoolCreateInfo{SType: vk.StructureTypeCommandPoolCreateInfo, Flags: vk.CommandPoolCreateFlags(vk.CommandPoolCreateResetCommandBufferBit), QueueFamilyIndex: d.family}, nil, &pool), "command pool"); err != nil {
		return err
	}
	d.cmdPool = pool
	cmds := make([]vk.CommandBuffer, 1)
	if err := check(vk.AllocateCommandBuffers(d.dev, &vk.CommandBufferAllocateInfo{SType: vk.StructureTypeCommandBufferAllocateInfo, CommandPool: d.cmdPool, Level: vk.CommandBufferLevelPrimary, CommandBufferCount: 1}, cmds), "command buffer"); err != nil {
		return err
	}
	d.cmd = cmds[0]
	var fence vk.Fence
	if err := check(vk.CreateFence(d.dev, &vk.FenceCreateInfo{SType: vk.StructureTypeFenceCreateInfo}, nil, &fence), "fence"); err != nil {
		return err
	}
	d.fence = fence
	return nil
}

func (d *Device) buildPipelines() error {
	entries, err := spirv.ReadDir("shaders/spv")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := spirv.ReadFile("shaders/spv/" + e.Name())
		if err != nil {
			return err
		}
		code := make([]uint32, len(b)/4) // embedded bytes are not 4-byte aligned
		for i := range code {
			code[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
		}
		var mod vk.ShaderModule
		if err := check(vk.CreateShaderModule(d.dev, &vk.ShaderModuleCreateInfo{SType: vk.StructureTypeShaderModuleCreateInfo, CodeSize: uint(len(b)), PCode: code}, nil, &mod), "shader "+e.Name()); err != nil {
			return err
		}
		d.modules = append(d.modules, mod)
		pipe, res := d.fns.computePipeline(d.dev, d.layout, mod)
		if err := check(res, "pipeline "+e.Name()); err != nil {
			return err
		}
		d.pipelines[strings.TrimSuffix(e.Name(), ".spv")] = pipe
	}
	return nil
}

func (d *Device) memoryType(flags vk.MemoryPropertyFlagBits) (uint32, bool) {
	for i := uint32(0); i < d.memProps.MemoryTypeCount; i++ {
		mt := d.memProps.MemoryTypes[i]
		mt.Deref()
		if vk.MemoryPropertyFlagBits(mt.PropertyFlags)&flags == flags {
			return i, true
		}
	}
	return 0, false
}

// Close releases everything.
func (d *Device) Close() {
	if d.dev != nil {
		vk.DeviceWaitIdle(d.dev)
		if d.staging != nil {
			d.staging.free()
		}
		for _, p := range d.pools {
			vk.DestroyDescriptorPool(d.dev, p, nil)
		}
		for _, p := range d.pipelines {
			vk.DestroyPipeline(d.dev, p, nil)
		}
		for _, m := range d.modules {
			vk.DestroyShaderModule(d.dev, m, nil)
		}
		if d.fence != nil {
			vk.DestroyFence(d.dev, d.fence, nil)
		}
		if d.cmdPool != nil {
			vk.DestroyCommandPool(d.dev, d.cmdPool, nil)
		}
		vk.DestroyPipelineLayout(d.dev, d.layout, nil)
		vk.DestroyDescriptorSetLayout(d.dev, d.dsl, nil)
		vk.DestroyDevice(d.dev, nil)
		d.dev = nil
	}
	if d.inst != nil {
		if d.Info.Validation {
			removeMessenger(d.inst, d.messenger)
		}
		vk.DestroyInstance(d.inst, nil)
		d.inst = nil
	}
	d.pinner.Unpin()
}

var _ = unsafe.Pointer(nil)

// gcPause counts the callers holding the collector off.
var gcPause struct {
	sync.Mutex
	n, prev int
}

// pauseGC holds the garbage collector off until the returned function is
// called (nested and concurrent holds are counted).
func pauseGC() (resume func()) {
	holdGC()
	return releaseGC
}

func holdGC() {
	gcPause.Lock()
	defer gcPause.Unlock()
	if gcPause.n == 0 {
		gcPause.prev = debug.SetGCPercent(-1)
	}
	gcPause.n++
}

func releaseGC() {
	gcPause.Lock()
	defer gcPause.Unlock()
	if gcPause.n--; gcPause.n == 0 {
		debug.SetGCPercent(gcPause.prev)
	}
}
