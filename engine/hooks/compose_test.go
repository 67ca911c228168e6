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
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { calls[name]++; return nil }))
		}
		return h
	}
	h := From(WithHooks(WithHooks(context.Background(), set()), set()))
	v := reflect.ValueOf(h).Elem()
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
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
