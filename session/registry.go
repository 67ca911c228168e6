package session

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
)

// Registry offers every .gguf file in the model directories by file name,
// loading each on first use and sharing it (models are read-only), and
// prepares each model once per backend (engine.Load) for every session
// that runs it.
type Registry struct {
	mu       sync.Mutex
	paths    map[string]string
	embedded map[string][]byte
	loaded   map[string]*model.Model
	engines  map[string]*engine.Loaded // by model name and requested backend
}

// NewRegistry scans dirs (missing ones are skipped).
func NewRegistry(dirs []string) *Registry {
	r := &Registry{paths: map[string]string{}, embedded: map[string][]byte{}, loaded: map[string]*model.Model{}, engines: map[string]*engine.Loaded{}}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, "*.gguf"))
		for _, f := range files {
			name := filepath.Base(f)
			if _, dup := r.paths[name]; !dup {
				r.paths[name] = f
			}
		}
	}
	return r
}

// AddEmbedded offers a model compiled into the binary, unless a file of
// the same name was found on disk (a freshly trained one wins).
func (r *Registry) AddEmbedded(name string, data []byte) {
	if _, ok := r.paths[name]; !ok && len(data) > 0 {
		r.embedded[name] = data
	}
}

// Names lists the offered models, sorted.
func (r *Registry) Names() []string {
	var n []string
	for k := range r.paths {
		n = append(n, k)
	}
	for k := range r.embedded {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Default is the model a new session uses: lesson.gguf when present, else
// the first by name.
func (r *Registry) Default() string {
	if _, ok := r.paths["lesson.gguf"]; ok {
		return "lesson.gguf"
	}
	if _, ok := r.embedded["lesson.gguf"]; ok {
		return "lesson.gguf"
	}
	if n := r.Names(); len(n) > 0 {
		return n[0]
	}
	return ""
}

// Get loads (once) and returns a model by file name.
func (r *Registry) Get(name string) (*model.Model, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.get(name)
}

// Engine returns the model prepared on a backend ("auto", "cpu" or
// "vulkan"), loading it once: every session of that model and backend
// shares its weights (and, on Vulkan, its device).
func (r *Registry) Engine(name, backend string) (*engine.Loaded, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := name + "|" + backend
	if l, ok := r.engines[key]; ok {
		return l, nil
	}
	m, err := r.get(name)
	if err != nil {
		return nil, err
	}
	l, err := engine.Load(m, engine.Options{Backend: backend, Context: min(m.Config.ContextLen, maxContext)})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	r.engines[key] = l
	return l, nil
}

// maxContext caps the KV-cache positions of a web session.
const maxContext = 1024

func (r *Registry) get(name string) (*model.Model, error) {
	if m, ok := r.loaded[name]; ok {
		return m, nil
	}
	if data, ok := r.embedded[name]; ok {
		f, err := gguf.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("embedded model %s: %w", name, err)
		}
		m, err := model.FromFile(f)
		if err != nil {
			return nil, fmt.Errorf("embedded model %s: %w", name, err)
		}
		r.loaded[name] = m
		return m, nil
	}
	p, ok := r.paths[name]
	if !ok || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("no model named %q (offered: %s)", name, strings.Join(r.Names(), ", "))
	}
	m, err := model.Load(p)
	if err != nil {
		return nil, fmt.Errorf("model %s failed to load: %w", name, err)
	}
	r.loaded[name] = m
	return m, nil
}

// Close releases loaded models.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.engines {
		l.Close()
	}
	r.engines = map[string]*engine.Loaded{}
	for _, m := range r.loaded {
		m.Close()
	}
	r.loaded = map[string]*model.Model{}
}
