package cpu

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"stepthrough/engine/kv"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// A Loaded outlives its runners (a registry keeps it for every session):
// once a runner is dropped, its KV cache is garbage, whether its last
// pass ran alone or in a batch.
func TestDroppedRunnersCachesAreFreed(t *testing.T) {
	m := synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32})
	l, err := Load(m, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		pass func(rs []*Runner) error
	}{
		{"forward", func(rs []*Runner) error { _, err := rs[0].Forward(ctx, []int32{1, 2, 3}, false); return err }},
		{"forward batch", func(rs []*Runner) error {
			return l.ForwardBatch(ctx, []Seq{{Runner: rs[0], Tokens: []int32{1, 2}}, {Runner: rs[1], Tokens: []int32{3}}}, make([][]float32, 2))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			caches := make([]weak.Pointer[kv.Cache], 2)
			func() {
				rs := make([]*Runner, 2)
				for i := range rs {
					if rs[i], err = l.NewRunner(16); err != nil {
						t.Fatal(err)
					}
					caches[i] = weak.Make(rs[i].cache.(*kv.Cache))
				}
				if err := tt.pass(rs); err != nil {
					t.Fatal(err)
				}
			}()
			runtime.GC()
			for i, c := range caches {
				if c.Value() != nil {
					t.Errorf("runner %d's KV cache is still reachable after the runner was dropped", i)
				}
			}
		})
	}
	runtime.KeepAlive(l)
}
