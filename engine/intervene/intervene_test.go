package intervene

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The written forms read to their edits, counted from 1 on the page and
// from 0 inside; anything else is refused naming the part.
func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want []Edit
		err  string
	}{
		{in: "", want: nil},
		{in: "L4H5", want: []Edit{{Layer: 3, Site: Head, Index: 4, Pos: -1, Op: Zero}}},
		{in: "L4H5*0.5", want: []Edit{{Layer: 3, Site: Head, Index: 4, Pos: -1, Op: Scale, Factor: 0.5}}},
		{in: "L2U17;L3attn L1mlp*2", want: []Edit{{Layer: 1, Site: Unit, Index: 16, Pos: -1, Op: Zero},
			{Layer: 2, Site: Attn, Pos: -1, Op: Zero}, {Layer: 0, Site: MLP, Pos: -1, Op: Scale, Factor: 2}}},
		{in: "L0H1", err: "whole number from 1"},
		{in: "L1H01", err: "whole number from 1"},
		{in: "H1", err: "starts with L"},
		{in: "L1X2", err: "after the layer"},
		{in: "L1H2*NaN", err: "not a number"},
		{in: "L1H2*1e9", err: "not a number"},
		// one edit per site, and no value scaled past MaxFactor (a link that
		// scaled one MLP by 10⁴ ten times made every logit NaN)
		{in: strings.Repeat("L1mlp*10000;", 10), err: "L1mlp*10000 already edits that site"},
		{in: "L2H1;L2H1*0.5", err: "L2H1 already edits that site"},
		{in: "L2U3*2 L2U3*2", err: "already edits that site"},
		{in: "L1attn*100;L1H1*101", err: "scales that value by 10100"},
		{in: "L1mlp*-1000;L1U4*20", err: "scales that value by 20000"},
		{in: "L1attn*100;L1H1*100;L2H1*10000", want: []Edit{{Layer: 0, Site: Attn, Pos: -1, Op: Scale, Factor: 100},
			{Layer: 0, Site: Head, Pos: -1, Op: Scale, Factor: 100}, {Layer: 1, Site: Head, Pos: -1, Op: Scale, Factor: 10000}}},
		{in: "L1attn;L1H1*10000", want: []Edit{{Layer: 0, Site: Attn, Pos: -1, Op: Zero}, {Layer: 0, Site: Head, Pos: -1, Op: Scale, Factor: 10000}}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			s, err := Parse(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, s.Edits); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A set made in code is held to the same bounds as a written one when a
// backend checks it; vector edits (a patch and a steering on one site)
// may share a site.
func TestSetBounds(t *testing.T) {
	sh := Shape{Layers: 2, Heads: 2, HeadDim: 4, FFN: 8, Embd: 8}
	vec := make([]float32, 8)
	for _, c := range []struct {
		name string
		set  Set
		err  string
	}{
		{"scale past the bound", Set{Edits: []Edit{{Site: MLP, Pos: -1, Op: Scale, Factor: 1e30}}}, "from -10000 to 10000"},
		{"NaN factor", Set{Edits: []Edit{{Site: Attn, Pos: -1, Op: Scale, Factor: float32(nan())}}}, "from -10000 to 10000"},
		{"same site twice", Set{Edits: []Edit{{Site: Head, Index: 1, Pos: -1, Op: Zero}, {Site: Head, Index: 1, Pos: -1, Op: Zero}}}, "already edits"},
		{"other positions", Set{Edits: []Edit{{Site: Head, Index: 1, Pos: 2, Op: Zero}, {Site: Head, Index: 1, Pos: 3, Op: Zero}}}, ""},
		{"patch and steer", Set{Edits: []Edit{{Layer: 1, Site: Resid, Pos: -1, Op: Add, Factor: 4, Vector: vec}, {Layer: 1, Site: Resid, Pos: -1, Op: Replace, Vector: vec}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.set.Check(sh)
			if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("got %v, want %q", err, c.err)
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// An edit outside the model, or a vector of the wrong width, is refused.
func TestCheck(t *testing.T) {
	sh := Shape{Layers: 4, Heads: 8, HeadDim: 16, FFN: 512, Embd: 128}
	cases := []struct {
		name string
		e    Edit
		err  string
	}{
		{"head", Edit{Layer: 3, Site: Head, Index: 7, Op: Zero}, ""},
		{"layer past the end", Edit{Layer: 4, Site: Head, Op: Zero}, "layers 1 to 4"},
		{"head past the end", Edit{Site: Head, Index: 8, Op: Zero}, "heads 1 to 8"},
		{"unit past the end", Edit{Site: Unit, Index: 512, Op: Zero}, "units 1 to 512"},
		{"patch of a head", Edit{Site: Head, Op: Replace, Vector: make([]float32, 16)}, ""},
		{"patch of the wrong width", Edit{Site: Resid, Op: Replace, Vector: make([]float32, 16)}, "want 128"},
		{"steer", Edit{Site: Resid, Op: Add, Factor: 4, Vector: make([]float32, 128)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.e.Check(sh)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("got %v, want %q", err, c.err)
			}
		})
	}
}

// Checked gives no set for one without edits, the set itself once it
// fits the model, and Check's refusal otherwise.
func TestChecked(t *testing.T) {
	sh := Shape{Layers: 2, Heads: 4, HeadDim: 16, FFN: 64, Embd: 128}
	fits := &Set{Edits: []Edit{{Layer: 1, Site: MLP, Op: Zero, Pos: -1}}}
	cases := []struct {
		name string
		in   *Set
		want *Set
		err  string
	}{
		{"nil", nil, nil, ""},
		{"empty", &Set{}, nil, ""},
		{"fits", fits, fits, ""},
		{"past the layers", &Set{Edits: []Edit{{Layer: 2, Site: MLP, Op: Zero, Pos: -1}}}, nil, "layers 1 to 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Checked(sh)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
			if got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// Columns: a head owns its headDim columns, a unit its one, the rest the
// whole row.
func TestColumns(t *testing.T) {
	cases := []struct {
		name string
		e    Edit
		want [2]int
	}{
		{"head 1", Edit{Site: Head, Index: 0}, [2]int{0, 16}},
		{"head 3", Edit{Site: Head, Index: 2}, [2]int{32, 16}},
		{"unit 7", Edit{Site: Unit, Index: 6}, [2]int{6, 1}},
		{"attention", Edit{Site: Attn, Index: 3}, [2]int{0, 128}},
		{"MLP", Edit{Site: MLP}, [2]int{0, 128}},
		{"residual", Edit{Site: Resid}, [2]int{0, 128}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo, n := c.e.Columns(16, 128)
			if diff := cmp.Diff(c.want, [2]int{lo, n}); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParse: whatever the text, Parse refuses it in one line or reads
// edits whose written form reads back to the same edits.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"L4H5", "L4H5*0.5;L2U17", "L3attn+L1mlp*-2", "L1H1*1e-3", "L99999999H1", "L1H2*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			if err.Error() == "" || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("%q → %q: %v", text, s.String(), err)
		}
		if diff := cmp.Diff(s.Edits, again.Edits); diff != "" {
			t.Fatalf("%q → %q:\n%s", text, s.String(), diff)
		}
	})
}

// A written steering reads to its parts and back; bad ones are refused.
func TestParseSteer(t *testing.T) {
	s, err := ParseSteer("L2: happy day |sad night*4")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Steer{Layer: 1, Toward: "happy day", Away: "sad night", Strength: 4}, s); diff != "" {
		t.Error(diff)
	}
	if again, err := ParseSteer(s.String()); err != nil || again != s {
		t.Errorf("%q → %+v, %v", s.String(), again, err)
	}
	for _, bad := range []string{"", "2:a|b*1", "L0:a|b*1", "L2:a|b", "L2:a*1", "L2:|b*1", "L2:a|b*NaN", "L2:a|b|c*1", "L2:a|b*1e9"} {
		if _, err := ParseSteer(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseSteer: a steering reads to a value that writes back to itself,
// or is refused in one line.
func FuzzParseSteer(f *testing.F) {
	f.Add("L2:happy|sad*4")
	f.Add("L1: a b |c*-0.5")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSteer(text)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if again, err := ParseSteer(s.String()); err != nil || again != s {
			t.Fatalf("%q → %q → %+v, %v", text, s.String(), again, err)
		}
	})
}

// A run carrying a set or a steering writes each as its text in JSON and
// reads it back to the same value; a text too long is refused before it
// is read, and one Parse refuses is refused the same way.
func TestTextInJSON(t *testing.T) {
	type run struct {
		Ablate *Set   `json:"ablate,omitempty"`
		Steer  *Steer `json:"steer,omitempty"`
	}
	set, err := Parse("L2H1;L1U7*0.5")
	if err != nil {
		t.Fatal(err)
	}
	in := run{Ablate: set, Steer: &Steer{Layer: 1, Toward: "happy day", Away: "sad night", Strength: 4}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ablate":"L2H1;L1U7*0.5","steer":"L2:happy day|sad night*4"}`; string(b) != want {
		t.Errorf("written %s, want %s", b, want)
	}
	var out run
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`{"ablate":"L0H1"}`,
		`{"ablate":"` + strings.Repeat("L1H1;", MaxSetChars/5+1) + `"}`,
		`{"steer":"L1:happy"}`,
		`{"steer":"L1:` + strings.Repeat("a", MaxSteerChars) + `|b*1"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%.60s: read, want refused", bad)
		}
	}
}
