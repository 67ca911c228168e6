package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"
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
		reg := NewRegistry([]string{"../models"})
		set := defaultSettings("lesson.gguf")
		set.Prompt, set.Backend, set.Seed = "The capital of France is", "cpu", "1"
		warm := newSession("warm", "c", reg) // the model itself, loaded once, is not a session's cost
		warm.run(context.Background(), set)
		if warm.err != "" {
			b.Fatal(warm.err)
		}
		before, gBefore := heapInUse(), runtime.NumGoroutine()
		var sessions []*Session
		for i := range n {
			s := newSession(fmt.Sprint(i), "c", reg)
			s.run(context.Background(), set)
			if s.err != "" {
				b.Fatal(s.err)
			}
			sessions = append(sessions, s)
		}
		after, gAfter := heapInUse(), runtime.NumGoroutine()
		b.ReportMetric(float64(after-before)/n/1024, "KiB/session")
		b.ReportMetric(float64(gAfter-gBefore)/n, "goroutines/session")
		for _, s := range sessions {
			s.close()
		}
		warm.close()
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
