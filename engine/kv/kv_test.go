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
	if c.BytesHeld() != 0 {
		t.Errorf("a new cache holds %d bytes; want 0 until Reserve", c.BytesHeld())
	}
	if err := c.Reserve(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Reserve(5); err == nil {
		t.Error("Reserve past capacity: want error")
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

func TestReserveGrowsAndKeepsRows(t *testing.T) {
	c, _ := New(1, 1000, 2)
	held := []int{}
	for pos := 0; pos < 1000; pos++ {
		if err := c.Reserve(pos + 1); err != nil {
			t.Fatal(err)
		}
		c.Put(0, pos, []float32{float32(pos), 1}, []float32{2, float32(-pos)})
		c.SetLen(pos + 1)
		if h := c.BytesHeld(); len(held) == 0 || held[len(held)-1] != h {
			held = append(held, h)
		}
	}
	// 16, 32, …, 512, then the capacity: geometric, never past it
	if want := []int{16 * 16, 32 * 16, 64 * 16, 128 * 16, 256 * 16, 512 * 16, 1000 * 16}; !slices.Equal(held, want) {
		t.Errorf("bytes held as the cache filled: %v, want %v", held, want)
	}
	for pos := 0; pos < 1000; pos++ {
		if k := c.Keys(0, 1000)[2*pos]; k != float32(pos) {
			t.Fatalf("key at %d is %v after growth", pos, k)
		}
	}
}
