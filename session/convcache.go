package session

import (
	"fmt"
	"slices"
	"strings"

	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
)

// DefaultConversionBudget is the bytes of weights the models converted in
// memory (NAME@TYPE) may hold together; past it the least recently used
// conversion is let go (sessions still running it keep it until they end).
const DefaultConversionBudget = 256 << 20

// canonicalName is a model name as the registry keys it: NAME@TYPE with
// the type parsed and written one way ("lesson.gguf@ f16" and
// "lesson.gguf@F16" are one conversion); any other name as it is.
func canonicalName(name string) (string, error) {
	base, target, ok := strings.Cut(name, "@")
	if !ok {
		return name, nil
	}
	if strings.Contains(target, "@") {
		return "", fmt.Errorf("model %.80q: a converted model (NAME@TYPE) cannot be converted again", name)
	}
	t, err := quantize.ParseTarget(target)
	if err != nil {
		return "", fmt.Errorf("model %.80q: %w", name, err)
	}
	return base + "@" + t, nil
}

// Resolve returns the canonical form of a model name the registry offers:
// a file's name, or NAME@TYPE for an offered NAME and a known TYPE.
func (r *Registry) Resolve(name string) (string, error) {
	c, err := canonicalName(name)
	if err != nil {
		return "", err
	}
	base, _, _ := strings.Cut(c, "@")
	if !slices.Contains(r.Names(), base) {
		return "", fmt.Errorf("no model named %.80q (offered: %s)", base, strings.Join(r.Names(), ", "))
	}
	return c, nil
}

// conversion is one model converted in memory.
type conversion struct {
	name   string // canonical: base@TYPE
	model  *model.Model
	report *quantize.Report
	bytes  int64 // the converted weights
}

// convCache holds conversions, most recently used last, within budget
// bytes (one larger than the budget is kept alone).
type convCache struct {
	budget int64
	items  []*conversion
	used   int64
}

func (c *convCache) get(name string) *conversion {
	for i, x := range c.items {
		if x.name == name {
			c.items = append(append(c.items[:i:i], c.items[i+1:]...), x)
			return x
		}
	}
	return nil
}

// add keeps x and returns the conversions it pushed out.
func (c *convCache) add(x *conversion) []*conversion {
	var out []*conversion
	for len(c.items) > 0 && c.used+x.bytes > c.budget {
		out = append(out, c.items[0])
		c.used -= c.items[0].bytes
		c.items = c.items[1:]
	}
	c.items = append(c.items, x)
	c.used += x.bytes
	return out
}

func (c *convCache) clear() { c.items, c.used = nil, 0 }

// has reports whether a conversion is kept (without touching its place).
func (c *convCache) has(name string) bool {
	return slices.ContainsFunc(c.items, func(x *conversion) bool { return x.name == name })
}

// conversion returns the model base@TYPE converted in memory, converting
// it once on first use, outside the lock. A conversion pushed out of the
// cache leaves the registry's maps with every engine prepared from it:
// sessions that hold one keep it, and the memory goes with them.
func (r *Registry) conversion(name string) (*conversion, error) {
	name, err := canonicalName(name)
	if err != nil {
		return nil, err
	}
	if c, ok := locked(&r.mu, func() (*conversion, bool) { c := r.convs.get(name); return c, c != nil }); ok {
		return c, nil
	}
	v, err, _ := r.flights.Do("conversion "+name, func() (any, error) {
		base, target, _ := strings.Cut(name, "@")
		m, err := r.get(base)
		if err != nil {
			return nil, err
		}
		if err := fitsInMemory(base, m); err != nil {
			return nil, err
		}
		qm, rep, bytes, err := quantize.InMemory(m.File, target)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		c := &conversion{name: name, model: qm, report: rep, bytes: bytes}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, old := range r.convs.add(c) {
			r.forget(old.name)
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*conversion), nil
}

// forget drops what the registry prepared from a model name; r.mu is
// held.
func (r *Registry) forget(name string) {
	for key := range r.engines {
		n, _, _ := strings.Cut(key, "|")
		if n, _, _ = strings.Cut(n, "#"); n == name { // a self-draft's key is target#self:N|backend
			delete(r.engines, key)
		}
	}
	for key := range r.drafts {
		t, d, _ := strings.Cut(key, "|")
		if t == name || d == name {
			delete(r.drafts, key)
		}
	}
}

// Conversions reports the models converted in memory and their bytes
// (for tests and the memory figures).
func (r *Registry) Conversions() (names []string, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.convs.items {
		names = append(names, c.name)
	}
	return names, r.convs.used
}

// SetConversionBudget sets the bytes conversions may hold together.
func (r *Registry) SetConversionBudget(b int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.convs.budget = b
}
