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
