package corpus

import "testing"

func TestCountries(t *testing.T) {
	if len(Countries) != 193 {
		t.Fatalf("%d countries, want the 193 UN member states", len(Countries))
	}
	seen := map[string]bool{}
	continents := map[string]bool{"Africa": true, "Asia": true, "Europe": true, "North America": true, "South America": true, "Oceania": true}
	for _, c := range Countries {
		if seen[c.Name] || c.Capital == "" || !continents[c.Continent] {
			t.Errorf("bad or duplicate entry %+v", c)
		}
		seen[c.Name] = true
	}
}

func TestGenerate(t *testing.T) {
	o := Default(1)
	o.FactsBytes, o.StoriesBytes, o.CodeBytes, o.ArithmeticBytes = 5000, 5000, 2000, 2000
	a, b := Generate(o), Generate(o)
	if len(a) != len(b) || a[0].Text != b[0].Text || a[len(a)-1].Text != b[len(b)-1].Text {
		t.Fatal("not deterministic")
	}
	o.HeldOut = true
	h := Generate(o)
	if h[0].Text == a[0].Text {
		t.Error("held-out split equals training split")
	}
	counts := map[Family]int{}
	for _, d := range a {
		counts[d.Family]++
		for _, s := range d.NameSpans {
			if s <= 0 || s >= len(d.Text) {
				t.Fatalf("name span %d outside %q", s, d.Text)
			}
		}
		if d.Family == Stories && len(d.NameSpans) != 2 {
			t.Errorf("story without two later name mentions: %q", d.Text)
		}
	}
	for _, f := range Families {
		if counts[f] == 0 {
			t.Errorf("no %s documents", f)
		}
	}
	if n := len(Names()); n < 200 {
		t.Errorf("%d names, want at least 200", n)
	}
}
