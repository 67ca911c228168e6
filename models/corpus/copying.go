package corpus

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// The copying families (Options.Copying, the lesson model v3): stories
// that introduce their character in more ways than the story grammar does
// (at the very start of the text, after a comma, in a list, in dialogue),
// and lists of words that repeat themselves. The held-out side of Names
// uses sentence patterns that training never uses, so copying measured
// there is copying that generalises; every word of those patterns does
// occur in training, in other sentences.

// The copying families.
const (
	Names   Family = "names"
	Repeats Family = "repeats"
)

var (
	// nameIntros introduce the character in training.
	nameIntros = []string{
		"{N} was a {adj} {animal}.",
		"{N} the {animal} lived near the {place}.",
		"Meet {N}, a {adj} {animal} from the {place}.",
		"\"My name is {N},\" said the {adj} {animal}.",
		"The {animal} in this story, {N}, was very {adj}.",
		"There were three friends: {N}, a {animal2} and a {animal3}.",
		"Everyone knew {N}. {P} was a {adj} {animal}.",
		"{N}, {N}, {N}! The {animal2}s called {N} all day.",
	}
	// nameMiddles add sentences of other kinds to the story grammar's
	// (cuedSentence adds cued slots built from parts).
	nameMiddles = []string{
		"The {obj} belonged to {N}.",
		"Nobody was as {adj} as {N}.",
		"{P} shouted with joy.",
		"{P} cried a little, then {p} sang a song.",
		"{P} ate a snack in the morning.",
		"Next to the {place2}, a {color} {obj} fell.",
		"{P} waited by the {place2}, next to a {animal2}.",
		"{P} told the {animal2} a story, and everyone listened.",
		"{P} met a {animal2} whose {obj} was {color}.",
		"{P} shared {his} {obj} and could not find {his} way home.",
	}
	// The parts of cued sentences: a quote and who said it, someone doing
	// something to the character, the character doing something after an
	// opening phrase, the character in a list.
	utterances = []string{"I like this {obj}", "Let us play", "Good morning", "What a nice day", "Come with me", "I am hungry",
		"Look at the {color} {obj}", "This is fun", "I found a {obj}", "See you later", "Hello, {animal2}", "Thank you"}
	sayVerbs = strings.Fields("said replied answered whispered laughed called yelled sighed")
	toVerbs  = []string{"waved at", "smiled at", "looked at", "ran to", "talked to", "walked with", "sat next to", "played with", "sang to", "gave a {obj} to", "threw the {obj} to", "said hello to", "ran after", "hid from"}
	openers  = []string{"Later that day,", "After lunch,", "In the morning,", "At noon,", "Soon,", "Then,", "Suddenly,", "After a while,", "That evening,"}
	actions  = []string{"ran to the {place2}", "found a {color} {obj}", "laughed", "sat down", "went to sleep", "jumped up", "looked around", "picked up the {obj}"}
)

var (
	// heldIntros and heldMiddles are the held-out patterns.
	heldIntros = []string{
		"{N} was a {adj} {animal} who lived by the {place}.",
		"{N}, the {adj} {animal}, had a {color} {obj}.",
		"In the {place} there lived a {animal} whose name was {N}.",
		"\"I am {N},\" the {animal} told everyone.",
		"Two friends, a {animal2} and {N} the {animal}, lived by the {place}.",
	}
	heldMiddles = []string{
		"\"Look at this!\" shouted {N}.",
		"The {animal2} shared a snack with {N}.",
		"Nobody could find {N} that morning.",
		"All the {animal2}s waited for {N}.",
		"A {color} {obj} fell right next to {N}.",
		"\"Wait for me!\" cried {N}.",
	}
)

// HeldMiddles are the held-out sentence patterns of a held-out Names
// story's first cued mention ({N} the name), in a fixed order.
func HeldMiddles() []string { return slices.Clone(heldMiddles) }

// namesDoc is a story of the Names family: on the training side an intro
// of nameIntros and middles of both grammars; held out, an intro of
// heldIntros and a first cued mention in a held-out pattern, the rest as
// in training.
func namesDoc(r *rand.Rand, held bool) Doc {
	name := storyName(r, held)
	s := storyPartsFor(r, name)
	s["animal3"] = pick(r, animals)
	var b strings.Builder
	var spans []int
	pool := append(append([]string{}, middles...), nameMiddles...)
	for range 8 {
		pool = append(pool, cuedSentence(r))
	}
	pattern := ""
	if held {
		s.fill(&b, &spans, pick(r, heldIntros), false)
		b.WriteByte(' ')
		pattern = pick(r, heldMiddles)
		s.fill(&b, &spans, pattern, true)
	} else {
		s.fill(&b, &spans, pick(r, nameIntros), false)
	}
	for _, i := range r.Perm(len(pool))[:2+r.IntN(3)] {
		b.WriteByte(' ')
		s.fill(&b, &spans, pool[i], true)
	}
	b.WriteByte(' ')
	s.fill(&b, &spans, pick(r, endings), true)
	return Doc{Family: Names, Text: b.String(), Name: name, NameSpans: spans, Pattern: pattern}
}

// listWords are the words of the repeated lists.
var listWords = func() []string {
	var w []string
	for _, l := range [][]string{animals, colors, objects, places, adjs, feelings} {
		w = append(w, l...)
	}
	return append(w, strings.Fields("one two three four five six seven eight nine ten sun moon tree rain snow milk bread apple jam tea")...)
}()

// repeatsDoc is a list of random words (or invented names) written twice
// or three times, in one of a few forms: the later copies can only be
// predicted by copying the first.
func repeatsDoc(r *rand.Rand, held bool) Doc {
	n := 4 + r.IntN(16)
	items := make([]string, n)
	for i := range items {
		if r.IntN(4) == 0 {
			items[i] = storyName(r, held)
		} else {
			items[i] = pick(r, listWords)
		}
	}
	var list string
	switch r.IntN(3) {
	case 0:
		list = strings.Join(items, " ") + "."
	case 1:
		list = strings.Join(items, ", ") + "."
	default:
		list = strings.Join(items, "\n") + "\n"
	}
	sep := pick(r, []string{" ", "\n", " Again: ", "\nOnce more:\n"})
	text := list + sep + list
	if r.IntN(3) == 0 {
		text += sep + list
	}
	return Doc{Family: Repeats, Text: text}
}

// WithCopying adds the copying families (the lesson model v3's corpus):
// Names and Repeats, generated after every other family, so the other
// families' documents are the same as without them.
func (o Options) WithCopying() Options {
	b := map[Family]int{}
	for k, v := range o.Bytes {
		b[k] = v
	}
	b[Names], b[Repeats] = 700_000, 250_000
	o.Bytes = b
	return o
}

// cuedSentence is a training sentence with the name in a cued slot, built
// from parts: many verbs, quotes and openings, so that what a model learns
// is to copy the name into any slot of this kind, not these sentences.
func cuedSentence(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return "\"" + pick(r, utterances) + pick(r, []string{",\" ", "!\" ", "?\" "}) + pick(r, sayVerbs) + " {N}."
	case 1:
		return "The {animal2} " + pick(r, toVerbs) + " {N}."
	case 2:
		return pick(r, openers) + " {N} " + pick(r, actions) + "."
	case 3:
		return "The {animal2}, the {animal3} and {N} " + pick(r, actions) + "."
	}
	return "\"" + pick(r, utterances) + ", {N}!\" " + pick(r, sayVerbs) + " the {animal2}."
}
