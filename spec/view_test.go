package spec

import (
	"net/url"
	"testing"
)

// Links count layers, heads and sampler steps from 1, as the page does,
// and name the stage, so one link lands on the same stage at any token
// step; older links with a stage index still open.
func TestViewLinks(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  View
		err   bool
	}{
		{"stage=attention&layer=2&head=3", View{StageName: "attention", Layer: 1, Head: 2}, false},
		{"stage=sampler&filter=4&step=2", View{Token: 2, StageName: "sampler", Layer: -1, Filter: 4}, false},
		{"stage=softmax", View{StageName: "softmax", Layer: -1}, false},
		{"stage=7&step=1", View{Token: 1, Stage: 7, Layer: -1}, false},
		{"head=0", View{}, true},
		{"layer=0&stage=mlp", View{}, true},
		{"stage=Attention", View{}, true},
		{"stage=attention%3Cscript%3E", View{}, true},
		{"filter=-2&stage=sampler", View{}, true},
		{"filter=99&stage=sampler", View{}, true},
		{"stage=mlp&layer=2&vs=q4_0", View{StageName: "mlp", Layer: 1, Vs: "Q4_0"}, false},
		{"vs=none", View{Layer: -1}, false},
		{"vs=", View{Layer: -1}, false},
		{"vs=Q4_0%3Cb%3E", View{}, true},
		{"vs=Q4_K_M_LONGER", View{}, true},
		{"vs=Q8_0&draft=self:1", View{}, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		r, err := FromQuery(q, Default("m.gguf"))
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v", tc.query, err)
			continue
		}
		if tc.err {
			continue
		}
		if r.View != tc.want {
			t.Errorf("%s: view %+v, want %+v", tc.query, r.View, tc.want)
		}
		back, err := FromQuery(r.Query(), Default("m.gguf"))
		if err != nil || back.View != r.View {
			t.Errorf("%s: round trip %+v (%v), want %+v", tc.query, back.View, err, r.View)
		}
	}
}
