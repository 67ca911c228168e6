package hooks

import (
	"context"
	"reflect"
	"testing"
)

// WithHooks composes every callback: each field of two sets, both set,
// calls both (a field compose forgot would call one or none).
func TestComposeCoversEveryField(t *testing.T) {
	calls := map[string]int{}
	set := func() *Hooks {
		h := &Hooks{}
		v := reflect.ValueOf(h).Elem()
		for i := range v.NumField() {
			f, name := v.Field(i), v.Type().Field(i).Name
			if f.Kind() != reflect.Func { // LensRows: TestComposeLensRows
				continue
			}
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { calls[name]++; return nil }))
		}
		return h
	}
	h := From(WithHooks(WithHooks(context.Background(), set()), set()))
	v := reflect.ValueOf(h).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		if f.Kind() != reflect.Func {
			continue
		}
		if f.IsNil() {
			t.Errorf("%s: nil after composing", name)
			continue
		}
		f.Call([]reflect.Value{reflect.Zero(f.Type().In(0))})
		if calls[name] != 2 {
			t.Errorf("%s: %d of 2 callbacks called", name, calls[name])
		}
	}
}

// Two sets of hooks ask the lens for the rows the more demanding wants:
// every row (0) above any count; a set without a lens asks nothing.
func TestComposeLensRows(t *testing.T) {
	lens := func(Lens) {}
	for _, tc := range []struct {
		name string
		a, b Hooks
		want int
	}{
		{"both count rows", Hooks{OnLens: lens, LensRows: 4}, Hooks{OnLens: lens, LensRows: 64}, 64},
		{"one wants every row", Hooks{OnLens: lens, LensRows: 4}, Hooks{OnLens: lens}, 0},
		{"only the first has a lens", Hooks{OnLens: lens, LensRows: 4}, Hooks{LensRows: 99}, 4},
		{"only the second has a lens", Hooks{}, Hooks{OnLens: lens, LensRows: 8}, 8},
	} {
		h := From(WithHooks(WithHooks(context.Background(), &tc.b), &tc.a))
		if h.LensRows != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.name, h.LensRows, tc.want)
		}
	}
}
