package lessons

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepthrough/engine"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/engine/trace"
)

// MaxAnswerBytes caps a student's answer; a lesson's choices are at most
// this long (Parse refuses longer ones), so every choice can be picked.
const MaxAnswerBytes = 200

// EngineAnswer is the engine's answer to q at a trace step (its logits
// and sampler steps), and the sentence that reveals it. Choice questions
// are answered by the lesson itself. A token's answer is its text
// (tk.Display: its exact bytes, which may be part of a character, or a
// control token's name), compared as it is; the sentence quotes it (%q,
// as Label), so it is valid UTF-8 whatever bytes the token holds.
func EngineAnswer(st *trace.Step, tk *tokenizer.Tokenizer, q *Question) (answer, reveal string) {
	if q.Kind == "choice" {
		return q.Answer, "The answer: " + q.Answer
	}
	if st == nil || st.Logits == nil {
		return "", ""
	}
	top := engine.Argmax(st.Logits.Logits)
	piece := tk.Display(top)
	switch q.Kind {
	case "next-token":
		return piece, fmt.Sprintf("The model's most likely next token is %q (id %d).", piece, top)
	case "probability":
		p := sample.Probabilities(st.Logits.Logits, 1)[top]
		return strconv.FormatFloat(float64(p), 'f', 3, 64), fmt.Sprintf("The engine: %q has probability %.3f at temperature 1.", piece, p)
	case "survivors":
		n := 0
		for _, x := range st.Sampler {
			if x.Step == "top-p" {
				n = x.AfterCount
			}
		}
		return strconv.Itoa(n), fmt.Sprintf("The engine: %d tokens survive top-p.", n)
	}
	return "", ""
}

// Shown is an answer as a page or a file writes it where it is matched
// (a data-answer attribute, a CSV cell): the answer itself when it is
// valid UTF-8, as every answer a student can send is (CheckAnswer); else
// quoted, as the Explorer shows a token that holds part of a character
// ("\x8a"). It is always valid UTF-8.
func Shown(a string) string {
	if utf8.ValidString(a) {
		return a
	}
	return strconv.Quote(a)
}

// Label is how a page shows an answer to a question of this kind: a
// token quoted, so its spaces show and a byte that is part of a
// character reads \x8a, as the Explorer shows tokens; anything else as
// Shown writes it. It is always valid UTF-8.
func Label(kind, a string) string {
	if kind == "next-token" {
		return strconv.Quote(a)
	}
	return Shown(a)
}

// Judge says whether a given answer matches the engine's: exact for
// choices and survivor counts, the same token for next-token (leading
// space optional), within 0.1 for probabilities (as 0.42 or 42%).
func Judge(kind, answer, given string) bool {
	switch kind {
	case "choice", "survivors":
		return strings.TrimSpace(given) == answer
	case "next-token":
		return given == answer || strings.TrimSpace(given) == strings.TrimSpace(answer)
	case "probability":
		want, err1 := strconv.ParseFloat(answer, 64)
		v, ok := ParseProbability(given)
		return err1 == nil && ok && v >= want-0.1 && v <= want+0.1
	}
	return false
}

// ParseProbability reads "0.42" or "42%".
func ParseProbability(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	pc := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil {
		return 0, false
	}
	if pc {
		v /= 100
	}
	return v, v >= 0 && v <= 1
}

// CheckAnswer validates a student's answer to q and returns it in the form
// a poll counts: a listed choice, a token's exact text, a number.
func CheckAnswer(tk *tokenizer.Tokenizer, q *Question, raw string) (string, error) {
	a := strings.TrimSpace(raw)
	switch {
	case a == "":
		return "", errors.New("type an answer first")
	case len(a) > MaxAnswerBytes:
		return "", fmt.Errorf("an answer is at most %d bytes", MaxAnswerBytes)
	case !utf8.ValidString(a):
		return "", errors.New("the answer is not valid UTF-8")
	}
	if len(q.Choices) > 0 {
		switch {
		case slices.Contains(q.Choices, raw):
			return raw, nil // choices may start with a space (tokens)
		case slices.Contains(q.Choices, a):
			return a, nil
		}
		return "", errors.New("that is not one of the choices")
	}
	switch q.Kind {
	case "next-token":
		if id, ok := SingleToken(tk, a); ok {
			return tk.Display(id), nil // a token's answer, as EngineAnswer's
		}
	case "probability":
		v, ok := ParseProbability(a)
		if !ok {
			return "", errors.New("give a probability between 0 and 1 (or 0% to 100%)")
		}
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case "survivors":
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return "", errors.New("give a whole number of tokens")
		}
		return strconv.Itoa(n), nil
	}
	return a, nil
}

// SingleToken finds the token a student means by a word: the word with a
// leading space (how words start mid-sentence), else the word itself.
func SingleToken(tk *tokenizer.Tokenizer, word string) (int32, bool) {
	for _, w := range []string{" " + word, word} {
		if ids := tk.EncodeIDs(w, false); len(ids) == 1 {
			return ids[0], true
		}
	}
	return 0, false
}
