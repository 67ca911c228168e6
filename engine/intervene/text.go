package intervene

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The written form of ablations and scalings, counted from 1 as pages
// show layers, heads and units:
//
//	L4H5        layer 4's head 5 switched off
//	L4H5*0.5    that head's output halved
//	L2U17       layer 2's MLP unit 17 switched off
//	L3attn      layer 3's whole attention output switched off
//	L3mlp*2     layer 3's MLP output doubled
//
// Several are joined by ";" (a space or "+" also separates them). Edits
// that carry a vector (a mean, a patch, a steering direction) have no
// written form: they are made from texts by the engine.

// MaxEdits bounds a written set.
const MaxEdits = 64

// MaxSetChars bounds a set's written form, checked before it is read.
const MaxSetChars = 512

// MaxSteerChars bounds a steering's written form, checked before it is
// read: two texts of MaxSteerText and the layer and strength around them.
const MaxSteerChars = 2*MaxSteerText + 64

// String writes the edit as Parse reads it (a vector edit as a
// description Parse refuses).
func (e *Edit) String() string {
	var s string
	switch e.Site {
	case Head:
		s = fmt.Sprintf("L%dH%d", e.Layer+1, e.Index+1)
	case Unit:
		s = fmt.Sprintf("L%dU%d", e.Layer+1, e.Index+1)
	case Attn:
		s = fmt.Sprintf("L%dattn", e.Layer+1)
	case MLP:
		s = fmt.Sprintf("L%dmlp", e.Layer+1)
	case Resid:
		s = fmt.Sprintf("L%dresid", e.Layer+1)
	default:
		s = fmt.Sprintf("L%d?", e.Layer+1)
	}
	switch e.Op {
	case Scale:
		s += "*" + strconv.FormatFloat(float64(e.Factor), 'g', -1, 32)
	case Replace:
		s += fmt.Sprintf("=set(%d values)", len(e.Vector))
	case Add:
		s += fmt.Sprintf("+%g×(%d values)", e.Factor, len(e.Vector))
	}
	if e.Pos >= 0 {
		s += fmt.Sprintf("@%d", e.Pos+1)
	}
	return s
}

// String writes the set as Parse reads it.
func (s *Set) String() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.Edits))
	for i := range s.Edits {
		parts[i] = s.Edits[i].String()
	}
	return strings.Join(parts, ";")
}

// MarshalText writes the set as Parse reads it, so a run carrying a set
// writes it as text in JSON.
func (s *Set) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a written set (at most MaxSetChars) into s.
func (s *Set) UnmarshalText(b []byte) error {
	if len(b) > MaxSetChars {
		return fmt.Errorf("intervention: %d characters, at most %d", len(b), MaxSetChars)
	}
	set, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = *set
	return nil
}

// Parse reads written ablations and scalings (see the package's forms);
// "" is no edit. An error names the part it cannot read.
func Parse(text string) (*Set, error) {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ';' || r == '+' || r == ' ' })
	if len(fields) > MaxEdits {
		return nil, fmt.Errorf("intervention: %d edits, at most %d", len(fields), MaxEdits)
	}
	s := &Set{}
	for _, f := range fields {
		e, err := parseEdit(f)
		if err != nil {
			return nil, err
		}
		s.Edits = append(s.Edits, e)
	}
	if err := s.checkScales(); err != nil {
		return nil, err
	}
	return s, nil
}

func parseEdit(f string) (Edit, error) {
	bad := func(why string) (Edit, error) {
		return Edit{}, fmt.Errorf("intervention %.40q: %s (write L4H5, L4H5*0.5, L2U17, L3attn or L3mlp)", f, why)
	}
	body, factor, scaled := strings.Cut(f, "*")
	e := Edit{Pos: -1, Op: Zero}
	if scaled {
		v, err := strconv.ParseFloat(factor, 32)
		if err != nil || !(math.Abs(v) <= MaxFactor) {
			return bad("the factor after * is not a number from -10000 to 10000")
		}
		e.Op, e.Factor = Scale, float32(v)
	}
	rest, ok := strings.CutPrefix(body, "L")
	if !ok {
		return bad("it starts with L and the layer")
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	layer, err := count(rest[:i])
	if err != nil {
		return bad("the layer " + err.Error())
	}
	e.Layer = layer
	switch site := rest[i:]; {
	case site == "attn":
		e.Site = Attn
	case site == "mlp":
		e.Site = MLP
	case strings.HasPrefix(site, "H"), strings.HasPrefix(site, "U"):
		n, err := count(site[1:])
		if err != nil {
			return bad("the head or unit " + err.Error())
		}
		e.Site, e.Index = Head, n
		if site[0] == 'U' {
			e.Site = Unit
		}
	default:
		return bad("after the layer comes H and a head, U and a unit, attn or mlp")
	}
	return e, nil
}

// count reads a number counted from 1 and returns it from 0.
func count(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<20 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("is a whole number from 1")
	}
	return n - 1, nil
}

// Steer is a steering written down: add, after a layer at every position,
// Strength times the difference of two texts' mean residual streams
// there. Written L2:happy day|sad night*4 (the layer from 1; the text to
// steer toward, then away from; the strength).
type Steer struct {
	Layer        int // from 0
	Toward, Away string
	Strength     float32
}

// MaxSteerStrength bounds a steering's strength (either sign).
const MaxSteerStrength = 1e3

// MaxSteerText bounds each steering text.
const MaxSteerText = 200

// ParseSteer reads a written steering; an error names what is wrong.
func ParseSteer(s string) (Steer, error) {
	bad := func(why string) (Steer, error) {
		return Steer{}, fmt.Errorf("steering %.60q: %s (write L2:happy day|sad night*4)", s, why)
	}
	layer, rest, ok := strings.Cut(s, ":")
	if !ok || !strings.HasPrefix(layer, "L") {
		return bad("it starts with L, the layer and a colon")
	}
	l, err := count(layer[1:])
	if err != nil {
		return bad("the layer " + err.Error())
	}
	texts, strength, ok := strings.Cut(rest, "*")
	if !ok {
		return bad("the strength comes after *")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(strength), 32)
	if err != nil || !(math.Abs(f) <= MaxSteerStrength) {
		return bad(fmt.Sprintf("the strength is a number from -%g to %g", float64(MaxSteerStrength), float64(MaxSteerStrength)))
	}
	toward, away, ok := strings.Cut(texts, "|")
	toward, away = strings.TrimSpace(toward), strings.TrimSpace(away)
	if !ok || toward == "" || away == "" || strings.ContainsAny(away, "|") {
		return bad("two texts, toward|away")
	}
	if len(toward) > MaxSteerText || len(away) > MaxSteerText {
		return bad(fmt.Sprintf("each text is at most %d bytes", MaxSteerText))
	}
	return Steer{Layer: l, Toward: toward, Away: away, Strength: float32(f)}, nil
}

// MarshalText writes the steering as ParseSteer reads it, so a run
// carrying one writes it as text in JSON.
func (s Steer) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a written steering (at most MaxSteerChars) into s.
func (s *Steer) UnmarshalText(b []byte) error {
	if len(b) > MaxSteerChars {
		return fmt.Errorf("steering: %d characters, at most %d", len(b), MaxSteerChars)
	}
	st, err := ParseSteer(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// String writes the steering as ParseSteer reads it.
func (s Steer) String() string {
	return fmt.Sprintf("L%d:%s|%s*%s", s.Layer+1, s.Toward, s.Away, strconv.FormatFloat(float64(s.Strength), 'g', -1, 32))
}
