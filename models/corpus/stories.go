package corpus

import (
	"math/rand/v2"
	"strings"
)

// Syllables that invented names are made of: every consonant-vowel and
// consonant-vowel-consonant combination (1,710), split by hash into a
// training set and a held-out set (about one in five). Names from so many
// syllables cannot be guessed from their first piece: the only way to
// predict a later mention is to copy it. Held-out names use only held-out
// syllables, so no held-out name can have been seen in training.
var (
	TrainSyllables, HeldOutSyllables = syllables()
	// RecurringNames are the control: a few fixed names used across many
	// training stories, which a model can recall rather than copy.
	RecurringNames = strings.Fields("Tom Mia Leo Zoe Sam Lily Max Ruby")
)

// heldByHash says whether a syllable is on the held-out side: about one
// in five, by hash.
func heldByHash(s string) bool { return Hash(s)%5 == 0 }

func syllables() (train, held []string) {
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	add := func(s string) {
		if heldByHash(s) {
			held = append(held, s)
		} else {
			train = append(train, s)
		}
	}
	for _, c := range cons {
		for _, v := range vows {
			add(string(c) + string(v))
			for _, e := range cons {
				add(string(c) + string(v) + string(e))
			}
		}
	}
	return train, held
}

// InventName makes a name of two or three syllables.
func InventName(r *rand.Rand, syllables []string) string {
	n := 2 + r.IntN(2)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(pick(r, syllables))
	}
	return title(b.String())
}

var (
	animals  = strings.Fields("cat dog bunny bear fox mouse duck frog bird lion owl pig cow horse goat fish")
	colors   = strings.Fields("red blue green yellow pink purple orange white black brown")
	objects  = strings.Fields("kite ball hat book box cup drum boat car doll sock bag toy shell bell")
	places   = strings.Fields("park garden forest beach river school farm hill lake shop")
	adjs     = strings.Fields("little happy small brave kind shy funny quiet clever sleepy")
	feelings = strings.Fields("happy sad tired glad proud excited")
)

// storyParts fill a story's slots by name: {N} is the name (always
// preceded by a space, so it is the same tokens at every mention), {P} and
// {p} the pronoun, {his}, {animal}, {color}, … the story's other choices.
type storyParts map[string]string

func (s storyParts) fill(b *strings.Builder, spans *[]int, tmpl string, cued bool) {
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			return
		}
		b.WriteString(tmpl[:i])
		j := strings.IndexByte(tmpl, '}')
		key := tmpl[i+1 : j]
		tmpl = tmpl[j+1:]
		if key == "N" && cued {
			*spans = append(*spans, b.Len())
		}
		v, ok := s[key]
		if !ok {
			v = "{" + key + "}" // a slot the story has no part for stays visible, for tests to find
		}
		b.WriteString(v)
	}
}

// The grammar. Intros introduce the name; in the middle sentences and
// endings every {N} follows words that in this grammar are only ever
// followed by the name, so those mentions are cued.
var (
	intros = []string{
		"Once upon a time, there was a {adj} {animal} named {N}.",
		"In a small town, there lived a {adj} {animal}. The {animal} was called {N}.",
		"This is a story about {N}, a {adj} {animal}.",
		"There once was a {animal} called {N}.",
		"Long ago, a {adj} {animal} named {N} lived near the {place}.",
	}
	middles = []string{
		"Every morning, {N} played in the {place}.",
		"{P} had a {color} {obj}.",
		"One day, {N} found a {color} {obj} near the {place}.",
		"\"I like this {obj},\" said {N}.",
		"\"Where is my {obj}?\" asked {N}.",
		"{P} was very {feeling}.",
		"Then {N} saw a {animal2} by the {place2}.",
		"The {animal2} waved at {N}.",
		"Everyone in the {place} liked {N}.",
		"After lunch, {N} took a nap.",
		"{P} gave {his} {obj} to a {animal2}.",
		"A {animal2} asked to play with {N}.",
		"{P} went to the {place2} with {his} {obj}.",
	}
	endings = []string{
		"At the end of the day, {N} went home.",
		"That night, {N} dreamed about the {obj}.",
		"{P} smiled. The end.",
		"It was a good day for {N}.",
	}
)

func storyPartsFor(r *rand.Rand, name string) storyParts {
	he, his := "he", "his"
	if r.IntN(2) == 0 {
		he, his = "she", "her"
	}
	return storyParts{"N": name, "P": title(he), "p": he, "his": his,
		"animal": pick(r, animals), "animal2": pick(r, animals), "color": pick(r, colors), "obj": pick(r, objects),
		"adj": pick(r, adjs), "feeling": pick(r, feelings), "place": pick(r, places), "place2": pick(r, places)}
}

// storyName picks the character's name: a recurring one in a quarter of
// training stories, else invented.
func storyName(r *rand.Rand, held bool) string {
	if held {
		return InventName(r, HeldOutSyllables)
	}
	if r.IntN(4) == 0 {
		return pick(r, RecurringNames)
	}
	return InventName(r, TrainSyllables)
}

// StoryText writes a story about name: an intro, three to five middle
// sentences, an ending. It returns the text and the cued mentions.
func StoryText(r *rand.Rand, name string) (string, []int) {
	s := storyPartsFor(r, name)
	var b strings.Builder
	var spans []int
	s.fill(&b, &spans, pick(r, intros), false)
	n := 3 + r.IntN(3)
	for _, i := range r.Perm(len(middles))[:n] {
		b.WriteByte(' ')
		s.fill(&b, &spans, middles[i], true)
	}
	b.WriteByte(' ')
	s.fill(&b, &spans, pick(r, endings), true)
	return b.String(), spans
}

func story(r *rand.Rand, held bool) Doc {
	name := storyName(r, held)
	text, spans := StoryText(r, name)
	return Doc{Family: Stories, Text: text, Name: name, NameSpans: spans}
}
