package kv

import (
	"slices"
	"testing"
)

func TestCache(t *testing.T) {
	c, err := New(2, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Put(1, 0, []float32{1, 2, 3}, []float32{4, 5, 6})
	c.Put(1, 1, []float32{7, 8, 9}, []float32{1, 1, 1})
	c.SetLen(2)
	if got := c.Keys(1, 2); !slices.Equal(got, []float32{1, 2, 3, 7, 8, 9}) {
		t.Errorf("keys %v", got)
	}
	if c.BytesUsed() != 2*2*3*8 || c.BytesAllocated() != 4*2*3*8 {
		t.Errorf("bytes %d / %d", c.BytesUsed(), c.BytesAllocated())
	}
	d, _ := New(2, 4, 3)
	if err := d.CopyFrom(c, 2); err != nil || !slices.Equal(d.Values(1, 2), c.Values(1, 2)) || d.Len() != 2 {
		t.Errorf("copy: %v", err)
	}
	c.Truncate(1)
	if c.Len() != 1 {
		t.Errorf("len after truncate %d", c.Len())
	}
	if err := d.CopyFrom(c, 2); err == nil {
		t.Error("copying more positions than the source holds: want error")
	}
	for _, bad := range [][3]int{{0, 1, 1}, {1, 0, 1}, {1000, 1 << 20, 4096}} {
		if _, err := New(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("New%v: want error", bad)
		}
	}
}
