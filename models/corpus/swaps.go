package corpus

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Swapped sentences put the name where another sentence has someone
// ("The cat sat on the dog." → "The cat sat on {N}."), so that in
// a story with a name in it, the name competes with "a" and "the" after
// any verb or preposition the corpus writes, not only after the verbs of
// the sentences made for names. A model that learns copying only in those
// sentences writes an article in sentences it has never seen.

// swapSources are the sentences whose noun phrases the name may take:
// those of what a character did, the story grammar's sentences about the
// character, and scene sentences, that have someone in them.
var swapSources = func() []string {
	var s []string
	for _, p := range freePreds {
		s = append(s, "{P} "+p+".")
	}
	for _, m := range slices.Concat(middles, nameMiddles) {
		if !strings.Contains(m, "{N}") {
			s = append(s, m)
		}
	}
	for _, a := range actions {
		s = append(s, "{opener} {p} "+a+".")
	}
	return slices.DeleteFunc(append(s, sceneSentences...), func(src string) bool {
		return len(nounPhrases(strings.Fields(src))) == 0
	})
}()

// sceneSentences are more sentences with someone in them, in many
// places: after verbs, prepositions and phrases the other families do
// not write.
var sceneSentences = []string{
	"{P} put the {obj} next to the {animal2}.", "The {person2} looked out of the window.", "A {animal2} hid under the bed.",
	"{P} sat on the step with the {person2}.", "The {person2} pointed at a {animal2}.", "{P} drew a map for the {person2}.",
	"The wind blew the {obj} toward the {person2}.", "{P} waited by the door for the {person2}.", "The {animal2} ran around the {person2}.",
	"{P} threw a stone at the {animal2}.", "A {person2} knocked on the door.", "{P} poured tea for a {person2}.",
	"The {person2} read the letter to the {animal2}.", "{P} hung the {obj} above the {animal2}.", "The {animal2} slept next to the {person2}.",
	"{P} made room for the {person2}.", "The {person2} closed the gate behind the {animal2}.", "{P} found a note from the {person2}.",
	"The rain fell on the {person2} all night.", "{P} gave the {animal2} some bread.", "The {person2} sang to the baby.",
	"{P} looked for the {person2} in the garden.", "A bird landed near the {person2}.", "{P} showed the {obj} to the {person2}.",
	"The {person2} sold the boat to a fisherman.", "{P} walked past the {person2} without a word.", "The clock woke the {person2}.",
	"{P} wrote a song about the {animal2}.", "The {animal2} chased the ball toward the {person2}.", "{P} carried the bag for the {person2}.",
	"The {person2} took a picture of the {animal2}.", "{P} was kind to the {animal2}.", "Everyone was happy for the {person2}.",
}

// Words a swapped noun phrase may hold: a determiner, any adjectives and
// a noun that names someone (a person or an animal), whose place a
// character's name may take.
var (
	swapDets  = wordSet("the The a A an some my our {his} {His} her his")
	swapAdjs  = wordSet(strings.Join(slices.Concat(adjs, colors, sceneAdjs), " ") + " {adj} {color} very big old loud tall long heavy")
	swapNouns = wordSet(strings.Join(slices.Concat(animals, people), " ") +
		" {animal} {animal2} {animal3} {person} {person2} baby fisherman")
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// swapSentence is a sentence of swapSources with one of its noun phrases
// (chosen at random) replaced by the name.
func swapSentence(r *rand.Rand) string {
	src := strings.Replace(pick(r, swapSources), "{opener}", pick(r, openers), 1)
	s, _ := swapNounPhrase(r, src)
	return s
}

// span is a noun phrase: words from to to (inclusive).
type span struct{ from, to int }

// nounPhrases are the noun phrases of words that name someone.
func nounPhrases(words []string) []span {
	var spans []span
	for i, w := range words {
		if !swapDets[w] {
			continue
		}
		j := i + 1
		for j < len(words) && swapAdjs[words[j]] {
			j++
		}
		if j < len(words) && swapNouns[strings.TrimRight(words[j], ".,!?")] {
			spans = append(spans, span{i, j})
		}
	}
	return spans
}

// swapNounPhrase replaces one noun phrase of a sentence that names
// someone with {N}; ok is false when it has none.
func swapNounPhrase(r *rand.Rand, sentence string) (string, bool) {
	words := strings.Fields(sentence)
	spans := nounPhrases(words)
	if len(spans) == 0 {
		return "", false
	}
	sp := pick(r, spans)
	last := words[sp.to]
	tail := last[len(strings.TrimRight(last, ".,!?")):]
	out := slices.Concat(words[:sp.from], []string{"{N}" + tail}, words[sp.to+1:])
	return strings.Join(out, " "), true
}
