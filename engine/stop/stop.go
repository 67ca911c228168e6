// Package stop finds stop strings in a reply that grows a token at a
// time, where a stop string may be split across tokens: the one matcher
// every generation loop uses (the scheduler's requests, the API's replies
// with their tags). Nothing that may still become a stop string, and no
// unfinished UTF-8 character, is released early.
package stop

import (
	"bytes"
	"unicode/utf8"
)

// Matcher turns a reply's bytes, as tokens add them, into text that is
// safe to stream: it holds back any end of the text that may still grow
// into a stop string (which can be split across tokens) or that is an
// unfinished UTF-8 character, and when a stop string appears it ends the
// reply just before it. The stop text itself is never released.
type Matcher struct {
	out   []byte
	sent  int
	stops [][]byte
}

// New matches the given stop strings (empty ones are ignored).
func New(stops []string) *Matcher {
	s := &Matcher{}
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
func (s *Matcher) Push(b []byte) (string, bool) {
	lo, hi, stopped := s.push(b)
	return string(s.out[lo:hi]), stopped
}

// push is Push giving the released text as a range of s.out (no copy).
func (s *Matcher) push(b []byte) (lo, hi int, stopped bool) {
	s.out = append(s.out, b...)
	if k := s.stopAt(); k >= 0 {
		s.out = s.out[:k]
		lo, hi = s.release(len(s.out))
		return lo, hi, true
	}
	lo, hi = s.release(len(s.out) - s.held())
	return lo, hi, false
}

// Flush releases what is still held when the reply ends otherwise.
func (s *Matcher) Flush() string {
	lo, hi := s.release(len(s.out))
	return string(s.out[lo:hi])
}

// Text is everything released so far.
func (s *Matcher) Text() string { return string(s.out[:s.sent]) }

// release makes s.out up to upto final and returns the range it released.
func (s *Matcher) release(upto int) (lo, hi int) {
	if upto <= s.sent {
		return s.sent, s.sent
	}
	lo, s.sent = s.sent, upto
	return lo, upto
}

// stopAt is where the first stop string starts, or -1. Released bytes
// never end in the start of a stop (held keeps it back), so a match
// starts in the unreleased ones.
func (s *Matcher) stopAt() int { return First(s.out, s.sent, s.stops) }

// held is how many bytes at the end must wait.
func (s *Matcher) held() int { return Held(s.out, s.sent, s.stops) }

// First is where the first of stops starts in out[from:], as an index
// into out, or -1.
func First(out []byte, from int, stops [][]byte) int {
	best := -1
	for _, st := range stops {
		if len(st) == 0 {
			continue
		}
		if k := bytes.Index(out[from:], st); k >= 0 && (best < 0 || from+k < best) {
			best = from + k
		}
	}
	return best
}

// Held is how many bytes at the end of out[from:] must wait before they
// are final: the longest end that begins one of markers (a stop string, a
// tag), or an unfinished UTF-8 character.
func Held(out []byte, from int, markers [][]byte) int {
	h := 0
	for _, m := range markers {
		for n := min(len(m)-1, len(out)-from); n > h; n-- {
			if bytes.HasSuffix(out, m[:n]) {
				h = n
				break
			}
		}
	}
	for n := 1; n <= min(utf8.UTFMax, len(out)-from); n++ {
		if utf8.RuneStart(out[len(out)-n]) {
			if !utf8.FullRune(out[len(out)-n:]) {
				h = max(h, n)
			}
			break
		}
	}
	return h
}
