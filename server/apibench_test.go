package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkAPIDecode is one /v1/completions request without the
// "stepthrough" extension: a short prompt and 64 tokens decoded greedily
// on the lesson model (ignore_eos: always 64) through the handler and the
// batch, with its allocations. It uses no API the extension added, so the
// same file measures the code before it (the extension's cost when
// absent, run alternated before/after):
//
//	go test -run '^$' -bench APIDecode -benchtime 20x -count 6 ./server
func BenchmarkAPIDecode(b *testing.B) {
	s := mustNew(b, Config{Embedded: lessonModels()})
	h := s.Handler()
	const body = `{"model":"lesson.gguf","prompt":"Once upon a time","max_tokens":64,"temperature":0,"ignore_eos":true}`
	post := func() {
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"completion_tokens":64`) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	post() // the model loaded and the batch started outside the measurement
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		post()
	}
	b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "tokens/s")
}
