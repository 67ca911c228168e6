package lessons

import (
	"fmt"
	"slices"
	"testing"
)

// No built-in lesson gives a question's answer away before the question
// (in its summary, the narration above it or the step before), nor makes
// its right choice the only detailed one: the explanation comes after.
func TestNoBuiltinLessonGivesTheAnswerAway(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	questions := 0
	for _, name := range Names(all) {
		for _, st := range all[name].Steps {
			if st.Question != nil {
				questions++
			}
		}
		t.Run(name, func(t *testing.T) {
			for _, s := range Spoilers(all[name]) {
				t.Error(s)
			}
		})
	}
	if len(all) < 28 || questions < 30 {
		t.Errorf("only %d lessons, %d questions in the built-in lessons", len(all), questions)
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
		{"a count in words", "This tokenizer falls back to bytes, three tokens per character.\n? choice: How many tokens does the single character こ take here?\n- 1\n- 2\n- (x) 3\n", true},
		{"a count after", "This tokenizer falls back to bytes.\n? choice: How many tokens does the single character こ take here?\n- 1\n- 2\n- (x) 3\nThree tokens per character.\n", false},
		{"no hint", "expect: p \" orange\" < 0.5\nThe colour can be many things.\n? probability: What probability does the most likely token get?\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("t.md", []byte(head+tt.step))
			if err != nil {
				t.Fatal(err)
			}
			if why := givesAway(l.Steps[0], l.Steps[0].Narration, 1); (why != "") != tt.spoils {
				t.Errorf("gives away: %q, want %v", why, tt.spoils)
			}
		})
	}
}

// Spoilers reads what comes before a question: the step before's
// explanation (the text after its question) and its narration, the
// lesson's summary; and it flags a right choice that alone is detailed.
// The same lessons with the text elsewhere, or the choices alike, pass.
func TestSpoilersReadTheStepBeforeAndTheChoices(t *testing.T) {
	const head = "---\ntitle: T\nsummary: %s\nmodel: lesson.gguf\n---\n## One\nprompt: \"The capital of France is\"\n%s\n## Two\n%s\n"
	const ask = "? choice: What does temperature do to the ranking of tokens?\n- Low temperature moves rare tokens to the top\n- (x) Nothing: it only sharpens or flattens the same ranking\n- High temperature removes tokens\n"
	for _, tt := range []struct {
		name, summary, one, two string
		spoils                  int
	}{
		{"the step before's explanation", "Temperature.", "? choice: Is it a dial?\n- (x) Yes\n- No\nIt only sharpens or flattens the same ranking.", ask, 1},
		{"the step before's narration", "Temperature.", "It only sharpens or flattens the same ranking.", ask, 1},
		{"the summary", "Temperature only sharpens or flattens a ranking.", "A step.", ask, 1},
		{"one word in the summary", "Temperature, and the ranking of tokens.", "A step.", ask, 0},
		{"after the question", "Temperature.", "A step.", ask + "It only sharpens or flattens the same ranking.", 0},
		{"two steps before", "Temperature.", "A step.", "A step.\n## Three\n" + ask, 0},
		{"the only detailed choice", "Order.", "A step.", "? choice: How does it know the order of the words?\n- It does not\n- (x) Inside attention, each query and key is turned by an angle that grows with its position\n- The tokenizer numbers them\n", 1},
		{"choices alike", "Order.", "A step.", "? choice: How does it know the order of the words?\n- It does not: attention reads the tokens as a set, and any order gives the same scores\n- (x) Inside attention, each query and key is turned by an angle that grows with its position\n- The tokenizer writes each token's position into its id, and the embedding reads it from there\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("t.md", []byte(fmt.Sprintf(head, tt.summary, tt.one, tt.two)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range Spoilers(l) {
				if s.Step > 0 {
					got = append(got, s.String())
				}
			}
			if len(got) != tt.spoils {
				t.Errorf("%d spoilers, want %d: %q", len(got), tt.spoils, got)
			}
		})
	}
}

// A question's step shows, once it is answered, the stage whose panel
// holds the answer: a next-token question the scores or probabilities it
// asks about (not the tokenize panel), a probability question the
// probabilities, a survivors question the sampler's steps.
func TestBuiltinQuestionsShowTheirAnswersStage(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	shows := map[string][]string{"next-token": {"logits", "softmax", "sampler", "sample"}, "probability": {"softmax", "sampler"}, "survivors": {"sampler"}}
	for _, name := range Names(all) {
		for i, st := range all[name].Steps {
			if q := st.Question; q != nil && shows[q.Kind] != nil && !slices.Contains(shows[q.Kind], st.Stage) {
				t.Errorf("%s step %d (%q): a %s question at the %s stage; answered, it should show %v", name, i+1, st.Title, q.Kind, st.Stage, shows[q.Kind])
			}
		}
	}
}
