package session

import (
	"fmt"

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
	last := s.gen[len(s.gen)-1]
	s.in = append(s.in[:0], last)
	if last != s.calcID {
		return s.in
	}
	tk := s.m.Tokenizer
	expr, value, ok := chat.Execute(tk.Decode(s.written(-1)))
	if !ok {
		return s.in
	}
	s.calls = append(s.calls, expr)
	res := tk.EncodeIDs(chat.Result(value), false)
	if s.inserts == nil {
		s.inserts = map[int][]int32{}
	}
	s.inserts[len(s.gen)-1] = res
	s.smp.Accept(res...)
	return append(s.in, res...)
}

// written is the run's tokens in position order from token step from on:
// each sampled token followed by what the runtime inserted after it; from
// -1 puts the prompt first.
func (s *Session) written(from int) []int32 {
	var seq []int32
	if from < 0 {
		seq, from = append(seq, s.promptIDs...), 0
	}
	for i := from; i < len(s.gen); i++ {
		seq = append(append(seq, s.gen[i]), s.inserts[i]...)
	}
	return seq
}

// runtimeNote says what the runtime inserted before token step step.
func (s *Session) runtimeNote(step int) string {
	res, ok := s.inserts[step-1]
	if !ok {
		return ""
	}
	tk := s.m.Tokenizer
	return fmt.Sprintf("The model closed a calculator call, so the runtime computed it and wrote %s after it; this inference pass reads those %d tokens along with the call's last one.", tk.Decode(res), len(res))
}
