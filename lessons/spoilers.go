package lessons

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// contentWords are the stems of a text's words that can carry an answer,
// a number written as a word ("three") as its digits.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE.FindAllString(s, -1) {
		w = strings.TrimSuffix(strings.ToLower(w), "'s")
		if d, ok := digits[w]; ok {
			out[d] = true
			continue
		}
		if !stopWords[w] {
			out[stem(w)] = true
		}
	}
	return out
}

// digits are the number words a narration may write for a count a
// choice gives in digits ("one" is left out: it is more often a pronoun).
var digits = map[string]string{"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}

// numberWords are the words narration uses for a probability's bound.
var numberWords = map[float64][]string{0.5: {"half"}, 0.25: {"quarter"}, 0.75: {"three quarters"}, 0.1: {"tenth"}, 0.2: {"fifth"}, 1.0 / 3: {"third"}}

// givesAway reports how text a student reads before a step's question
// states the question's answer ("" when it does not):
//   - a choice question: at least half of the right choice's distinctive
//     words (its content words that neither the question nor a wrong
//     choice has) appear in the text (a number the choice states is such
//     a word), and at least least of them (a lesson's summary names the
//     lesson's subjects: one word of a choice there is no answer);
//   - a next-token question: the token a top or draws claim verifies,
//     quoted as lessons quote tokens, or a control token's name starting
//     a word ("<calc>": "calculator");
//   - a probability question: a p claim's bound, as a number or a word
//     (0.5: "half").
func givesAway(st Step, text string, least int) string {
	q := st.Question
	if q == nil {
		return ""
	}
	have := contentWords(text)
	switch q.Kind {
	case "choice":
		found, share := foundWords(q, q.Answer, have)
		if share < 0.5 || len(found) < least {
			return ""
		}
		return fmt.Sprintf("the right choice %q: the text has %v of its distinctive words", q.Answer, found)
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

// foundWords are the distinctive words of one of a choice question's
// choices (its content words that neither the question nor another
// choice has) that have holds, and their share of them (0 when it has
// none).
func foundWords(q *Question, choice string, have map[string]bool) ([]string, float64) {
	distinct := contentWords(choice)
	for w := range contentWords(q.Text) {
		delete(distinct, w)
	}
	for _, c := range q.Choices {
		if c == choice {
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
	if len(distinct) == 0 {
		return nil, 0
	}
	return found, float64(len(found)) / float64(len(distinct))
}

// onlyDetailed reports a choice question whose right choice is the only
// detailed one: at least DetailedWords content words, and at least twice
// as many as every wrong choice has ("" when the choices are alike). A
// student picks the long, careful answer without knowing it.
func onlyDetailed(q *Question) string {
	if q == nil || q.Kind != "choice" {
		return ""
	}
	right, most := len(contentWords(q.Answer)), 0
	for _, c := range q.Choices {
		if c != q.Answer {
			most = max(most, len(contentWords(c)))
		}
	}
	if right >= DetailedWords && right >= 2*most {
		return fmt.Sprintf("the right choice %q is the only detailed one (%d content words; the wrong ones at most %d): make the wrong choices as detailed", q.Answer, right, most)
	}
	return ""
}

// DetailedWords is how many content words make a choice detailed.
const DetailedWords = 6

// Spoiler is a question a lesson answers before asking it.
type Spoiler struct {
	File  string
	Step  int // from 0
	Line  int // the step's line
	Title string
	Why   string
}

func (s Spoiler) String() string {
	return fmt.Sprintf("%s:%d: step %d (%q): %s", s.File, s.Line, s.Step+1, s.Title, s.Why)
}

// Spoilers checks every question of l against what a student reads before
// answering it: the lesson's summary (the list shows it), the narration
// above the question, and the step before's whole text (its narration and
// the explanation after its question). Each question whose answer that
// text states (givesAway), or whose right choice is the only detailed one
// (onlyDetailed), is a Spoiler.
func Spoilers(l *Lesson) []Spoiler {
	var out []Spoiler
	for i, st := range l.Steps {
		if st.Question == nil {
			continue
		}
		type text struct {
			where, text string
			least       int
		}
		before := []text{{"the lesson's summary", l.Summary, 2}, {"the narration above it", st.Narration, 1}}
		if i > 0 {
			prev := l.Steps[i-1]
			before = append(before, text{fmt.Sprintf("step %d (%q), the step before", i, prev.Title), prev.Narration + "\n" + prev.After, 1})
		}
		for _, b := range before {
			if why := givesAway(st, b.text, b.least); why != "" {
				out = append(out, Spoiler{l.File, i, st.Line, st.Title, fmt.Sprintf("%s gives away %s before %q", b.where, why, st.Question.Text)})
			}
		}
		if why := onlyDetailed(st.Question); why != "" {
			out = append(out, Spoiler{l.File, i, st.Line, st.Title, why})
		}
	}
	return out
}
