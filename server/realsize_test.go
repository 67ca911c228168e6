package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/spec"
)

// BenchmarkExplorerAtRealSize measures the Explorer on real models'
// shapes in Q8_0 (random weights, model.Shapes): Qwen3-0.6B's 151,936-token
// vocabulary and gemma-3-270m's 262,144. For each: the first fragment
// after Run (time and bytes), then every Step through a token's stages
// and the next token's (each the action and the fragment the page gets, as
// the Explorer's socket sends it): their p95 and slowest time, the largest
// fragment, and the process's resident memory beside the file's size.
// Budgets (#65): a Step's p95 ≤ 150 ms, any fragment ≤ 300 KB, RSS ≤ the
// file + 300 MB.
//
//	go test -run '^$' -bench ExplorerAtRealSize -benchtime 1x ./server
func BenchmarkExplorerAtRealSize(b *testing.B) {
	for _, shape := range []string{"qwen3-0.6b", "gemma3-270m"} {
		b.Run(shape, func(b *testing.B) {
			o := model.Shapes[shape]
			o.Type, o.Name, o.Context = quant.Q8_0, shape, 2048
			dir := b.TempDir()
			w, err := model.Synthesize(o)
			if err != nil {
				b.Fatal(err)
			}
			file := filepath.Join(dir, shape+".gguf")
			if err := w.WriteFile(file); err != nil {
				b.Fatal(err)
			}
			w = nil
			debug.FreeOSMemory()
			st, err := os.Stat(file)
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				realSizeRound(b, dir, filepath.Base(file), st.Size())
			}
		})
	}
}

func realSizeRound(b *testing.B, dir, name string, fileBytes int64) {
	ctx := context.Background()
	reg := registry.New([]string{dir})
	defer reg.Close()
	se := session.New("realsize", "c", reg)
	defer se.Close()
	run := spec.Default(name)
	run.Prompt, run.Backend, run.MaxTokens = "The capital of France is", "cpu", 4
	run.Sampler.Seed, run.Sampler.SeedSet = 1, true
	drawn := ""
	start := time.Now()
	if err := se.Run(ctx, run); err != nil {
		b.Fatal(err)
	}
	first := explorerFragment(ctx, se, nil, &drawn)
	firstDur := time.Since(start)
	var steps []time.Duration
	largest := len(first)
	none := spec.Getter(func(string) (string, bool) { return "", false })
	for range 200 {
		t := time.Now()
		if err := se.Act(ctx, session.ActionStep, none); err != nil {
			b.Fatal(err)
		}
		frag := explorerFragment(ctx, se, nil, &drawn)
		steps = append(steps, time.Since(t))
		largest = max(largest, len(frag))
		c := se.Snapshot().Cursor
		if step, _ := c.Position(); step >= 2 { // through a token's stages and into the next
			break
		}
	}
	slices.Sort(steps)
	p95 := steps[(len(steps)*95+99)/100-1]
	rss := residentBytes(b)
	b.ReportMetric(float64(firstDur.Milliseconds()), "first-ms")
	b.ReportMetric(float64(len(first))/1024, "first-KB")
	b.ReportMetric(float64(p95.Microseconds())/1000, "step-p95-ms")
	b.ReportMetric(float64(steps[len(steps)-1].Microseconds())/1000, "step-max-ms")
	b.ReportMetric(float64(largest)/1024, "largest-KB")
	b.ReportMetric(float64(rss-fileBytes)/(1<<20), "RSS-over-file-MB")
	b.Logf("%s: %d steps; file %.0f MB, RSS %.0f MB", name, len(steps), float64(fileBytes)/(1<<20), float64(rss)/(1<<20))
}

// residentBytes is the process's resident set (VmRSS), Linux only.
func residentBytes(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status: resident memory is measured on Linux")
	}
	for _, line := range strings.Split(string(s), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(fmt.Errorf("VmRSS %q: %w", f[1], err))
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS line")
	return 0
}
