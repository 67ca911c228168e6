package engine

import (
	"fmt"
	"os"
	"runtime"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
	"stepthrough/engine/vulkan"
)

// BackendInfo says what computes a session's forward passes.
type BackendInfo struct {
	Name    string       `json:"name"` // "cpu" or "vulkan"
	Threads int          `json:"threads,omitempty"`
	Device  *vulkan.Info `json:"device,omitempty"`
	// Note explains a fallback to the CPU (one line), empty otherwise.
	Note string `json:"note,omitempty"`
}

func (b BackendInfo) String() string {
	if b.Device != nil {
		return "vulkan: " + b.Device.String()
	}
	return fmt.Sprintf("cpu: %d threads (%s/%s)", b.Threads, runtime.GOOS, runtime.GOARCH)
}

// Backends are the names accepted by Options.Backend.
var Backends = []string{"auto", "cpu", "vulkan"}

// NewBackend builds the backend opt.Backend asks for. "auto" uses a
// discrete or integrated GPU through Vulkan when one exists and the CPU
// otherwise; "vulkan" also accepts a CPU-type Vulkan device (Mesa
// lavapipe), which auto leaves out because the Go CPU path is faster there.
// When Vulkan cannot run (no loader, no driver, an unsupported device, a
// build without cgo) the CPU runs instead and Note says why: the app never
// fails to start for lack of a GPU.
func NewBackend(m *model.Model, opt Options) (Backend, BackendInfo, error) {
	var note string
	switch opt.Backend {
	case "", "auto", "vulkan":
		explicit := opt.Backend == "vulkan"
		d, err := vulkan.Open(vulkan.Options{AllowCPU: explicit, Validation: os.Getenv("STEPTHROUGH_VK_VALIDATION") == "1"})
		if err == nil {
			r, rerr := vulkan.NewOwnedRunner(d, m, opt.Context)
			if rerr == nil {
				info := d.Info
				return r, BackendInfo{Name: "vulkan", Device: &info}, nil
			}
			d.Close()
			err = rerr
		}
		if explicit {
			note = fmt.Sprintf("vulkan unavailable (%v); using the CPU", err)
		} else {
			note = fmt.Sprintf("no GPU through Vulkan (%v); using the CPU", err)
		}
	case "cpu":
	default:
		return nil, BackendInfo{}, fmt.Errorf("unknown backend %q (allowed: auto, cpu, vulkan)", opt.Backend)
	}
	r, err := cpu.NewRunner(m, cpu.Options{Threads: opt.Threads, Context: opt.Context})
	if err != nil {
		return nil, BackendInfo{}, err
	}
	return r, BackendInfo{Name: "cpu", Threads: r.Threads(), Note: note}, nil
}
