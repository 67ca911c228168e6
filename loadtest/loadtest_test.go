package loadtest

import (
	"net/http/httptest"
	"testing"

	"stepthrough/models"
	"stepthrough/server"
)

func mustNew(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestLoadHarness runs the load harness small: every student gets every
// view the instructor steps through.
func TestLoadHarness(t *testing.T) {
	s := mustNew(t, server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	r, err := Run(t.Context(), ts.URL, 20, 12)
	if err != nil {
		t.Fatal(err)
	}
	if r.MeanBytes < 1000 || r.Max < r.P50 {
		t.Errorf("implausible result: %+v", r)
	}
	t.Log(r)
}

// BenchmarkClassroomBroadcast is the 200-student room: the instructor
// steps b.N times; p95 is the broadcast latency students see. Run it on
// two cores: go test -run '^$' -bench ClassroomBroadcast -cpu 2 ./loadtest
func BenchmarkClassroomBroadcast(b *testing.B) {
	s := mustNew(b, server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}, RoomsPerClient: 1000, LiveRoomsPerClient: 1000})
	ts := httptest.NewServer(s.Handler())
	b.Cleanup(ts.Close)
	b.ResetTimer()
	r, err := Run(b.Context(), ts.URL, 200, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(r.P50), "p50-ms")
	b.ReportMetric(ms(r.P95), "p95-ms")
	b.ReportMetric(ms(r.Max), "max-ms")
	b.ReportMetric(float64(r.MeanBytes), "view-bytes")
}
