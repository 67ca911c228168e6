package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"stepthrough/engine/serve"
	"stepthrough/engine/speculative"
)

// metrics is /metrics: the serving figures llama.cpp's server and vLLM
// export, in the Prometheus text format (the official client library),
// read from the API's batches when scraped; TTFT and time per output token
// are histograms observed as each request ends.
type metrics struct {
	reg        *prometheus.Registry
	ttft, tpot *prometheus.HistogramVec
	broadcast  prometheus.Histogram
}

// latencyBuckets span a lesson model's milliseconds to a large model's
// seconds.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func (s *Server) metricsInit() {
	m := &s.metrics
	m.reg = prometheus.NewRegistry()
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepthrough_time_to_first_token_seconds",
		Help: "API requests' time from arrival to their first generated token.", Buckets: latencyBuckets}, []string{"model"})
	m.tpot = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stepthrough_time_per_output_token_seconds",
		Help: "API requests' mean time per generated token after the first.", Buckets: latencyBuckets}, []string{"model"})
	m.broadcast = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "stepthrough_room_broadcast_seconds",
		Help: "Time to render a room's view once and queue it for every client, per broadcast.", Buckets: latencyBuckets})
	m.reg.MustRegister(m.ttft, m.tpot, m.broadcast, batchCollector{s}, roomCollector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// observeBroadcast records one room broadcast (classroom.Config.OnBroadcast).
func (m *metrics) observeBroadcast(d time.Duration, _ int) { m.broadcast.Observe(d.Seconds()) }

// roomCollector reads the classroom when scraped.
type roomCollector struct{ s *Server }

var (
	roomsDesc       = prometheus.NewDesc("stepthrough_rooms", "Classroom rooms live on this server.", nil, nil)
	connectionsDesc = prometheus.NewDesc("stepthrough_room_connections", "WebSocket connections to those rooms (students, instructors, projectors).", nil, nil)
	broadcastsDesc  = prometheus.NewDesc("stepthrough_room_broadcasts_total", "Room views rendered and sent to a room's clients.", nil, nil)
	storeErrorsDesc = prometheus.NewDesc("stepthrough_store_errors_total", "Classroom store reads and writes that failed.", nil, nil)
	publishedDesc   = prometheus.NewDesc("stepthrough_bus_published_total", "Room events this server published on the bus.", nil, nil)
	receivedDesc    = prometheus.NewDesc("stepthrough_bus_received_total", "Room events from other servers received on the bus.", nil, nil)
	busErrorsDesc   = prometheus.NewDesc("stepthrough_bus_errors_total", "Room events the bus refused to publish.", nil, nil)
	caughtUpDesc    = prometheus.NewDesc("stepthrough_room_catchups_total", "Rooms reloaded from the store because another server changed them.", nil, nil)
	conflictsDesc   = prometheus.NewDesc("stepthrough_room_conflicts_total", "Room writes refused because another server had changed the room first.", nil, nil)
	reloadsDesc     = prometheus.NewDesc("stepthrough_room_reloads_total", "Reads of a room from the store to catch up with other servers (bus events and version checks).", nil, nil)
	busDoubtsDesc   = prometheus.NewDesc("stepthrough_bus_doubts_total", "Bus events announcing a room version the store did not hold (forged or misdirected).", nil, nil)
)

func (roomCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roomsDesc, connectionsDesc, broadcastsDesc, storeErrorsDesc, publishedDesc, receivedDesc, busErrorsDesc, caughtUpDesc, conflictsDesc, reloadsDesc, busDoubtsDesc} {
		ch <- d
	}
}

func (rc roomCollector) Collect(ch chan<- prometheus.Metric) {
	st := rc.s.class.Stats()
	ch <- prometheus.MustNewConstMetric(roomsDesc, prometheus.GaugeValue, float64(st.Rooms))
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(st.Connections))
	ch <- prometheus.MustNewConstMetric(broadcastsDesc, prometheus.CounterValue, float64(st.Broadcasts))
	for d, v := range map[*prometheus.Desc]int64{storeErrorsDesc: st.StoreErrors, publishedDesc: st.Published, receivedDesc: st.Received,
		busErrorsDesc: st.BusErrors, caughtUpDesc: st.CaughtUp, conflictsDesc: st.Conflicts, reloadsDesc: st.Reloads, busDoubtsDesc: st.BusDoubts} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
}

// observe records an ended request's times.
func (m *metrics) observe(model string, t serve.Times) {
	if t.FirstToken.IsZero() {
		return
	}
	m.ttft.WithLabelValues(model).Observe(t.TTFT().Seconds())
	if t.Generated > 1 {
		m.tpot.WithLabelValues(model).Observe(t.TPOT().Seconds())
	}
}

func (s *Server) metricsPage(c echo.Context) error {
	promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// readyz answers 200 when the server can serve a request: it is not
// shutting down, offers a model, and reaches its classroom store.
func (s *Server) readyz(c echo.Context) error {
	switch {
	case s.base.Err() != nil:
		return c.String(http.StatusServiceUnavailable, "shutting down")
	case len(s.reg.Names()) == 0:
		return c.String(http.StatusServiceUnavailable, "no model to serve")
	}
	if p, ok := s.class.Store().(pinger); ok {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := p.Ping(ctx); err != nil {
			s.reqLog(c).Warn("readyz: the classroom store is unreachable", "err", err)
			return c.String(http.StatusServiceUnavailable, "the classroom store is unreachable")
		}
	}
	if s.bus != nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := s.bus.Ping(ctx); err != nil {
			s.reqLog(c).Warn("readyz: the bus is unreachable", "err", err)
			return c.String(http.StatusServiceUnavailable, "the bus is unreachable (rooms still work and catch up from the store)")
		}
	}
	return c.String(http.StatusOK, "ready")
}

// batchCollector reads the API's batches when scraped.
type batchCollector struct{ s *Server }

var (
	descs = map[string]*prometheus.Desc{}
	specs = []struct{ name, help string }{
		{"stepthrough_prompt_tokens_total", "Prompt tokens of admitted API requests."},
		{"stepthrough_prompt_tokens_cached_total", "Of those, tokens read from the prefix cache (shared or retained KV blocks), not computed."},
		{"stepthrough_prompt_seconds_total", "Time of batched passes spent on prompt tokens (a mixed pass split by its tokens)."},
		{"stepthrough_generation_tokens_total", "Tokens generated."},
		{"stepthrough_generation_seconds_total", "Time of batched passes spent on decode tokens."},
		{"stepthrough_decode_calls_total", "Batched passes holding at least one decode token."},
		{"stepthrough_decode_sequences_total", "Decode tokens over those passes (divided by decode calls: sequences per decode)."},
		{"stepthrough_preemptions_total", "Requests preempted for KV blocks (recomputed later)."},
		{"stepthrough_requests_total", "API requests' sequences that ended."},
		{"stepthrough_requests_cancelled_total", "Of those, sequences cancelled (the client went away, or the server stopped)."},
		{"stepthrough_requests_running", "Sequences in the batch now."},
		{"stepthrough_requests_waiting", "Sequences queued for a place in the batch."},
		{"stepthrough_kv_blocks_used", "Paged KV blocks in use by running sequences."},
		{"stepthrough_kv_blocks_free", "Paged KV blocks a sequence may take (free, or retained and evictable)."},
		{"stepthrough_kv_blocks_cached", "Paged KV blocks retained in the prefix cache, used by no sequence."},
	}
	specDrafted  = prometheus.NewDesc("stepthrough_spec_draft_tokens_total", "Tokens proposed by speculative decoding's draft models (every speculative run in the process).", nil, nil)
	specAccepted = prometheus.NewDesc("stepthrough_spec_accepted_tokens_total", "Of those, tokens the target model accepted.", nil, nil)
)

func init() {
	for _, sp := range specs {
		descs[sp.name] = prometheus.NewDesc(sp.name, sp.help, []string{"model"}, nil)
	}
}

func (batchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	ch <- specDrafted
	ch <- specAccepted
}

func (b batchCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(name, model string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.CounterValue, v, model)
	}
	gauge := func(name, model string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.GaugeValue, v, model)
	}
	for model, sch := range b.s.apiBatch.all() {
		t, g := sch.Totals(), sch.Gauges()
		counter("stepthrough_prompt_tokens_total", model, float64(t.PromptTokens))
		counter("stepthrough_prompt_tokens_cached_total", model, float64(t.CachedTokens))
		counter("stepthrough_prompt_seconds_total", model, time.Duration(t.PrefillNanos).Seconds())
		counter("stepthrough_generation_tokens_total", model, float64(t.Generated))
		counter("stepthrough_generation_seconds_total", model, time.Duration(t.DecodeNanos).Seconds())
		counter("stepthrough_decode_calls_total", model, float64(t.DecodeSteps))
		counter("stepthrough_decode_sequences_total", model, float64(t.DecodeSeqs))
		counter("stepthrough_preemptions_total", model, float64(t.Preemptions))
		counter("stepthrough_requests_total", model, float64(t.Requests))
		counter("stepthrough_requests_cancelled_total", model, float64(t.Cancelled))
		gauge("stepthrough_requests_running", model, float64(g.Running))
		gauge("stepthrough_requests_waiting", model, float64(g.Waiting))
		gauge("stepthrough_kv_blocks_used", model, float64(g.KVBlocksUsed))
		gauge("stepthrough_kv_blocks_free", model, float64(g.KVFree))
		gauge("stepthrough_kv_blocks_cached", model, float64(g.KVCached))
	}
	d, a := speculative.ProcessTotals()
	ch <- prometheus.MustNewConstMetric(specDrafted, prometheus.CounterValue, float64(d))
	ch <- prometheus.MustNewConstMetric(specAccepted, prometheus.CounterValue, float64(a))
}
