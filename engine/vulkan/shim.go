//go:build cgo

package vulkan

/*
#cgo linux LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

// Our own loader: the binding's default opens libvulkan.so, which only the
// -dev package installs. Runtime systems have libvulkan.so.1.
static void *st_lib;
static void *st_gipa;
static char st_err[512];

static int st_load(const char *override) {
	const char *names[] = {"libvulkan.so.1", "libvulkan.so", NULL};
	const char *only[] = {override, NULL};
	const char **try = override[0] ? only : names; // an override is the only library tried
	for (int i = 0; try[i]; i++) {
		st_lib = dlopen(try[i], RTLD_NOW | RTLD_LOCAL);
		if (st_lib) break;
		snprintf(st_err, sizeof st_err, "%s", dlerror());
	}
	if (!st_lib) return -1;
	st_gipa = dlsym(st_lib, "vkGetInstanceProcAddr");
	if (!st_gipa) { snprintf(st_err, sizeof st_err, "libvulkan has no vkGetInstanceProcAddr"); return -2; }
	return 0;
}
static void *st_get_gipa(void) { return st_gipa; }
static const char *st_error(void) { return st_err; }

typedef void *(*gipa_fn)(void *instance, const char *name);

// vkGetPhysicalDeviceProperties2 with the subgroup and driver structs,
// which the binding's 1.1.88 headers do not wrap. Struct layouts follow the
// Vulkan specification.
typedef struct { uint32_t sType; void *pNext; uint32_t subgroupSize, supportedStages, supportedOperations, quadAll; } st_subgroup;
typedef struct { uint32_t sType; void *pNext; uint32_t driverID; char driverName[256]; char driverInfo[256]; uint8_t conformance[4]; } st_driver;
typedef struct { uint32_t sType; void *pNext; uint64_t properties[128]; } st_props2; // VkPhysicalDeviceProperties is 824 bytes

static int st_props(void *instance, void *phys, uint32_t *subgroup, uint32_t *ops, uint32_t *stages, char *driver, int driverLen) {
	void (*fn)(void *, st_props2 *) = (void (*)(void *, st_props2 *))((gipa_fn)st_gipa)(instance, "vkGetPhysicalDeviceProperties2");
	if (!fn) fn = (void (*)(void *, st_props2 *))((gipa_fn)st_gipa)(instance, "vkGetPhysicalDeviceProperties2KHR");
	if (!fn) return -1;
	st_driver drv; memset(&drv, 0, sizeof drv); drv.sType = 1000196000;
	st_subgroup sg; memset(&sg, 0, sizeof sg); sg.sType = 1000094000; sg.pNext = &drv;
	st_props2 p; memset(&p, 0, sizeof p); p.sType = 1000059001; p.pNext = &sg;
	fn(phys, &p);
	*subgroup = sg.subgroupSize;
	*ops = sg.supportedOperations;
	*stages = sg.supportedStages;
	snprintf(driver, driverLen, "%s %s", drv.driverName, drv.driverInfo);
	return 0;
}

// Validation messages: a debug-utils messenger counts errors and keeps the
// first one, so tests can fail on any.
typedef struct { uint32_t sType; const void *pNext; uint32_t flags; uint32_t severity; uint32_t types; void *callback; void *user; } st_messenger_info;
typedef struct { uint32_t sType; const void *pNext; uint32_t flags; const char *idName; int32_t idNumber; const char *message; } st_callback_data; // leading fields only
static int st_val_errors;
static char st_val_first[1024];
static uint32_t st_debug_cb(uint32_t severity, uint32_t types, const st_callback_data *data, void *user) {
	if (severity & 0x1000) { // ERROR
		if (st_val_errors++ == 0) snprintf(st_val_first, sizeof st_val_first, "%s", data->message);
	}
	return 0;
}
// One messenger per instance (a process may hold several devices: a
// model and its draft); the caller keeps the handle.
static void *st_install_messenger(void *instance) {
	int (*create)(void *, st_messenger_info *, void *, void **) =
		(int (*)(void *, st_messenger_info *, void *, void **))((gipa_fn)st_gipa)(instance, "vkCreateDebugUtilsMessengerEXT");
	if (!create) return NULL;
	st_messenger_info info; memset(&info, 0, sizeof info);
	info.sType = 1000128004; info.severity = 0x1000 | 0x100; info.types = 0x1 | 0x2 | 0x4; info.callback = (void *)st_debug_cb;
	void *m = NULL;
	if (create(instance, &info, NULL, &m) != 0) return NULL;
	return m;
}
static void st_remove_messenger(void *instance, void *m) {
	if (!m) return;
	void (*destroy)(void *, void *, void *) = (void (*)(void *, void *, void *))((gipa_fn)st_gipa)(instance, "vkDestroyDebugUtilsMessengerEXT");
	if (destroy) destroy(instance, m, NULL);
}
// The commands recorded for every dispatch and pass, called through our own
// function pointers with their structs on the C stack: the binding passes
// slices of structs in C memory that a finalizer may free while the call
// is still reading it (its unpackArg helpers set the finalizer on a
// variable nothing keeps alive), which the validation layer caught as a
// barrier with a garbage sType.
typedef struct { uint32_t sType; const void *pNext; uint32_t srcAccessMask, dstAccessMask; } st_memory_barrier;
typedef struct { uint64_t srcOffset, dstOffset, size; } st_buffer_copy;
typedef struct { uint32_t sType; const void *pNext; uint32_t waitSemaphoreCount; const void *pWaitSemaphores; const void *pWaitDstStageMask;
	uint32_t commandBufferCount; void *const *pCommandBuffers; uint32_t signalSemaphoreCount; const void *pSignalSemaphores; } st_submit_info;
typedef struct { void *buffer; uint64_t offset, range; } st_buffer_info;
typedef struct { uint32_t sType; const void *pNext; void *dstSet; uint32_t dstBinding, dstArrayElement, descriptorCount, descriptorType;
	const void *pImageInfo; const st_buffer_info *pBufferInfo; const void *pTexelBufferView; } st_write_set;
typedef struct { void *barrier, *copy, *submit, *update, *pipelines, *pool; } st_cmds;
typedef struct { uint32_t type, descriptorCount; } st_pool_size;
typedef struct { uint32_t sType; const void *pNext; uint32_t flags, maxSets, poolSizeCount; const st_pool_size *pPoolSizes; } st_pool_info;
// st_descriptor_pool makes a pool of storage-buffer descriptors whose sets
// can be freed one by one.
static int32_t st_descriptor_pool(st_cmds *c, void *device, uint32_t maxSets, uint32_t buffers, void **pool) {
	st_pool_size size = {7, buffers}; // VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
	st_pool_info info; memset(&info, 0, sizeof info);
	info.sType = 33; // VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
	info.flags = 1;  // VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT
	info.maxSets = maxSets; info.poolSizeCount = 1; info.pPoolSizes = &size;
	return ((int32_t (*)(void *, const st_pool_info *, const void *, void **))c->pool)(device, &info, NULL, pool);
}
typedef struct { uint32_t sType; const void *pNext; uint32_t flags; uint32_t stage; void *module; const char *pName; const void *pSpecializationInfo; } st_stage_info;
typedef struct { uint32_t sType; const void *pNext; uint32_t flags; st_stage_info stage; void *layout; void *basePipelineHandle; int32_t basePipelineIndex; } st_compute_info;
// st_create_compute builds a compute pipeline of one shader module (entry
// point "main"); lavapipe compiles the shader in this call, a long window.
static int32_t st_create_compute(st_cmds *c, void *device, void *layout, void *module, void **pipeline) {
	st_compute_info ci; memset(&ci, 0, sizeof ci);
	ci.sType = 29; // VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
	ci.stage.sType = 18; // VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
	ci.stage.stage = 0x20; // VK_SHADER_STAGE_COMPUTE_BIT
	ci.stage.module = module; ci.stage.pName = "main";
	ci.layout = layout; ci.basePipelineIndex = -1;
	return ((int32_t (*)(void *, void *, uint32_t, const st_compute_info *, const void *, void **))c->pipelines)(device, NULL, 1, &ci, NULL, pipeline);
}
static int st_load_cmds(void *instance, st_cmds *c) {
	c->barrier = ((gipa_fn)st_gipa)(instance, "vkCmdPipelineBarrier");
	c->copy = ((gipa_fn)st_gipa)(instance, "vkCmdCopyBuffer");
	c->submit = ((gipa_fn)st_gipa)(instance, "vkQueueSubmit");
	c->update = ((gipa_fn)st_gipa)(instance, "vkUpdateDescriptorSets");
	c->pipelines = ((gipa_fn)st_gipa)(instance, "vkCreateComputePipelines");
	c->pool = ((gipa_fn)st_gipa)(instance, "vkCreateDescriptorPool");
	return c->barrier && c->copy && c->submit && c->update && c->pipelines && c->pool ? 0 : -1;
}
// st_write_set binds n (at most 8) storage buffers to bindings 0..n-1 of set.
static void st_write_sets(st_cmds *c, void *device, void *set, void *const *bufs, uint32_t n) {
	st_buffer_info infos[8]; st_write_set writes[8];
	if (n > 8) n = 8;
	for (uint32_t i = 0; i < n; i++) {
		infos[i].buffer = bufs[i]; infos[i].offset = 0; infos[i].range = ~(uint64_t)0; // VK_WHOLE_SIZE
		memset(&writes[i], 0, sizeof writes[i]);
		writes[i].sType = 35; // VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
		writes[i].dstSet = set; writes[i].dstBinding = i; writes[i].descriptorCount = 1;
		writes[i].descriptorType = 7; // VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
		writes[i].pBufferInfo = &infos[i];
	}
	((void (*)(void *, uint32_t, const st_write_set *, uint32_t, const void *))c->update)(device, n, writes, 0, NULL);
}
static void st_barrier(st_cmds *c, void *cmd, uint32_t srcStage, uint32_t dstStage, uint32_t srcAccess, uint32_t dstAccess) {
	st_memory_barrier mb = {46, NULL, srcAccess, dstAccess}; // 46: VK_STRUCTURE_TYPE_MEMORY_BARRIER
	((void (*)(void *, uint32_t, uint32_t, uint32_t, uint32_t, const st_memory_barrier *, uint32_t, const void *, uint32_t, const void *))c->barrier)(
		cmd, srcStage, dstStage, 0, 1, &mb, 0, NULL, 0, NULL);
}
static void st_copy(st_cmds *c, void *cmd, void *src, void *dst, uint64_t srcOff, uint64_t dstOff, uint64_t size) {
	st_buffer_copy r = {srcOff, dstOff, size};
	((void (*)(void *, void *, void *, uint32_t, const st_buffer_copy *))c->copy)(cmd, src, dst, 1, &r);
}
static int32_t st_submit(st_cmds *c, void *queue, void *cmd, void *fence) {
	void *cmds[1] = {cmd};
	st_submit_info si; memset(&si, 0, sizeof si);
	si.sType = 4; // VK_STRUCTURE_TYPE_SUBMIT_INFO
	si.commandBufferCount = 1; si.pCommandBuffers = cmds;
	return ((int32_t (*)(void *, uint32_t, const st_submit_info *, void *))c->submit)(queue, 1, &si, fence);
}
static int st_validation_errors(void) { return st_val_errors; }
static const char *st_validation_first(void) { return st_val_first; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	vk "github.com/vulkan-go/vulkan"
)

var (
	loadOnce sync.Once
	loadErr  error
)

// load dlopens the Vulkan loader (libvulkan.so.1, else libvulkan.so; the
// STEPTHROUGH_VULKAN_LIB variable names another, which is then the only one
// tried) and initialises the binding's global functions.
func load() error {
	loadOnce.Do(func() {
		name := C.CString(os.Getenv("STEPTHROUGH_VULKAN_LIB"))
		defer C.free(unsafe.Pointer(name))
		if C.st_load(name) != 0 {
			loadErr = fmt.Errorf("no Vulkan loader: %s", C.GoString(C.st_error()))
			return
		}
		vk.SetGetInstanceProcAddr(C.st_get_gipa())
		if err := vk.Init(); err != nil {
			loadErr = fmt.Errorf("vulkan loader init: %w", err)
		}
	})
	return loadErr
}

// deviceExtraProps reads the subgroup size, whether compute shaders have
// subgroup arithmetic (subgroupAdd), and the driver's name.
func deviceExtraProps(inst vk.Instance, phys vk.PhysicalDevice) (subgroup uint32, arith bool, driver string, err error) {
	buf := make([]byte, 600)
	var sg, ops, stages C.uint32_t
	if C.st_props(unsafe.Pointer(inst), unsafe.Pointer(phys), &sg, &ops, &stages, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))) != 0 {
		return 0, false, "", errors.New("vkGetPhysicalDeviceProperties2 unavailable")
	}
	const arithmeticBit, computeBit = 0x4, 0x20 // VK_SUBGROUP_FEATURE_ARITHMETIC_BIT, VK_SHADER_STAGE_COMPUTE_BIT
	return uint32(sg), ops&arithmeticBit != 0 && stages&computeBit != 0, C.GoString((*C.char)(unsafe.Pointer(&buf[0]))), nil
}

// installMessenger counts the validation layer's errors for an instance;
// nil when the extension is missing.
func installMessenger(inst vk.Instance) unsafe.Pointer {
	return C.st_install_messenger(unsafe.Pointer(inst))
}

func removeMessenger(inst vk.Instance, m unsafe.Pointer) {
	C.st_remove_messenger(unsafe.Pointer(inst), m)
}

// ValidationErrors is the number of errors the Khronos validation layer has
// reported in this process, and the first message.
func ValidationErrors() (int, string) {
	return int(C.st_validation_errors()), C.GoString(C.st_validation_first())
}

// cmdFns are a device's recording calls through the shims above.
type cmdFns struct{ c C.st_cmds }

func loadCmdFns(inst vk.Instance) (*cmdFns, error) {
	f := new(cmdFns)
	if C.st_load_cmds(unsafe.Pointer(inst), &f.c) != 0 {
		return nil, errors.New("vkCmdPipelineBarrier, vkCmdCopyBuffer, vkQueueSubmit or vkUpdateDescriptorSets unavailable")
	}
	return f, nil
}

func (f *cmdFns) barrier(cmd vk.CommandBuffer, srcStage, dstStage vk.PipelineStageFlags, srcAccess, dstAccess vk.AccessFlags) {
	C.st_barrier(&f.c, unsafe.Pointer(cmd), C.uint32_t(srcStage), C.uint32_t(dstStage), C.uint32_t(srcAccess), C.uint32_t(dstAccess))
}

func (f *cmdFns) copyBuffer(cmd vk.CommandBuffer, src, dst vk.Buffer, srcOff, dstOff, size uint64) {
	C.st_copy(&f.c, unsafe.Pointer(cmd), unsafe.Pointer(src), unsafe.Pointer(dst), C.uint64_t(srcOff), C.uint64_t(dstOff), C.uint64_t(size))
}

func (f *cmdFns) submit(q vk.Queue, cmd vk.CommandBuffer, fence vk.Fence) vk.Result {
	return vk.Result(C.st_submit(&f.c, unsafe.Pointer(q), unsafe.Pointer(cmd), unsafe.Pointer(fence)))
}

// writeSet binds bufs (at most maxBindings) to bindings 0, 1, … of set.
func (f *cmdFns) writeSet(dev vk.Device, set vk.DescriptorSet, bufs []vk.Buffer) {
	var ptrs [maxBindings]unsafe.Pointer
	for i, b := range bufs {
		ptrs[i] = unsafe.Pointer(b)
	}
	C.st_write_sets(&f.c, unsafe.Pointer(dev), unsafe.Pointer(set), &ptrs[0], C.uint32_t(len(bufs)))
}

// computePipeline creates the compute pipeline of a shader module.
func (f *cmdFns) computePipeline(dev vk.Device, layout vk.PipelineLayout, mod vk.ShaderModule) (vk.Pipeline, vk.Result) {
	var p unsafe.Pointer
	r := vk.Result(C.st_create_compute(&f.c, unsafe.Pointer(dev), unsafe.Pointer(layout), unsafe.Pointer(mod), &p))
	return *(*vk.Pipeline)(unsafe.Pointer(&p)), r
}

// descriptorPool makes a pool of maxSets sets of storage buffers.
func (f *cmdFns) descriptorPool(dev vk.Device, maxSets, buffers int) (vk.DescriptorPool, vk.Result) {
	var p unsafe.Pointer
	r := vk.Result(C.st_descriptor_pool(&f.c, unsafe.Pointer(dev), C.uint32_t(maxSets), C.uint32_t(buffers), &p))
	return *(*vk.DescriptorPool)(unsafe.Pointer(&p)), r
}
