package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/spec"
)

// BenchmarkExplorerSessions measures what an Explorer tab costs the
// server: 50 sessions on the lesson model, each having run a prompt with
// every hook recording (as the Explorer does), held at once. It reports
// the heap in use per session and the goroutines each one keeps.
//
//	go test -run '^$' -bench ExplorerSessions -benchtime 1x ./server
func BenchmarkExplorerSessions(b *testing.B) {
	const n = 50
	for range b.N {
		reg := registry.New([]string{"../models"})
		run := spec.Default("lesson.gguf")
		run.Prompt, run.Backend, run.Sampler.Seed, run.Sampler.SeedSet = "The capital of France is", "cpu", 1, true
		warm := session.New("warm", "c", reg) // the model itself, loaded once, is not a session's cost
		if err := warm.Run(context.Background(), run); err != nil {
			b.Fatal(err)
		}
		before, gBefore := heapInUse(), runtime.NumGoroutine()
		var sessions []*session.Session
		for i := range n {
			s := session.New(fmt.Sprint(i), "c", reg)
			if err := s.Run(context.Background(), run); err != nil {
				b.Fatal(err)
			}
			sessions = append(sessions, s)
		}
		after, gAfter := heapInUse(), runtime.NumGoroutine()
		b.ReportMetric(float64(after-before)/n/1024, "KiB/session")
		b.ReportMetric(float64(gAfter-gBefore)/n, "goroutines/session")
		for _, s := range sessions {
			s.Close()
		}
		warm.Close()
		reg.Close()
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
