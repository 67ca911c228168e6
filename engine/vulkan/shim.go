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

static int st_props(void *instance, void *phys, uint32_t *subgroup, char *driver, int driverLen) {
	void (*fn)(void *, st_props2 *) = (void (*)(void *, st_props2 *))((gipa_fn)st_gipa)(instance, "vkGetPhysicalDeviceProperties2");
	if (!fn) fn = (void (*)(void *, st_props2 *))((gipa_fn)st_gipa)(instance, "vkGetPhysicalDeviceProperties2KHR");
	if (!fn) return -1;
	st_driver drv; memset(&drv, 0, sizeof drv); drv.sType = 1000196000;
	st_subgroup sg; memset(&sg, 0, sizeof sg); sg.sType = 1000094000; sg.pNext = &drv;
	st_props2 p; memset(&p, 0, sizeof p); p.sType = 1000059001; p.pNext = &sg;
	fn(phys, &p);
	*subgroup = sg.subgroupSize;
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
static void *st_messenger;
static int st_install_messenger(void *instance) {
	int (*create)(void *, st_messenger_info *, void *, void **) =
		(int (*)(void *, st_messenger_info *, void *, void **))((gipa_fn)st_gipa)(instance, "vkCreateDebugUtilsMessengerEXT");
	if (!create) return -1;
	st_messenger_info info; memset(&info, 0, sizeof info);
	info.sType = 1000128004; info.severity = 0x1000 | 0x100; info.types = 0x1 | 0x2 | 0x4; info.callback = (void *)st_debug_cb;
	return create(instance, &info, NULL, &st_messenger);
}
static void st_remove_messenger(void *instance) {
	if (!st_messenger) return;
	void (*destroy)(void *, void *, void *) = (void (*)(void *, void *, void *))((gipa_fn)st_gipa)(instance, "vkDestroyDebugUtilsMessengerEXT");
	if (destroy) destroy(instance, st_messenger, NULL);
	st_messenger = NULL;
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

func deviceExtraProps(inst vk.Instance, phys vk.PhysicalDevice) (subgroup uint32, driver string, err error) {
	buf := make([]byte, 600)
	var sg C.uint32_t
	if C.st_props(unsafe.Pointer(inst), unsafe.Pointer(phys), &sg, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))) != 0 {
		return 0, "", errors.New("vkGetPhysicalDeviceProperties2 unavailable")
	}
	return uint32(sg), C.GoString((*C.char)(unsafe.Pointer(&buf[0]))), nil
}

func installMessenger(inst vk.Instance) bool {
	return C.st_install_messenger(unsafe.Pointer(inst)) == 0
}

func removeMessenger(inst vk.Instance) { C.st_remove_messenger(unsafe.Pointer(inst)) }

// ValidationErrors is the number of errors the Khronos validation layer has
// reported in this process, and the first message.
func ValidationErrors() (int, string) {
	return int(C.st_validation_errors()), C.GoString(C.st_validation_first())
}
