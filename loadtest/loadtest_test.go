package loadtest

import (
	"net/http/httptest"
	"testing"

	"stepthrough/classroom"
	"stepthrough/classroom/natstest"
	"stepthrough/classroom/pgtest"
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
	r, err := Run(t.Context(), []string{ts.URL}, 20, 12)
	if err != nil {
		t.Fatal(err)
	}
	if r.MeanBytes < 1000 || r.Max < r.P50 {
		t.Errorf("implausible result: %+v", r)
	}
	t.Log(r)
}

// The harness across two servers sharing a PostgreSQL store and a NATS
// bus: students on the second server get every step too.
func TestLoadHarnessAcrossServers(t *testing.T) {
	store, bus := pgtest.URL(t), natstest.Start(t).URL()
	var bases []string
	for range 2 {
		s := mustNew(t, server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}, StoreURL: store, BusURL: bus})
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		bases = append(bases, ts.URL)
	}
	r, err := Run(t.Context(), bases, 20, 12)
	if err != nil {
		t.Fatal(err)
	}
	if r.Servers != 2 || r.Max < r.P50 {
		t.Errorf("implausible result: %+v", r)
	}
	t.Log(r)
}

// BenchmarkClassroomBroadcast is the 200-student room: the instructor
// steps b.N times; p95 is the broadcast latency students see. Run it on
// two cores: go test -run '^$' -bench ClassroomBroadcast -cpu 2 ./loadtest
func BenchmarkClassroomBroadcast(b *testing.B) {
	s := mustNew(b, server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}, Limits: classroom.Limits{RoomsPerClient: 1000, LiveRoomsPerClient: 1000}})
	ts := httptest.NewServer(s.Handler())
	b.Cleanup(ts.Close)
	b.ResetTimer()
	r, err := Run(b.Context(), []string{ts.URL}, 200, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(r.P50), "p50-ms")
	b.ReportMetric(ms(r.P95), "p95-ms")
	b.ReportMetric(ms(r.Max), "max-ms")
	b.ReportMetric(float64(r.MeanBytes), "view-bytes")
}
