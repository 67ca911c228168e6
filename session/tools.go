package session

import (
	"stepthrough/engine/chat"
	"stepthrough/engine/tokenizer"
)

// calcClose is the id of the token that closes a calculator call, or -1
// when the model has none.
func calcClose(tk *tokenizer.Tokenizer) int32 {
	if ids := tk.EncodeIDs(chat.CalcClose, false); len(ids) == 1 {
		return ids[0]
	}
	return -1
}

// toolInput is what the next pass feeds the model: the last sampled
// token, and, when it closed a calculator call and the run executes the
// calculator, the result the runtime writes after it (one pass reads them
// all, as a tool loop's next inference pass reads the tool's output).
func (s *Session) toolInput() []int32 {
	last := s.Gen[len(s.Gen)-1]
	s.in = append(s.in[:0], last)
	if last != s.calcID {
		return s.in
	}
	tk := s.m.Tokenizer
	expr, value, ok := chat.Execute(tk.Decode(s.Written(-1)))
	if !ok {
		return s.in
	}
	s.Calls = append(s.Calls, expr)
	res := tk.EncodeIDs(chat.Result(value), false)
	if s.Inserts == nil {
		s.Inserts = map[int][]int32{}
	}
	s.Inserts[len(s.Gen)-1] = res
	s.smp.Accept(res...)
	return append(s.in, res...)
}
