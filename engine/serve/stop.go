package serve

import (
	"bytes"
	"unicode/utf8"
)

// Stopper turns a reply's bytes, as tokens add them, into text that is
// safe to stream: it holds back any end of the text that may still grow
// into a stop string (which can be split across tokens) or that is an
// unfinished UTF-8 character, and when a stop string appears it ends the
// reply just before it. The stop text itself is never released.
type Stopper struct {
	out   []byte
	sent  int
	stops [][]byte
}

// NewStopper matches the given stop strings (empty ones are ignored).
func NewStopper(stops []string) *Stopper {
	s := &Stopper{}
	for _, st := range stops {
		if st != "" {
			s.stops = append(s.stops, []byte(st))
		}
	}
	return s
}

// Push adds a token's bytes. It returns the text that became final and
// whether a stop string ended the reply (then the text is everything
// before it).
func (s *Stopper) Push(b []byte) (string, bool) {
	s.out = append(s.out, b...)
	if k := s.stopAt(); k >= 0 {
		s.out = s.out[:k]
		return s.release(len(s.out)), true
	}
	return s.release(len(s.out) - s.held()), false
}

// Flush releases what is still held when the reply ends otherwise.
func (s *Stopper) Flush() string { return s.release(len(s.out)) }

// Text is everything released so far.
func (s *Stopper) Text() string { return string(s.out[:s.sent]) }

func (s *Stopper) release(upto int) string {
	if upto <= s.sent {
		return ""
	}
	t := string(s.out[s.sent:upto])
	s.sent = upto
	return t
}

// stopAt is where the first stop string starts, or -1. Released bytes
// never end in the start of a stop (held keeps it back), so a match
// starts in the unreleased ones.
func (s *Stopper) stopAt() int {
	best := -1
	for _, st := range s.stops {
		from := s.sent
		if k := bytes.Index(s.out[from:], st); k >= 0 && (best < 0 || from+k < best) {
			best = from + k
		}
	}
	return best
}

// held is how many bytes at the end must wait: the longest end that
// begins a stop string, or an unfinished UTF-8 character.
func (s *Stopper) held() int {
	h := 0
	for _, st := range s.stops {
		for n := min(len(st)-1, len(s.out)-s.sent); n > h; n-- {
			if bytes.HasSuffix(s.out, st[:n]) {
				h = n
				break
			}
		}
	}
	for n := 1; n <= min(utf8.UTFMax, len(s.out)-s.sent); n++ {
		if utf8.RuneStart(s.out[len(s.out)-n]) {
			if !utf8.FullRune(s.out[len(s.out)-n:]) {
				h = max(h, n)
			}
			break
		}
	}
	return h
}
