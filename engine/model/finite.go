package model

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"stepthrough/engine/quant"
)

// A weight that is NaN or infinite makes every logit NaN (a norm of an
// infinite row is infinite, and ∞/∞ is NaN): the model would load, then
// answer nothing a page can draw. Load refuses such a file, naming the
// first tensor and element, so the error comes where the cause is.

// halfScales is where each block type keeps its float16 scales: the byte
// offsets of the float16 fields within a block. The quantized values
// themselves are small integers and cannot be non-finite; a block's
// dequantized values are finite whenever its scales are (a float16 times
// an int of at most 8 bits stays far inside float32).
var halfScales = map[quant.Type][]int{
	quant.Q4_0: {0},
	quant.Q4_1: {0, 2},
	quant.Q5_0: {0},
	quant.Q5_1: {0, 2},
	quant.Q8_0: {0},
	quant.Q4_K: {0, 2},
	quant.Q5_K: {0, 2},
	quant.Q6_K: {208},
}

// checkFinite refuses weights holding a NaN or an infinity, naming the
// first such tensor (in file order) and the element. The tensors are read
// in parallel; a file of a few hundred MB takes a fraction of a second.
func checkFinite(ts []*Tensor) error {
	errs := make([]error, len(ts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(ts)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = finiteTensor(ts[i])
			}
		})
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// finiteTensor checks one tensor's floats (every element of a float type,
// the scales of a block type).
func finiteTensor(t *Tensor) error {
	bad := func(elem int, what string) error {
		return fmt.Errorf("tensor %s holds %s at element %d: the model's weights are damaged (a model with non-finite weights computes NaN logits)", t.Name, what, elem)
	}
	d := t.Data
	switch t.Type {
	case quant.F32:
		for i := 0; i+4 <= len(d); i += 4 {
			if u := binary.LittleEndian.Uint32(d[i:]); u&0x7f800000 == 0x7f800000 {
				return bad(i/4, nonFinite(u&0x007fffff != 0))
			}
		}
	case quant.F16:
		return finiteHalves(d, 2, []int{0}, func(i int) error { return bad(i, nonFinite(halfIsNaN(d[2*i:]))) }, 0x7c00)
	case quant.BF16:
		return finiteHalves(d, 2, []int{0}, func(i int) error { return bad(i, nonFinite(bf16IsNaN(d[2*i:]))) }, 0x7f80)
	default:
		offs, ok := halfScales[t.Type]
		if !ok {
			return nil
		}
		bb, be := t.Type.BlockBytes(), t.Type.BlockElems()
		return finiteHalves(d, bb, offs, func(b int) error { return bad(b*be, "a non-finite block scale") }, 0x7c00)
	}
	return nil
}

// finiteHalves checks the 16-bit floats at offsets offs of every stride
// bytes of d, whose exponent bits are mask (all ones: NaN or infinity);
// bad is told the index of the first stride that holds one.
func finiteHalves(d []byte, stride int, offs []int, bad func(int) error, mask uint16) error {
	for i := 0; i+stride <= len(d); i += stride {
		for _, o := range offs {
			if binary.LittleEndian.Uint16(d[i+o:])&mask == mask {
				return bad(i / stride)
			}
		}
	}
	return nil
}

func halfIsNaN(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x03ff != 0 }
func bf16IsNaN(b []byte) bool { return binary.LittleEndian.Uint16(b)&0x007f != 0 }

func nonFinite(nan bool) string {
	if nan {
		return "a NaN"
	}
	return "an infinity"
}
