package registry

import (
	"fmt"
	"strconv"
	"strings"

	"stepthrough/engine/quantize"
	"stepthrough/engine/speculative"
)

// Ref names a model the registry offers: a file, that file converted to
// another type in memory, or a draft made of a target's first layers.
// Its written forms are
//
//	lesson.gguf              the file as stored
//	lesson.gguf@Q4_K_M       converted to Q4_K_M in memory
//	self:2                   a draft: the target's first 2 layers (On resolves it)
//	lesson.gguf@Q8_0+self:2  that draft, resolved
//
// Refs are comparable: the registry keys its maps by them, never by
// joined strings.
type Ref struct {
	File       string // the offered file's name; empty in a bare self:N
	Quant      string // the type converted to in memory, as quantize.ParseTarget writes it; empty: as stored
	SelfLayers int    // > 0: only the first SelfLayers layers (a self-draft)
}

// selfSep joins a resolved self-draft's target and its layers.
const selfSep = "+"

// ParseRef reads a written model reference into its one canonical form:
// "lesson.gguf@ f16" and "lesson.gguf@F16" are one Ref. A conversion of a
// conversion, an unknown type and a malformed self:N are refused in one
// line naming the reference.
func ParseRef(s string) (Ref, error) {
	base, self := s, ""
	if i := strings.LastIndex(s, selfSep+speculative.SelfPrefix); i >= 0 {
		base, self = s[:i], s[i+len(selfSep):]
	} else if strings.HasPrefix(s, speculative.SelfPrefix) {
		base, self = "", s
	}
	var r Ref
	if self != "" {
		n, _, err := speculative.SelfLayers(self)
		if err != nil {
			return Ref{}, err
		}
		r.SelfLayers = n
		if base == "" {
			return r, nil
		}
	}
	file, target, ok := strings.Cut(base, "@")
	r.File = file
	if !ok {
		return r, nil
	}
	if strings.Contains(target, "@") {
		return Ref{}, fmt.Errorf("model %.80q: a converted model (NAME@TYPE) cannot be converted again", s)
	}
	t, err := quantize.ParseTarget(target)
	if err != nil {
		return Ref{}, fmt.Errorf("model %.80q: %w", s, err)
	}
	r.Quant = t
	return r, nil
}

// String writes the reference as ParseRef reads it.
func (r Ref) String() string {
	s := r.File
	if r.Quant != "" {
		s += "@" + r.Quant
	}
	if r.SelfLayers > 0 {
		self := speculative.SelfPrefix + strconv.Itoa(r.SelfLayers)
		if s == "" {
			return self
		}
		s += selfSep + self
	}
	return s
}

// Stored is the file the reference is made from, as stored.
func (r Ref) Stored() Ref { return Ref{File: r.File} }

// Model is the whole model the reference is made from (a self-draft's
// target).
func (r Ref) Model() Ref { return Ref{File: r.File, Quant: r.Quant} }

// On resolves a bare self:N against its target; any other reference is
// already whole.
func (r Ref) On(target Ref) Ref {
	if r.File == "" && r.SelfLayers > 0 {
		t := target.Model()
		t.SelfLayers = r.SelfLayers
		return t
	}
	return r
}
