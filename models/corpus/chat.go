package corpus

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"stepthrough/engine/chat"
)

// Sum is a two-operand addition the chat families ask about.
type Sum struct{ A, B int }

func (s Sum) String() string { return fmt.Sprintf("%d + %d", s.A, s.B) }

// Question is how a user asks it.
func (s Sum) Question() string { return "What is " + s.String() + "?" }

// Call is the calculator call for it.
func (s Sum) Call() string { return chat.CalcOpen + fmt.Sprintf("%d+%d", s.A, s.B) + chat.CalcClose }

// Answer is the assistant's final sentence.
func (s Sum) Answer() string { return fmt.Sprintf("%s = %d.", s, s.A+s.B) }

// HeldOutSum says whether a pair belongs to the held-out split: about one
// pair in eight, never used in training in any family.
func HeldOutSum(s Sum) bool { return Hash(s.String())%8 == 0 }

// RandomSum draws two numbers of two or three digits from one side of the
// split.
func RandomSum(r *rand.Rand, held bool) Sum {
	for {
		s := Sum{operandOf(r), operandOf(r)}
		if HeldOutSum(s) == held {
			return s
		}
	}
}

func operandOf(r *rand.Rand) int {
	if r.IntN(2) == 0 {
		return 10 + r.IntN(90)
	}
	return 100 + r.IntN(900)
}

// Scratchpad is the reasoning for a sum, column by column from the ones,
// every column's total written with two digits (so the carry is its first
// digit and the written digit its second), then the four digits of the
// result, most significant first.
func Scratchpad(s Sum) string {
	a, b := fmt.Sprintf("%03d", s.A), fmt.Sprintf("%03d", s.B)
	var cols []string
	var digits []byte
	carry := 0
	for i := 2; i >= 0; i-- {
		da, db := int(a[i]-'0'), int(b[i]-'0')
		t := da + db + carry
		cols = append(cols, fmt.Sprintf("%d + %d + %d = %02d", da, db, carry, t))
		digits = append(digits, byte('0'+t%10))
		carry = t / 10
	}
	res := []byte{byte('0' + carry), digits[2], digits[1], digits[0]}
	return fmt.Sprintf("%s + %s: %s, so %s.", a, b, strings.Join(cols, ", "), res)
}

func turn(role, content string) chat.Message { return chat.Message{Role: role, Content: content} }

func render(msgs ...chat.Message) string {
	s, err := chat.Render(msgs, false)
	if err != nil {
		panic(err) // the generator's own roles: a bug here, not input
	}
	return s
}

// CapitalQA and ContinentQA are the chat questions about facts.
func CapitalQA(c Country) (q, a string) {
	return "What is the capital of " + c.Name + "?", "The capital of " + c.Name + " is " + c.Capital + "."
}

func continentQA(c Country) (q, a string) {
	return "Which continent is " + c.Name + " in?", title(c.Name) + " is in " + c.Continent + "."
}

// StoryQA asks who did something in a story; the answer names the
// character after a space, the same tokens as in the story.
func StoryQA(r *rand.Rand, name string) (q, a string) {
	text, _ := StoryText(r, name)
	return text + " Who is this story about?", "It is about " + name + "."
}

func smallSum(r *rand.Rand) Sum { return Sum{r.IntN(10), r.IntN(10)} }

// chatDoc is one or two turns of plain chat: capitals, continents, story
// characters, sums answered directly.
func chatDoc(r *rand.Rand, held bool) Doc {
	var msgs []chat.Message
	for k := 0; k < 1+r.IntN(2); k++ {
		var q, a string
		switch r.IntN(6) {
		case 0, 1:
			q, a = CapitalQA(pick(r, Countries))
		case 2:
			q, a = continentQA(pick(r, Countries))
		case 3:
			q, a = StoryQA(r, storyName(r, held))
		default: // without a system prompt, sums are answered at once
			s := RandomSum(r, held)
			if r.IntN(4) == 0 {
				s = smallSum(r)
			}
			q, a = s.Question(), s.Answer()
		}
		msgs = append(msgs, turn("user", q), turn("assistant", a))
	}
	return Doc{Family: Chat, Text: render(msgs...)}
}

// toolDoc has the calculator available: sums of two- and three-digit
// numbers go through a call whose result the runtime wrote; small sums
// and questions of fact are answered without it.
func toolDoc(r *rand.Rand, held bool) Doc {
	msgs := []chat.Message{turn("system", chat.SystemCalculator)}
	var q, a string
	switch r.IntN(6) {
	case 0:
		s := smallSum(r)
		q, a = s.Question(), s.Answer()
	case 1:
		q, a = CapitalQA(pick(r, Countries))
	default:
		s := RandomSum(r, held)
		q, a = s.Question(), s.Call()+chat.Result(strconv.Itoa(s.A+s.B))+s.Answer()
	}
	msgs = append(msgs, turn("user", q), turn("assistant", a))
	return Doc{Family: Tools, Text: render(msgs...)}
}

// reasoningDoc works a sum out in thinking tokens before answering.
func reasoningDoc(r *rand.Rand, held bool) Doc {
	s := RandomSum(r, held)
	return Doc{Family: Reasoning, Text: render(
		turn("system", chat.SystemThink),
		turn("user", s.Question()),
		turn("assistant", chat.ThinkOpen+Scratchpad(s)+chat.ThinkClose+s.Answer()),
	)}
}
