package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/engine"
	"stepthrough/engine/memcalc"
	"stepthrough/engine/quant"
	"stepthrough/present"
	"stepthrough/views"
)

// The memory and cost calculator: a preset's or a model file's shape, the
// weights at a precision, the KV cache, who fits, what a token costs.

// memoryMeasureTokens is the decode run that measures a model file's speed.
const memoryMeasureTokens = 32

func (s *Server) memoryPage(c echo.Context) error {
	p := present.MemoryForm(c.QueryParams().Get, s.reg.Names())
	if err := s.fillMemory(c.Request().Context(), &p); err != nil {
		p.Error = err.Error()
		return renderPageStatus(c, http.StatusBadRequest, views.MemoryPageView(p))
	}
	return renderPage(c, views.MemoryPageView(p))
}

func (s *Server) fillMemory(ctx context.Context, p *views.MemoryPage) error {
	in := memcalc.Inputs{}
	t, err := quant.ParseType(p.Type)
	if mt, ok := map[string]quant.Type{"Q4_K_M": quant.Q4_K, "Q5_K_M": quant.Q5_K}[p.Type]; ok {
		t, err = mt, nil // the mixed presets: their base type, and in.Target names the mix
	}
	if err != nil || !slices.Contains(p.Types, p.Type) {
		return fmt.Errorf("weights %q: one of %v", p.Type, p.Types)
	}
	in.Weights, in.Target = t, p.Type
	nums := []struct {
		name   string
		text   string
		dst    *float64
		lo, hi float64
	}{{"KV bytes", p.KV, &in.KVBytes, 1, 4}, {"memory", p.Memory, &in.MemoryGB, 0, 1e6}, {"price per hour", p.Price, &in.PricePerHour, 0, 1e6}, {"tokens/s", p.TPS, &in.TokensPerSec, 0, 1e9}}
	for _, n := range nums {
		if n.text == "" {
			continue
		}
		v, err := strconv.ParseFloat(n.text, 64)
		if err != nil || math.IsNaN(v) || v < n.lo || v > n.hi {
			return fmt.Errorf("%s %q: a number from %g to %g", n.name, n.text, n.lo, n.hi)
		}
		*n.dst = v
	}
	for _, n := range []struct {
		name string
		text string
		dst  *int
		hi   int
	}{{"context", p.Context, &in.Context, 10_000_000}, {"users", p.Batch, &in.Batch, 100_000}} {
		v, err := strconv.Atoi(n.text)
		if err != nil || v < 1 || v > n.hi {
			return fmt.Errorf("%s %q: a whole number from 1 to %d", n.name, n.text, n.hi)
		}
		*n.dst = v
	}
	shape, ok := memcalc.Preset(p.Source)
	if !ok {
		m, err := s.reg.Get(p.Source)
		if err != nil {
			return err
		}
		shape = memcalc.FromModel(p.Source, m)
		if in.TokensPerSec == 0 {
			runs, err := s.measureDecode(ctx, p.Source)
			if err != nil {
				return err
			}
			slices.Sort(runs)
			in.TokensPerSec = runs[len(runs)/2]
			p.Measured = present.MemoryMeasured(p.Source, runs, memoryMeasureTokens)
		}
	}
	present.Memory(p, shape, in)
	return nil
}

// memoryMeasureRuns is how many runs of memoryMeasureTokens measureDecode
// times, one after another.
const memoryMeasureRuns = 3

// measureDecode times greedy decoding of a small model file: tokens per
// second in each of memoryMeasureRuns runs.
func (s *Server) measureDecode(ctx context.Context, name string) ([]float64, error) {
	m, err := s.reg.Get(name)
	if err != nil {
		return nil, err
	}
	var size uint64
	for _, t := range m.File.Tensors {
		size += t.Size
	}
	if size > 256<<20 {
		return nil, fmt.Errorf("%s is %d MiB: give its measured tokens/s (bench) instead of measuring it here", name, size>>20)
	}
	lm, err := s.reg.Engine(name, "cpu")
	if err != nil {
		return nil, err
	}
	es, err := lm.NewSession(0)
	if err != nil {
		return nil, err
	}
	defer es.Close()
	logits, err := es.Eval(ctx, m.Tokenizer.EncodeIDs("Once upon a time", true))
	if err != nil {
		return nil, err
	}
	// greedy tokens past any end of generation: 8 passes of warm-up (the
	// first after a load are slower), then runs of memoryMeasureTokens
	const warm = 8
	var start time.Time
	var runs []float64
	emitted := 0
	_, err = es.Continue(ctx, logits, engine.Gen{Limits: engine.Limits{MaxTokens: warm + 1 + memoryMeasureRuns*memoryMeasureTokens, IgnoreEOS: true}, Choose: engine.Argmax,
		Emit: func(int32, []float32) error {
			emitted++
			if k := emitted - warm - 1; k >= 0 && k%memoryMeasureTokens == 0 {
				if k > 0 {
					runs = append(runs, memoryMeasureTokens/time.Since(start).Seconds())
				}
				start = time.Now()
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	return runs, nil
}
