package corpus

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A swapped sentence replaces a whole noun phrase that names someone
// (determiner, adjectives, noun) with the name, and keeps the punctuation
// after it.
func TestSwapNounPhrase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{P} threw a stone at the {animal2}.", "{P} threw a stone at {N}."},
		{"A dog sat on the cat.", ""}, // two phrases: either
		{"{P} put it on the old {color} {animal}.", "{P} put it on {N}."},
		{"The {person2} looked outside.", "{N} looked outside."},
		{"{P} gave {his} king away, and smiled.", "{P} gave {N} away, and smiled."},
		{"{P} laughed at the cup.", "none"}, // a thing, not someone
		{"{P} was very tall.", "none"},      // no noun after the adjectives
	} {
		t.Run(c.in, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			got, ok := swapNounPhrase(r, c.in)
			switch c.want {
			case "none":
				if ok {
					t.Errorf("swapped %q, want no noun phrase", got)
				}
			case "":
				if got != "{N} sat on the cat." && got != "A dog sat on {N}." {
					t.Errorf("got %q", got)
				}
			default:
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
			}
		})
	}
}

// Every scene sentence has someone to swap, every
// swapped sentence names the character once, and no story of the copying
// corpus leaves a slot unfilled.
func TestSwapSentence(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, src := range sceneSentences {
		if len(nounPhrases(strings.Fields(src))) == 0 {
			t.Errorf("scene sentence %q has no one to swap", src)
		}
	}
	if len(swapSources) < 30 {
		t.Errorf("%d sentences to swap, want at least 30", len(swapSources))
	}
	for range 1000 {
		if s := swapSentence(r); strings.Count(s, "{N}") != 1 {
			t.Fatalf("%q names the character %d times", s, strings.Count(s, "{N}"))
		}
	}
	o := Default(1).WithCopying().Scaled(0.05)
	for _, d := range Generate(o) {
		if f := d.Family; (f == Names || f == Repeats || f == Stories) && strings.ContainsAny(d.Text, "{}") {
			t.Fatalf("%s document with an unfilled slot: %q", f, d.Text)
		}
	}
}

// A doer inside a sentence loses its capital unless it is "I" or a name.
func TestMidSentence(t *testing.T) {
	for in, want := range map[string]string{"The old king": "the old king", "We": "we", "I": "I", "Tom": "Tom", "Somebody": "somebody"} {
		if diff := cmp.Diff(want, midSentence(in)); diff != "" {
			t.Errorf("midSentence(%q) (-want +got)\n%s", in, diff)
		}
	}
}
