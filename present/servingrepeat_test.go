package present

import (
	"strings"
	"testing"
	"time"

	"stepthrough/engine/serve"
)

// report is a measured run as the verdict reads it: a policy, its tokens
// per second, its replies' lengths and its steps (tokens, ms each).
func report(policy serve.Policy, tps float64, replies []int, steps [][2]int) *serve.Report {
	r := &serve.Report{Options: serve.Options{Policy: policy}}
	r.Summary.TokensPerSecond = tps
	for _, n := range replies {
		r.Requests = append(r.Requests, serve.Times{Generated: n})
	}
	for _, st := range steps {
		r.Steps = append(r.Steps, serve.Step{Parts: []serve.Part{{Tokens: st[0]}}, Dur: time.Duration(st[1]) * time.Millisecond})
	}
	r.Summary.MeanBatch, r.Summary.Steps = 2, len(steps)
	return r
}

func TestServingVerdict(t *testing.T) {
	names := []string{"continuous", "static"}
	varied, equal := []int{8, 20, 48}, []int{32, 32, 32}
	perToken := [][2]int{{1, 1}, {4, 4}, {8, 8}, {2, 2}} // ms = tokens: no fixed cost
	runs := func(c, s []float64, replies []int) [][]*serve.Report {
		var rc, rs []*serve.Report
		for i := range c {
			rc = append(rc, report(serve.Continuous, c[i], replies, perToken))
			rs = append(rs, report(serve.Static, s[i], replies, perToken))
		}
		return [][]*serve.Report{rc, rs}
	}
	tests := []struct {
		name    string
		runs    [][]*serve.Report
		want    []string
		wantNot []string
	}{
		{"within the spread", runs([]float64{100, 110, 120}, []float64{115, 125, 118}, varied),
			[]string{"Over 3 runs", "within the runs' spread"}, []string{"Why", "Static batching generated"}},
		{"continuous ahead", runs([]float64{200, 210, 205}, []float64{100, 110, 105}, varied),
			[]string{"205 under continuous against 105 under static"}, []string{"Why"}},
		{"static ahead, equal replies", runs([]float64{100, 101, 102}, []float64{150, 151, 152}, equal),
			[]string{"every reply had the same length (32 tokens)"}, nil},
		{"static ahead, a step's cost is its tokens", runs([]float64{100, 101, 102}, []float64{150, 151, 152}, varied),
			[]string{"grows by 1.000 ms with every token", "0.000 ms of fixed cost"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ServingVerdict(names, tc.runs)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("verdict lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("verdict says %q:\n%s", w, got)
				}
			}
		})
	}
	if got := ServingVerdict(names[:1], [][]*serve.Report{{report(serve.Continuous, 1, varied, perToken)}}); got != "" {
		t.Errorf("one setting: %q", got)
	}
}
