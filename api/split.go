package api

import (
	"bytes"

	"stepthrough/engine/chat"
	"stepthrough/engine/chattemplate"
	"stepthrough/engine/stop"
)

// The parts of a reply, in order: reasoning (when the reply opens with
// <think>), content, then a tool call (when the model opens one).
const (
	phaseStart = iota
	phaseReasoning
	phaseContent
	phaseCall
)

var (
	thinkOpen  = []byte(chat.ThinkOpen)
	thinkClose = []byte(chat.ThinkClose)
)

// splitter turns a reply's bytes, as tokens add them, into final text:
// it never releases bytes that may still turn out to be part of a stop
// sequence, a tag or an unfinished UTF-8 character, so a stop sequence
// split across tokens is matched and never streamed.
type splitter struct {
	out      []byte
	sent     int // bytes of out already released (or consumed as tags)
	phase    int
	callFrom int
	stops    [][]byte
	dialect  *Dialect
	call     *chattemplate.ToolCall
	finish   string // when push reports done: stop or tool_calls
}

func newSplitter(stops []string, p *Prompt) *splitter {
	sp := &splitter{dialect: p.Dialect}
	for _, s := range stops {
		sp.stops = append(sp.stops, []byte(s))
	}
	if !p.Reasoning {
		sp.phase = phaseContent
	}
	if p.Forced != "" && p.Dialect != nil { // the prompt opened the call
		sp.phase = phaseCall
	}
	return sp
}

// push adds a token's bytes and releases what became final; done reports
// that the reply ended (a stop sequence, or a closed tool call).
func (sp *splitter) push(b []byte) (Delta, bool) {
	sp.out = append(sp.out, b...)
	if sp.phase != phaseCall {
		if k := sp.stopAt(); k >= 0 {
			sp.out = sp.out[:k]
			sp.finish = "stop"
			return sp.advance(true), true
		}
	}
	d := sp.advance(false)
	if sp.call != nil {
		sp.finish = "tool_calls"
		return d, true
	}
	return d, false
}

// flush releases everything still held at the end of the reply (an
// unclosed call becomes text).
func (sp *splitter) flush() Delta { return sp.advance(true) }

// stopAt is where the first stop sequence starts in the unreleased
// bytes, or -1.
func (sp *splitter) stopAt() int { return stop.First(sp.out, sp.sent, sp.stops) }

// held is how many bytes at the end must wait: the longest end of out
// that begins a marker of this phase (a stop sequence, a tag), or an
// unfinished UTF-8 character.
func (sp *splitter) held() int {
	markers := sp.stops
	switch sp.phase {
	case phaseStart:
		markers = append(markers[:len(markers):len(markers)], thinkOpen)
	case phaseReasoning:
		markers = append(markers[:len(markers):len(markers)], thinkClose)
	case phaseContent:
		if sp.dialect != nil {
			markers = append(markers[:len(markers):len(markers)], []byte(sp.dialect.Open))
		}
	}
	return stop.Held(sp.out, sp.sent, markers)
}

// advance releases the bytes that are final (all of them when final).
func (sp *splitter) advance(final bool) Delta {
	var d Delta
	for {
		limit := len(sp.out) // what this phase may release
		if !final {
			limit -= sp.held()
		}
		if sp.sent >= limit && !(sp.phase == phaseCall && sp.call == nil && sp.sent < len(sp.out)) {
			return d
		}
		rest := sp.out[sp.sent:]
		switch sp.phase {
		case phaseStart:
			if bytes.HasPrefix(rest, thinkOpen) {
				sp.sent += len(thinkOpen)
				sp.phase = phaseReasoning
				continue
			}
			sp.phase = phaseContent
		case phaseReasoning:
			if k := bytes.Index(rest, thinkClose); k >= 0 {
				d.Reasoning += string(rest[:k])
				sp.sent += k + len(thinkClose)
				sp.phase = phaseContent
				continue
			}
			d.Reasoning += string(sp.out[sp.sent:limit])
			sp.sent = limit
		case phaseContent:
			if sp.dialect != nil {
				if k := bytes.Index(rest, []byte(sp.dialect.Open)); k >= 0 {
					d.Content += string(rest[:k])
					sp.sent += k + len(sp.dialect.Open)
					sp.phase, sp.callFrom = phaseCall, sp.sent
					continue
				}
			}
			d.Content += string(sp.out[sp.sent:limit])
			sp.sent = limit
		case phaseCall:
			if k := bytes.Index(sp.out[sp.callFrom:], []byte(sp.dialect.Close)); k >= 0 {
				if c, err := sp.dialect.parse(string(sp.out[sp.callFrom : sp.callFrom+k])); err == nil {
					sp.call = &c
					sp.sent = len(sp.out)
					return d
				}
			}
			if !final {
				return d // the call is still being written
			}
			// an unclosed or unreadable call is text
			d.Content += sp.dialect.Open + string(sp.out[sp.callFrom:])
			sp.sent, sp.phase = len(sp.out), phaseContent
		}
	}
}
