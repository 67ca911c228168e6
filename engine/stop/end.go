package stop

// Why a generation ended.
const (
	EOS    = "eos"    // the model wrote an end-of-generation token
	Length = "length" // the token limit was reached
	Stop   = "stop"   // a stop string appeared (not part of the text)
)

// Vocab is what the stop rule needs of a tokenizer.
type Vocab interface {
	IsEOG(id int32) bool
	Bytes(id int32) []byte
}

// Limits are one generation's stop conditions.
type Limits struct {
	MaxTokens int      // tokens generated at most
	Stops     []string // stop strings (matched across tokens)
	IgnoreEOS bool     // go on past an end-of-generation token (benchmarks)
}

// End applies one generation's stop conditions a token at a time: the
// one rule every generation loop follows (the engine's, the scheduler's,
// the Explorer's stage-by-stage one).
type End struct {
	v Vocab
	l Limits
	m *Matcher
	n int
}

// NewEnd starts the stop rule of a generation.
func NewEnd(v Vocab, l Limits) *End { return &End{v: v, l: l, m: New(l.Stops)} }

// Push takes the next generated token. It returns the text the token made
// final (held back while a stop string may be forming, and never the stop
// string itself) and, when the generation ends with this token, why; ""
// while it goes on. At the end, whatever was held back is released.
func (e *End) Push(id int32) (text, finish string) {
	lo, hi, finish := e.next(id)
	return string(e.m.out[lo:hi]), finish
}

// Next is Push for a caller that does not stream the text: the same rule,
// and no allocation once the reply's buffer has grown.
func (e *End) Next(id int32) (finish string) {
	_, _, finish = e.next(id)
	return finish
}

// next applies the rule; the text released is e.m.out[lo:hi].
func (e *End) next(id int32) (lo, hi int, finish string) {
	e.n++
	if e.v.IsEOG(id) && !e.l.IgnoreEOS {
		lo, hi = e.m.release(len(e.m.out))
		return lo, hi, EOS
	}
	lo, hi, stopped := e.m.push(e.v.Bytes(id))
	switch {
	case stopped:
		return lo, hi, Stop
	case e.n >= e.l.MaxTokens:
		_, hi = e.m.release(len(e.m.out))
		return lo, hi, Length
	}
	return lo, hi, ""
}
