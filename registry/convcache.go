package registry

import (
	"fmt"
	"slices"

	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
)

// DefaultConversionBudget is the bytes of weights the models converted in
// memory (NAME@TYPE) may hold together; past it the least recently used
// conversion is let go (sessions still running it keep it until they end).
const DefaultConversionBudget = 256 << 20

// conversion is one model converted in memory.
type conversion struct {
	ref    Ref // a file and the type it is converted to
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

func (c *convCache) get(ref Ref) *conversion {
	for i, x := range c.items {
		if x.ref == ref {
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
func (c *convCache) has(ref Ref) bool {
	return slices.ContainsFunc(c.items, func(x *conversion) bool { return x.ref == ref })
}

// conversion returns the model converted in memory, converting it once
// on first use, outside the lock. A conversion pushed out of the cache
// leaves the registry's maps with every engine prepared from it: sessions
// that hold one keep it, and the memory goes with them.
func (r *Registry) conversion(ref Ref) (*conversion, error) {
	ref = ref.Model()
	if c, ok := locked(&r.mu, func() (*conversion, bool) { c := r.convs.get(ref); return c, c != nil }); ok {
		return c, nil
	}
	v, err, _ := r.flights.Do("conversion "+ref.String(), func() (any, error) {
		m, err := r.get(ref.Stored())
		if err != nil {
			return nil, err
		}
		if err := fitsInMemory(ref.File, m); err != nil {
			return nil, err
		}
		qm, rep, bytes, err := quantize.InMemory(m.File, ref.Quant)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", ref, err)
		}
		c := &conversion{ref: ref, model: qm, report: rep, bytes: bytes}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, old := range r.convs.add(c) {
			r.forget(old.ref)
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*conversion), nil
}

// forget drops what the registry prepared from a conversion (its engines,
// its self-drafts', its draft checks); r.mu is held.
func (r *Registry) forget(ref Ref) {
	for key := range r.engines {
		if key.ref.Model() == ref {
			delete(r.engines, key)
		}
	}
	for key := range r.drafts {
		if key[0] == ref || key[1] == ref {
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
		names = append(names, c.ref.String())
	}
	return names, r.convs.used
}

// SetConversionBudget sets the bytes conversions may hold together.
func (r *Registry) SetConversionBudget(b int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.convs.budget = b
}
