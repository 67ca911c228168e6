package lessons

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stopWords carry no answer: articles, pronouns, auxiliaries, and the
// little words every choice shares ("only", "same", "nothing").
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but of to in on at by for with from as is are was were be been being
		it its it's this that these those there here what which who whom how why when where do does did done
		so such can cannot could would should will may might must has have had having into out over under about
		again once also just very most least each every any all some other another one two three many much few own
		our your their his her he she they we you i me my them us if because while until both either neither nor
		up down off too than then only same nothing yet`) {
		stopWords[w] = true
	}
}

var wordRE = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_'.]*[A-Za-z0-9_]|[A-Za-z0-9]`)

// stem is a word's crude stem: lower case, one plural or verb ending and
// a final e dropped ("writes", "writing" → "writ").
func stem(w string) string {
	w = strings.ToLower(w)
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			break
		}
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = strings.TrimSuffix(w, "e")
	}
	return w
}

// contentWords are the stems of a text's words that can carry an answer.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE.FindAllString(s, -1) {
		w = strings.TrimSuffix(strings.ToLower(w), "'s")
		if !stopWords[w] {
			out[stem(w)] = true
		}
	}
	return out
}

// numberWords are the words narration uses for a probability's bound.
var numberWords = map[float64][]string{0.5: {"half"}, 0.25: {"quarter"}, 0.75: {"three quarters"}, 0.1: {"tenth"}, 0.2: {"fifth"}, 1.0 / 3: {"third"}}

// givesAway reports how a step's narration before its question states
// the question's answer ("" when it does not):
//   - a choice question: at least half of the right choice's distinctive
//     words (its content words that neither the question nor a wrong
//     choice has) appear in the narration (a number the choice states is
//     such a word);
//   - a next-token question: the token a top or draws claim verifies,
//     quoted as lessons quote tokens, or a control token's name starting
//     a word ("<calc>": "calculator");
//   - a probability question: a p claim's bound, as a number or a word
//     (0.5: "half").
func givesAway(st Step) string {
	q := st.Question
	if q == nil {
		return ""
	}
	text := st.Narration
	have := contentWords(text)
	switch q.Kind {
	case "choice":
		distinct := contentWords(q.Answer)
		for w := range contentWords(q.Text) {
			delete(distinct, w)
		}
		for _, c := range q.Choices {
			if c == q.Answer {
				continue
			}
			for w := range contentWords(c) {
				delete(distinct, w)
			}
		}
		var found []string
		for w := range distinct {
			if have[w] {
				found = append(found, w)
			}
		}
		slices.Sort(found)
		if len(distinct) > 0 && 2*len(found) >= len(distinct) {
			return fmt.Sprintf("the right choice %q: the narration has %v of its distinctive words", q.Answer, found)
		}
	case "next-token":
		for _, c := range st.Claims {
			if c.Kind != "top" && c.Kind != "draws" {
				continue
			}
			if strings.Contains(text, strconv.Quote(c.Text)) {
				return fmt.Sprintf("the token %q the engine reveals", c.Text)
			}
			if name := strings.Trim(c.Text, "<|>/"); strings.HasPrefix(c.Text, "<") && len(name) >= 3 {
				for _, w := range wordRE.FindAllString(text, -1) {
					if strings.HasPrefix(strings.ToLower(w), strings.ToLower(name)) {
						return fmt.Sprintf("the token %q the engine reveals, as %q", c.Text, w)
					}
				}
			}
		}
	case "probability":
		lower := strings.ToLower(text)
		for _, c := range st.Claims {
			if c.Kind != "p" {
				continue
			}
			forms := append([]string{strconv.FormatFloat(c.Value, 'g', -1, 64), strconv.FormatFloat(100*c.Value, 'g', -1, 64) + "%"}, numberWords[c.Value]...)
			for _, f := range forms {
				if have[stem(f)] || strings.Contains(lower, f) {
					return fmt.Sprintf("the probability's bound %g the question hides, as %q", c.Value, f)
				}
			}
		}
	}
	return ""
}

// No built-in lesson's narration gives a question's answer away before
// the question: the explanation comes after it.
func TestNoBuiltinNarrationGivesTheAnswerAway(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	questions := 0
	for _, name := range Names(all) {
		for i, st := range all[name].Steps {
			if st.Question == nil {
				continue
			}
			questions++
			t.Run(fmt.Sprintf("%s/step%d", name, i+1), func(t *testing.T) {
				if why := givesAway(st); why != "" {
					t.Errorf("%s step %d (%q): the narration before %q gives away %s; move that text after the question", name, i+1, st.Title, st.Question.Text, why)
				}
			})
		}
	}
	if questions < 30 {
		t.Errorf("only %d questions in the built-in lessons", questions)
	}
}

// The check catches an answer stated before its question, in each of the
// ways the built-in lessons once did, and passes the same step with the
// explanation after the question.
func TestGivesAwayCatchesAnswersBeforeQuestions(t *testing.T) {
	head := "---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: \"The capital of France is\"\n"
	for _, tt := range []struct {
		name, step string
		spoils     bool
	}{
		{"tool call named", "expect: top \"<calc>\"\nThe most likely first token of the reply opens a calculator call.\n? next-token: What will the model write first?\n- \"<calc>\"\n- \"3\"\n", true},
		{"tool call after", "expect: top \"<calc>\"\nThe system message offers a tool.\n? next-token: What will the model write first?\n- \"<calc>\"\n- \"3\"\nIt opens a calculator call.\n", false},
		{"token quoted", "expect: top \" Par\"\nThe top token is \" Par\".\n? next-token: Which token scores highest?\n", true},
		{"end of turn", "The model writes its answer and then the end-of-turn token; the runtime stops there.\n? choice: Who decides where a chat reply ends?\n- The API cuts it after a fixed number of tokens\n- (x) The model, by writing the end-of-turn token the runtime stops at\n- The user's browser\n", true},
		{"end of turn after", "Step to the end of the reply.\n? choice: Who decides where a chat reply ends?\n- The API cuts it after a fixed number of tokens\n- (x) The model, by writing the end-of-turn token the runtime stops at\n- The user's browser\nThe model writes the end-of-turn token; the runtime stops there.\n", false},
		{"ranking", "Above 1 the distribution flattens. The order of the tokens never changes.\n? choice: What does temperature do to the ranking of tokens?\n- Low temperature moves rare tokens to the top\n- (x) Nothing: it only sharpens or flattens the same ranking\n- High temperature removes tokens\n", true},
		{"more tokens", "At 2 the distribution is flattened before top-p looks at it, so more tokens are needed.\n? choice: With temperature 2 before top-p 0.5, top-p keeps\n- Fewer tokens\n- (x) More tokens, or the same number\n- Exactly the same tokens, always\n", true},
		{"copied name", "Attention carried it from earlier in the text.\n? choice: How did the model know the name?\n- It memorised that dogs are called Zorvik\n- (x) Attention carried the name from earlier in this text\n- It guessed a common name\n", true},
		{"a number", "It is 140 GB of weights.\n? choice: How much memory do the weights take?\n- 70 GB\n- (x) 140 GB\n", true},
		{"half", "expect: p \" orange\" < 0.5\nThe most likely one gets less than half the probability.\n? probability: What probability does the most likely token get?\n", true},
		{"no hint", "expect: p \" orange\" < 0.5\nThe colour can be many things.\n? probability: What probability does the most likely token get?\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("t.md", []byte(head+tt.step))
			if err != nil {
				t.Fatal(err)
			}
			if why := givesAway(l.Steps[0]); (why != "") != tt.spoils {
				t.Errorf("gives away: %q, want %v", why, tt.spoils)
			}
		})
	}
}
