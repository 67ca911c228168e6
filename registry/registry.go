// Package registry offers the models a server runs: every .gguf file in
// its folders, the files added by name (the Hugging Face cache's) and the
// embedded ones, each loaded once and shared, each
// converted to another type in memory once (NAME@TYPE), and each
// prepared once per backend (engine.Load) for every session that runs
// it. Models are named by a typed Ref.
package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
	"stepthrough/engine/speculative"
)

// Registry offers every .gguf file in the model directories by file name
// and the files added by a name of their own (AddFile), and NAME@TYPE,
// that model converted to TYPE in memory by package quantize, loading
// each on first use and sharing it (models are read-only), and prepares
// each model once per backend (engine.Load) for every session that runs
// it.
//
// The lock guards the maps only: loads, conversions and backend uploads
// run outside it, once per key (a singleflight group), so a slow one
// blocks only the sessions waiting for that same model.
type Registry struct {
	flights   singleflight.Group
	mu        sync.Mutex
	paths     map[string]string
	embedded  map[string][]byte
	loaded    map[string]*model.Model      // by file name
	engines   map[engineKey]*engine.Loaded // by model and requested backend
	drafts    map[[2]Ref]error             // a draft file's check against a target
	convs     convCache                    // models converted in memory (NAME@TYPE)
	summaries map[string]summaryAnswer     // Summary's answers, by name
}

// engineKey is a model prepared on a backend as it was asked for ("auto"
// and "cpu" are two keys even when auto chose the CPU).
type engineKey struct {
	ref     Ref
	backend string
}

// Quantized is a model converted to another type in memory.
type Quantized struct {
	Loaded *engine.Loaded
	Report *quantize.Report
	Bytes  int64 // the weights' bytes
}

// MaxQuantizeBytes bounds the models the web app converts in memory (a
// larger one: quantize it with the command and offer the files).
const MaxQuantizeBytes = 64 << 20

// fitsInMemory refuses to convert a model larger than MaxQuantizeBytes.
func fitsInMemory(name string, m *model.Model) error {
	var size uint64
	for _, t := range m.File.Tensors {
		size += t.Size
	}
	if size > MaxQuantizeBytes {
		return fmt.Errorf("%s has %d MiB of weights; the web app converts models up to %d MiB in memory: run stepthrough quantize and open the files", name, size>>20, MaxQuantizeBytes>>20)
	}
	return nil
}

// Quantize returns the model converted to target in memory, once (CPU):
// the same conversion that the name NAME@TYPE opens.
func (r *Registry) Quantize(name, target string) (*Quantized, error) {
	ref, err := r.ref(name + "@" + target)
	if err != nil {
		return nil, err
	}
	c, err := r.conversion(ref)
	if err != nil {
		return nil, err
	}
	l, err := r.engine(ref, "cpu")
	if err != nil {
		return nil, err
	}
	return &Quantized{Loaded: l, Report: c.report, Bytes: c.bytes}, nil
}

// New scans dirs (missing ones are skipped).
func New(dirs []string) *Registry {
	r := &Registry{paths: map[string]string{}, embedded: map[string][]byte{}, loaded: map[string]*model.Model{},
		engines: map[engineKey]*engine.Loaded{}, drafts: map[[2]Ref]error{}, convs: convCache{budget: DefaultConversionBudget}}
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

// AddFile offers a model file under a name of its own (the Hugging Face
// cache's ORG/REPO:QUANT), unless a model of that name is offered
// already. A name is looked up, never made into a path.
// It may be called while serving (the Models page's pulls).
func (r *Registry) AddFile(name, path string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.paths[name]; ok || name == "" {
		return
	}
	if _, ok := r.embedded[name]; !ok {
		r.paths[name] = path
	}
}

// RemoveFile stops offering a file added by AddFile under name (its file
// deleted): a session that loaded it keeps its weights, a new one is told
// there is no such model. It reports whether name was offered by a path.
func (r *Registry) RemoveFile(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.paths[name]; !ok {
		return false
	}
	delete(r.paths, name)
	delete(r.loaded, name)
	delete(r.summaries, name)
	return true
}

// Path is the file an offered model is read from; embedded reports a
// model compiled into the binary (path ""); ok is false for a name not
// offered.
func (r *Registry) Path(name string) (path string, embedded, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, found := r.paths[name]; found {
		return p, false, true
	}
	_, embedded = r.embedded[name]
	return "", embedded, embedded
}

// FileSize is an offered model's bytes: its file's, or the embedded
// copy's; false when it cannot be told.
func (r *Registry) FileSize(name string) (int64, bool) {
	if data, ok := r.embedded[name]; ok { // set before serving: read without the lock
		return int64(len(data)), true
	}
	p, _, ok := r.Path(name)
	if !ok {
		return 0, false
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, false
	}
	return st.Size(), true
}

// Names lists the offered models, sorted.
func (r *Registry) Names() []string {
	var n []string
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.paths {
		n = append(n, k)
	}
	for k := range r.embedded {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Label describes an offered model for a picker, from its header alone
// ("qwen3 · 596.05 M parameters · Q4_K · context 40960"); "" when the
// file cannot be read.
func (r *Registry) Label(name string) string {
	if s, ok := r.Summary(name); ok {
		return s.String()
	}
	return ""
}

// Summary reads an offered model's header (family, size, type, context);
// false when the file cannot be read. Answers are kept: a folder of
// downloads is read once.
func (r *Registry) Summary(name string) (model.Summary, bool) {
	if a, ok := locked(&r.mu, func() (summaryAnswer, bool) { a, ok := r.summaries[name]; return a, ok }); ok {
		return a.s, a.ok
	}
	var f *gguf.File
	var err error
	if data, ok := r.embedded[name]; ok {
		f, err = gguf.Parse(data)
	} else if p, _, ok := r.Path(name); ok {
		f, err = gguf.Open(p)
	} else {
		return model.Summary{}, false
	}
	a := summaryAnswer{}
	if err == nil {
		a = summaryAnswer{model.Summarize(f), true}
		f.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.summaries == nil {
		r.summaries = map[string]summaryAnswer{}
	}
	r.summaries[name] = a
	return a.s, a.ok
}

// summaryAnswer is a file's summary, or that it could not be read.
type summaryAnswer struct {
	s  model.Summary
	ok bool
}

// Default is the model a new session uses: lesson.gguf when present, else
// the first by name.
func (r *Registry) Default() string {
	if _, _, ok := r.Path("lesson.gguf"); ok {
		return "lesson.gguf"
	}
	if n := r.Names(); len(n) > 0 {
		return n[0]
	}
	return ""
}

// ref parses a model reference for a whole model (a file or a
// conversion; a self-draft only through Draft).
func (r *Registry) ref(name string) (Ref, error) {
	ref, err := ParseRef(name)
	if err == nil && ref.SelfLayers > 0 {
		err = fmt.Errorf("model %.80q: %s names a draft's layers; choose a model file", name, speculative.SelfPrefix+"N")
	}
	return ref, err
}

// Resolve returns the canonical form of a model name the registry offers:
// a file's name, or NAME@TYPE for an offered NAME and a known TYPE.
func (r *Registry) Resolve(name string) (string, error) {
	ref, err := r.ref(name)
	if err != nil {
		return "", err
	}
	if !slices.Contains(r.Names(), ref.File) {
		return "", fmt.Errorf("no model named %.80q (offered: %s)", ref.File, strings.Join(r.Names(), ", "))
	}
	return ref.String(), nil
}

// Get loads (once) and returns a model by name.
func (r *Registry) Get(name string) (*model.Model, error) {
	ref, err := r.ref(name)
	if err != nil {
		return nil, err
	}
	return r.get(ref)
}

// Engine returns the model prepared on a backend ("auto", "cpu" or
// "vulkan"), loading it once: every session of that model and backend
// shares its weights (and, on Vulkan, its device).
func (r *Registry) Engine(name, backend string) (*engine.Loaded, error) {
	ref, err := r.ref(name)
	if err != nil {
		return nil, err
	}
	return r.engine(ref, backend)
}

// engine is Engine for a parsed whole model.
func (r *Registry) engine(ref Ref, backend string) (*engine.Loaded, error) {
	return r.prepare(engineKey{ref, backend}, func() (*engine.Loaded, error) {
		m, err := r.get(ref)
		if err != nil {
			return nil, err
		}
		l, err := engine.Load(m, engine.Options{Backend: backend, Context: min(m.Config.ContextLen, maxContext)})
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", ref, err)
		}
		return l, nil
	})
}

// prepare returns the engine kept under key, or runs load once (outside
// the lock; callers of the same key wait for it) and keeps what it gives,
// unless the conversion it came from was let go meanwhile.
func (r *Registry) prepare(key engineKey, load func() (*engine.Loaded, error)) (*engine.Loaded, error) {
	if l, ok := locked(&r.mu, func() (*engine.Loaded, bool) { l, ok := r.engines[key]; return l, ok }); ok {
		return l, nil
	}
	v, err, _ := r.flights.Do("engine "+key.ref.String()+" on "+key.backend, func() (any, error) {
		l, err := load()
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if key.ref.Quant == "" || r.convs.has(key.ref.Model()) {
			r.engines[key] = l
		}
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*engine.Loaded), nil
}

// Draft returns the draft model for a target, prepared on a backend and
// shared like Engine's: "self:N" is the target's own first N layers
// (sharing its weights), any other name a model, refused unless it has
// the target's vocabulary.
func (r *Registry) Draft(target, draft, backend string) (*engine.Loaded, error) {
	t, err := r.ref(target)
	if err != nil {
		return nil, err
	}
	d, err := ParseRef(draft)
	if err != nil {
		return nil, err
	}
	if d.File != "" && d.SelfLayers > 0 {
		return nil, fmt.Errorf("draft %.80q: write self:N alone: it is made from the target", draft)
	}
	if d.SelfLayers == 0 {
		if err := r.checkDraft(t, d); err != nil {
			return nil, err
		}
		return r.engine(d, backend)
	}
	d = d.On(t)
	return r.prepare(engineKey{d, backend}, func() (*engine.Loaded, error) {
		tm, err := r.get(t)
		if err != nil {
			return nil, err
		}
		dm, err := tm.FirstLayers(d.SelfLayers)
		if err != nil {
			return nil, fmt.Errorf("draft %s: %w", draft, err)
		}
		l, err := engine.Load(dm, engine.Options{Backend: backend, Context: min(dm.Config.ContextLen, maxContext)})
		if err != nil {
			return nil, fmt.Errorf("draft %s: %w", draft, err)
		}
		return l, nil
	})
}

// checkDraft compares a draft's vocabulary with the target's, once.
func (r *Registry) checkDraft(target, draft Ref) error {
	key := [2]Ref{target, draft}
	if err, ok := locked(&r.mu, func() (error, bool) { err, ok := r.drafts[key]; return err, ok }); ok {
		return err
	}
	tm, err := r.get(target)
	if err != nil {
		return err
	}
	dm, err := r.get(draft)
	if err != nil {
		return fmt.Errorf("draft: %w", err)
	}
	if err = speculative.SameVocabulary(tm.Tokenizer, dm.Tokenizer); err != nil {
		err = fmt.Errorf("draft %s for %s: %w", draft, target, err)
	}
	locked(&r.mu, func() (error, bool) { r.drafts[key] = err; return err, true })
	return err
}

// maxContext caps the KV-cache positions of a web session.
const maxContext = 1024

// get returns a whole model, loading (or converting) it once, outside the
// lock.
func (r *Registry) get(ref Ref) (*model.Model, error) {
	if ref.Quant != "" {
		c, err := r.conversion(ref)
		if err != nil {
			return nil, err
		}
		return c.model, nil
	}
	name := ref.File
	if m, ok := locked(&r.mu, func() (*model.Model, bool) { m, ok := r.loaded[name]; return m, ok }); ok {
		return m, nil
	}
	data, embedded := r.embedded[name] // set before serving: read without the lock
	p, _, onDisk := r.Path(name)
	if !embedded && !onDisk {
		return nil, fmt.Errorf("no model named %.80q (offered: %s)", name, strings.Join(r.Names(), ", "))
	}
	v, err, _ := r.flights.Do("model "+name, func() (any, error) {
		m, err := loadModel(name, data, embedded, p)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.loaded[name] = m
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*model.Model), nil
}

// locked runs f holding mu (a map lookup or store, never slow work).
func locked[T any](mu *sync.Mutex, f func() (T, bool)) (T, bool) {
	mu.Lock()
	defer mu.Unlock()
	return f()
}

// LoadError is an offered model that failed to load (a broken file). Its
// message names the model by its name, never by its path on the server:
// web and API users read it. Path is for the server's log.
type LoadError struct {
	Name, Path string
	Err        error
}

func (e *LoadError) Error() string {
	msg := e.Err.Error()
	if e.Path != "" {
		msg = strings.ReplaceAll(msg, e.Path, e.Name)
	}
	return fmt.Sprintf("model %s failed to load: %s", e.Name, msg)
}

func (e *LoadError) Unwrap() error { return e.Err }

// loadModel parses an embedded model or loads a file.
func loadModel(name string, data []byte, embedded bool, path string) (*model.Model, error) {
	if !embedded {
		m, err := model.Load(path)
		if err != nil {
			return nil, &LoadError{Name: name, Path: path, Err: err}
		}
		return m, nil
	}
	f, err := gguf.ParseAligned(data)
	if err != nil {
		return nil, &LoadError{Name: name, Err: err}
	}
	m, err := model.FromFile(f)
	if err != nil {
		return nil, &LoadError{Name: name, Err: err}
	}
	return m, nil
}

// Close releases loaded models.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.engines {
		l.Close()
	}
	r.engines = map[engineKey]*engine.Loaded{}
	r.convs.clear()
	for _, m := range r.loaded {
		m.Close()
	}
	r.loaded = map[string]*model.Model{}
}
