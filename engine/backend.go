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
	// Kernels is the CPU's vector level in use (cpu.Level), for a CPU
	// backend.
	Kernels string `json:"kernels,omitempty"`
}

func (b BackendInfo) String() string {
	if b.Device != nil {
		return "vulkan: " + b.Device.String()
	}
	s := fmt.Sprintf("cpu: %d threads (%s/%s)", b.Threads, runtime.GOOS, runtime.GOARCH)
	if b.Kernels != "" { // the vector level, so a status line says what a figure was measured with
		s += ", kernels " + b.Kernels
	}
	return s
}

// Backends are the names accepted by Options.Backend.
var Backends = []string{"auto", "cpu", "vulkan"}

// Loaded is one model prepared once on one backend — on the CPU its
// decoded vectors, thread pool and activation buffers; on Vulkan its
// device, uploaded weights and activation buffers — and shared by every
// Session made from it. A session holds only its KV cache (and what its
// caller keeps: a sampler, a trace), so making one copies no weights.
// Passes of one Loaded's sessions take turns; sessions may live on
// different goroutines.
type Loaded struct {
	Model *model.Model
	info  BackendInfo
	cpu   *cpu.Loaded
	vk    *vulkan.Loaded
}

// Load prepares m on the backend opt.Backend asks for, for sessions of at
// most opt.Context positions (0: the model's, at most 2048). "auto" (or
// "") uses a discrete or integrated GPU through Vulkan when one exists and
// the CPU otherwise; "vulkan" also accepts a CPU-type Vulkan device (Mesa
// lavapipe), which auto leaves out because the Go CPU path is faster
// there. When Vulkan cannot run (no loader, no driver, an unsupported
// device, a build without cgo) the CPU runs instead and the BackendInfo's
// Note says why: the app never fails to start for lack of a GPU.
func Load(m *model.Model, opt Options) (*Loaded, error) {
	if opt.Threads < 0 {
		return nil, fmt.Errorf("threads %d: want 0 (one per core) or more", opt.Threads)
	}
	var note string
	switch opt.Backend {
	case "", "auto", "vulkan":
		explicit := opt.Backend == "vulkan"
		d, err := vulkan.Open(vulkan.Options{AllowCPU: explicit, Validation: os.Getenv("STEPTHROUGH_VK_VALIDATION") == "1"})
		if err == nil {
			vl, lerr := vulkan.Load(d, m, opt.Context)
			if lerr == nil {
				vl.Own()
				info := d.Info
				return &Loaded{Model: m, vk: vl, info: BackendInfo{Name: "vulkan", Device: &info}}, nil
			}
			d.Close()
			err = lerr
		}
		if explicit {
			note = fmt.Sprintf("vulkan unavailable (%v); using the CPU", err)
		} else {
			note = fmt.Sprintf("no GPU through Vulkan (%v); using the CPU", err)
		}
	case "cpu":
	default:
		return nil, fmt.Errorf("unknown backend %q (allowed: auto, cpu, vulkan)", opt.Backend)
	}
	cl, err := cpu.Load(m, cpu.Options{Threads: opt.Threads, Context: opt.Context, MaxBatch: opt.MaxBatch})
	if err != nil {
		return nil, err
	}
	return &Loaded{Model: m, cpu: cl, info: BackendInfo{Name: "cpu", Threads: cl.Threads(), Note: note, Kernels: cpu.Level()}}, nil
}

// Backend says what computes this model's passes.
func (l *Loaded) Backend() BackendInfo { return l.info }

// Context is the most positions one of l's sessions may hold.
func (l *Loaded) Context() int {
	if l.vk != nil {
		return l.vk.Context()
	}
	return l.cpu.Context()
}

// Close releases the backend (the device, on Vulkan). Sessions made from
// l must be closed first.
func (l *Loaded) Close() {
	if l.vk != nil {
		l.vk.Close()
	} else {
		l.cpu.Close()
	}
}

// NewBackend makes the state of one sequence on l: an empty KV cache of
// ctx positions (0: the most l allows).
func (l *Loaded) NewBackend(ctx int) (Backend, error) {
	if l.vk != nil {
		r, err := l.vk.NewRunner(ctx)
		if err != nil {
			return nil, err
		}
		return vkBackend{r}, nil
	}
	r, err := l.cpu.NewRunner(ctx)
	if err != nil {
		return nil, err
	}
	return cpuBackend{r}, nil
}

// NewSession starts an empty session on l with a KV cache of ctx
// positions (0: the most l allows).
func (l *Loaded) NewSession(ctx int) (*Session, error) {
	b, err := l.NewBackend(ctx)
	if err != nil {
		return nil, err
	}
	return &Session{Model: l.Model, backend: b, info: l.info}, nil
}

// NewBackend loads m for one backend alone (Load and Loaded.NewBackend in
// one); closing the backend releases the model's backend resources too.
func NewBackend(m *model.Model, opt Options) (Backend, BackendInfo, error) {
	l, err := Load(m, opt)
	if err != nil {
		return nil, BackendInfo{}, err
	}
	b, err := l.NewBackend(0)
	if err != nil {
		l.Close()
		return nil, BackendInfo{}, err
	}
	return owned{b, l}, l.info, nil
}

// owned is a backend that closes its own Loaded model.
type owned struct {
	Backend
	l *Loaded
}

func (o owned) Close() { o.Backend.Close(); o.l.Close() }

// cpuBackend and vkBackend adapt the runners to Backend.
type cpuBackend struct{ *cpu.Runner }

func (b cpuBackend) Fork() (Backend, error) {
	r, err := b.Runner.Fork()
	if err != nil {
		return nil, err
	}
	return cpuBackend{r}, nil
}

func (b cpuBackend) CopyFrom(src Backend) error {
	s, ok := unwrap(src).(cpuBackend)
	if !ok {
		return fmt.Errorf("copy state: a %T cannot take a %T's cache", b, src)
	}
	return b.CopyStateFrom(s.Runner)
}

type vkBackend struct{ *vulkan.Runner }

func (b vkBackend) Fork() (Backend, error) {
	r, err := b.Runner.Fork()
	if err != nil {
		return nil, err
	}
	return vkBackend{r}, nil
}

func (b vkBackend) CopyFrom(src Backend) error {
	s, ok := unwrap(src).(vkBackend)
	if !ok {
		return fmt.Errorf("copy state: a %T cannot take a %T's cache", b, src)
	}
	return b.CopyStateFrom(s.Runner)
}

func unwrap(b Backend) Backend {
	if o, ok := b.(owned); ok {
		return o.Backend
	}
	return b
}
