package library

import (
	"math"
	"testing"
)

// BM25 on a three-document corpus, against scores worked by hand:
// N = 3, average length 4; "cat" is in 2 documents, "red" in 1.
func TestBM25ByHand(t *testing.T) {
	x := New([]*Doc{
		{Name: "a", Text: "the red cat sat"}, // 4 terms
		{Name: "b", Text: "a cat a cat"},     // 4 terms, cat twice
		{Name: "c", Text: "dogs run far away"},
	})
	idfCat := math.Log(1 + (3-2+0.5)/(2+0.5)) // ln 1.6
	idfRed := math.Log(1 + (3-1+0.5)/(1+0.5)) // ln (1 + 5/3)
	// every document has the average length: the norm is k1
	tf := func(f float64) float64 { return f * (K1 + 1) / (f + K1) }
	tests := []struct {
		doc, query string
		want       float64
	}{
		{"a", "red cat", idfRed*tf(1) + idfCat*tf(1)},
		{"b", "red cat", idfCat * tf(2)},
		{"c", "red cat", 0},
		{"a", "Cat!", idfCat * tf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.doc+" "+tc.query, func(t *testing.T) {
			var d *Doc
			for _, e := range x.Docs {
				if e.Name == tc.doc {
					d = e
				}
			}
			if got := x.Score(d, Terms(tc.query)); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("score %.15g, want %.15g", got, tc.want)
			}
		})
	}
	hits := x.Search("red cat", 5)
	if len(hits) != 2 || hits[0].Doc.Name != "a" || hits[1].Doc.Name != "b" {
		t.Errorf("search: %+v", hits)
	}
}

// The shipped documents parse, and a question finds the one that answers it.
func TestBuiltin(t *testing.T) {
	x, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Docs) < 6 {
		t.Fatalf("%d documents", len(x.Docs))
	}
	for q, want := range map[string]string{
		"Where does Lily keep her red ball?": "lily",
		"What cake does Sue bake?":           "sue",
		"When does the park close?":          "park",
	} {
		if hits := x.Search(q, 2); len(hits) == 0 || hits[0].Doc.Name != want {
			t.Errorf("%q found %+v, want %s first", q, hits, want)
		}
	}
	if hits := x.Search("", 3); len(hits) != 0 {
		t.Errorf("an empty query found %d", len(hits))
	}
}

func FuzzSearch(f *testing.F) {
	x, _ := Builtin()
	f.Add("Where does Lily keep her red ball?")
	f.Add("ÉÉ 12 ---")
	f.Fuzz(func(t *testing.T, q string) {
		for _, h := range x.Search(q, 3) {
			if h.Score <= 0 || math.IsNaN(h.Score) {
				t.Fatalf("%q: score %g", q, h.Score)
			}
		}
	})
}
