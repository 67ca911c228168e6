package recipe

import (
	"strings"
	"testing"

	"stepthrough/models/corpus"
)

// The hand-written checks are held out: the last three words of every
// prompt, the words that cue the name, never occur in the copying corpus's
// training text, nor does any invented name.
func TestHandwrittenFormsAreHeldOut(t *testing.T) {
	cs, err := handwritten()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 30 {
		t.Fatalf("%d hand-written checks, want at least 30", len(cs))
	}
	o := Defaults()
	o.Copying = true
	var b strings.Builder
	train, _ := corpus.Split(o.corpus(), 0.1)
	for _, d := range train {
		b.WriteString(d.Text)
		b.WriteByte('\n')
	}
	text := b.String()
	for _, c := range cs {
		w := strings.Fields(c.Prompt)
		cue := strings.Join(w[len(w)-3:], " ")
		if strings.Contains(text, cue) {
			t.Errorf("%q, the cue of the check for %s, occurs in training", cue, c.Name)
		}
		if invented := c.Name[0] >= 'A' && c.Name[0] <= 'Z'; invented && (strings.Contains(text, " "+c.Name+" ") || strings.Contains(text, " "+c.Name+".")) {
			t.Errorf("the name %s occurs in training", c.Name)
		}
	}
}
