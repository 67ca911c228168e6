package corpus

import (
	"math/rand/v2"
	"slices"
	"strconv"
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
	// nameIntros introduce the character in training, in many ways; a
	// third of them begin the text with the name, which then has no space
	// before it, so a later mention (after a space) is other tokens than
	// the first.
	nameIntros = []string{
		"{N} was a {adj} {animal}.",
		"{N} the {animal} lived near the {place}.",
		"{N} had a {color} {obj} and a big smile.",
		"{N} loved the {place} more than anything.",
		"{N}, a {adj} {animal}, lived in the {place}.",
		"{N} lived in the {place} with {his} family.",
		"Meet {N}, a {adj} {animal} from the {place}.",
		"\"My name is {N},\" said the {adj} {animal}.",
		"The {animal} in this story, {N}, was very {adj}.",
		"There were three friends: {N}, a {animal2} and a {animal3}.",
		"Everyone knew {N}. {P} was a {adj} {animal}.",
		"{N}, {N}, {N}! The {animal2}s called {N} all day.",
		"\"Hello, my name is {N},\" said a {adj} {animal}.",
		"\"Call me {N},\" said the {animal}.",
		"\"This is {N},\" said the {animal2}. {N} was a {adj} {animal}.",
		"The {animal2} had a friend, {N}, a {adj} {animal}.",
		"Near the {place} lived {N}, a {adj} {animal}.",
		"This {adj} {animal} was named {N}.",
		"Here are {N}, a {animal2} and a {animal3}.",
		"{N} and a {animal2} lived near the {place}.",
		"Four {animal2}s and {N} the {animal} played by the {place}.",
		"Three friends lived by the {place}: a {animal2}, a {animal3} and {N} the {animal}.",
		"Some {animal2}s had a friend named {N}.",
		"Every {animal2} in the {place} knew {N} the {animal}.",
		"\"Hi! I'm {N},\" said a {adj} {animal}.",
		"\"Everyone calls me {N},\" said the {animal}.",
		"\"Do you know {N}?\" asked the {animal2}. {N} was a {adj} {animal}.",
		"\"{N} is my name,\" said the {adj} {animal}.",
		"The {animal} was called {N}.",
		"Its name was {N}. {P} was a {adj} {animal}.",
		"Say hello to {N}, a {adj} {animal}.",
		"{N}! That was the name of a {adj} {animal}.",
		"Once there was a {animal} called {N}.",
	}
	// nameMiddles add sentences of other kinds to the story grammar's
	// (cuedSentence adds cued slots built from parts).
	nameMiddles = []string{
		"The {obj} belonged to {N}.",
		"Nobody was as {adj} as {N}.",
		"{P} shouted with joy.",
		"{P} cried a little, then {p} sang a song.",
		"{P} ate a snack in the morning.",
		"{P} told the {animal2} a story, and everyone listened.",
		"{P} met a {animal2} whose {obj} was {color}.",
		"{P} shared {his} {obj} with a {animal2}.",
		"The {animal2}s cheered and clapped.",
	}
	// The parts of cued sentences: a quote and who said it, someone doing
	// something to the character, the character doing something after an
	// opening phrase, the character in a list.
	utterances = []string{"I like this {obj}", "Let us play", "Good morning", "What a nice day", "Come with me", "I am hungry",
		"Look at the {color} {obj}", "This is fun", "I found a {obj}", "See you later", "Hello, {animal2}", "Thank you",
		"Look at this", "Wait for me", "Can I play too", "Where are you"}
	sayVerbs = strings.Fields("said replied answered whispered laughed called yelled sighed shouted cried asked")
	doers    = []string{"The {animal2}", "A young {animal2}", "Everyone", "Nobody", "All the {animal2}s", "The {animal2} and the {animal3}", "Two {animal2}s", "The old {animal2}"}
	toVerbs  = []string{"waved at", "smiled at", "looked at", "ran to", "talked to", "walked with", "sat next to", "played with", "sang to",
		"gave a {obj} to", "threw the {obj} to", "said hello to", "ran after", "hid from", "waited for", "fed", "woke up",
		"looked for", "helped", "hugged", "followed", "thanked", "visited", "chased", "watched", "listened to", "laughed with", "danced with",
		"showed the {obj} to"}
	trails  = []string{"", "", " in the {place2}", " that morning", " all day", " after lunch", " again"}
	openers = []string{"Later that day,", "After lunch,", "In the morning,", "At noon,", "Soon,", "Then,", "Suddenly,", "After a while,", "That evening,"}
	actions = []string{"ran to the {place2}", "found a {color} {obj}", "laughed", "sat down", "went to sleep", "jumped up", "looked around", "picked up the {obj}"}
)

var (
	// heldIntros and heldMiddles are the held-out patterns. Each held-out
	// middle puts the name after a quote and a verb of saying, or after
	// someone and a verb that takes it, as training does, but in words
	// that never precede a name in training: two of them in a verb
	// training never puts before a name ("shared a snack with", "cheered
	// for"), the others joining parts that training never joins. heldKeys
	// are the joins training leaves out: those of the held-out middles,
	// and "Two dogs waited for", which would hold "dogs waited for" too.
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
		"Everyone cheered for {N} that morning.",
		"All the {animal2}s waited for {N}.",
		"A young {animal2} sat next to {N}.",
		"\"Wait for me!\" cried {N}.",
	}
	heldKeys = map[string]bool{
		sayKey("Look at this", "shouted"): true, sayKey("Wait for me", "cried"): true,
		doKey("All the {animal2}s", "waited for"): true, doKey("Two {animal2}s", "waited for"): true,
		doKey("A young {animal2}", "sat next to"): true,
	}
)

func sayKey(utterance, verb string) string { return utterance + "|" + verb }
func doKey(doer, verb string) string       { return doer + "|" + verb }

// HeldMiddles are the held-out sentence patterns of a held-out Names
// story's first cued mention ({N} the name), in a fixed order.
func HeldMiddles() []string { return slices.Clone(heldMiddles) }

// namesDoc is a story of the Names family: on the training side an intro
// of nameIntros and middles of both grammars; held out, an intro of
// heldIntros and a first cued mention in a held-out pattern, the rest as
// in training. Its character's name is always invented: the story
// grammar's recurring names can be recalled, and here only copying may
// predict the name.
func namesDoc(r *rand.Rand, held bool) Doc {
	name := copyName(r, held)
	s := storyPartsFor(r, name)
	s["animal3"], s["person2"], s["His"] = pick(r, animals), pick(r, people), title(s["his"])
	var b strings.Builder
	var spans []int
	pool := append(append([]string{}, middles...), nameMiddles...)
	for range 16 {
		pool = append(pool, cuedSentence(r), freeSentence(r))
	}
	for range 16 {
		pool = append(pool, swapSentence(r))
	}
	if !held {
		for range 4 {
			pool = append(pool, filler(r))
		}
	}
	pattern := ""
	switch {
	case !held && r.IntN(3) == 0:
		startStory(r, s, &b, &spans)
	case held:
		s.fill(&b, &spans, pick(r, heldIntros), false)
		b.WriteByte(' ')
		pattern = pick(r, heldMiddles)
		s.fill(&b, &spans, pattern, true)
	default:
		s.fill(&b, &spans, trainingIntro(r, s), false)
	}
	for _, i := range r.Perm(len(pool))[:3+r.IntN(3)] {
		b.WriteByte(' ')
		s.fill(&b, &spans, pool[i], true)
	}
	b.WriteByte(' ')
	s.fill(&b, &spans, pick(r, endings), true)
	return Doc{Family: Names, Text: b.String(), Name: name, NameSpans: spans, Pattern: pattern}
}

// trainingIntro is the first sentence of a training Names story: one of
// nameIntros, a free intro, or (one in eight) a dialogue in which the
// character and someone else ({M}) give their names and the other greets
// the character. In one story in eight the character has a title, which
// every mention repeats ("Mr. N").
func trainingIntro(r *rand.Rand, s storyParts) string {
	if r.IntN(8) == 0 {
		s["N"] = pick(r, titles) + " " + s["N"]
	}
	switch r.IntN(8) {
	case 0:
		s["M"] = wideName(r)
		return pick(r, dialogueIntros)
	case 1, 2, 3:
		return freeIntro(r)
	}
	return pick(r, nameIntros)
}

var (
	titles         = strings.Fields("Mr. Mrs. Miss Ms. Dr. Captain Uncle Aunt Professor King Queen Sir Lady Grandma Grandpa Old Little Farmer Doctor Princess")
	dialogueIntros = []string{
		"\"Hi, I am {N},\" said a {animal}. \"And I am {M},\" said a {animal2}. \"Welcome, {N}!\" said {M}.",
		"Hello, I am {N}. Who are you? I am {M}. Pleased to see you, {N}.",
		"\"Who are you?\" asked {M}. \"I am {N},\" said the {animal}. \"Hello, {N},\" said {M}.",
		"{M} met {N} at the {place}. \"Good to see you, {N},\" said {M}.",
		"My name is {M}. This is my friend {N}. Say hi, {N}!",
		"\"I am {M}. What is your name?\" \"My name is {N}.\" \"How are you, {N}?\"",
		"Hi, {M} here. Is that you, {N}? Yes, it is {N}.",
	}
)

// listWords are the words of the repeated lists.
var listWords = func() []string {
	var w []string
	for _, l := range [][]string{animals, colors, objects, places, adjs, feelings} {
		w = append(w, l...)
	}
	w = append(w, strings.Fields("one two three four five six seven eight nine ten sun moon tree rain snow milk bread apple jam tea")...)
	return slices.Concat(w, commonWords, longWords)
}()

// repeatsDoc is a list of random words (or invented names) written twice
// or three times, in one of a few forms, or a short passage of sentences
// about several characters written twice: the later copies can only be
// predicted by copying the first.
func repeatsDoc(r *rand.Rand, held bool) Doc {
	list := randomList(r, held)
	if r.IntN(3) == 0 {
		list = passage(r, held)
	}
	sep := pick(r, []string{" ", "\n", " Again: ", "\nOnce more:\n", " Once more: ", " One more time: ", "\nRepeat:\n", " I will say it twice. "})
	text := list + sep + list
	if r.IntN(3) == 0 {
		text += sep + list
	}
	return Doc{Family: Repeats, Text: text}
}

// randomList is 4 to 19 items joined in one of three ways: list words,
// names and invented lowercase words, or (one list in eight) numbers.
func randomList(r *rand.Rand, held bool) string {
	items := make([]string, 4+r.IntN(16))
	digits := r.IntN(8) == 0
	for i := range items {
		switch {
		case digits:
			items[i] = strconv.Itoa(r.IntN(10))
			if r.IntN(3) == 0 {
				items[i] = strconv.Itoa(r.IntN(1000))
			}
		case r.IntN(4) == 0:
			items[i] = copyName(r, held)
		case r.IntN(5) == 0:
			items[i] = strings.ToLower(copyName(r, held))
		default:
			items[i] = pick(r, listWords)
		}
	}
	switch r.IntN(3) {
	case 0:
		return strings.Join(items, " ") + "."
	case 1:
		return strings.Join(items, ", ") + "."
	}
	return strings.Join(items, "\n") + "\n"
}

// passage is two to four sentences, each introducing its own character
// in a form where a new name belongs (the name first, or after an opening
// word), never in a slot that in a story holds a name already met: there, a
// model should learn to copy, not to invent.
func passage(r *rand.Rand, held bool) string {
	var b strings.Builder
	var spans []int
	for k := range 2 + r.IntN(3) {
		if k > 0 {
			b.WriteByte(' ')
		}
		s := storyPartsFor(r, copyName(r, held))
		s.fill(&b, &spans, nameFirst(r), false)
	}
	return b.String()
}

// copyName is an invented name of the copying families: held out, of the
// held-out syllables (a quarter of them beginning with a held-out vowel
// syllable); in training, a wide one.
func copyName(r *rand.Rand, held bool) string {
	switch {
	case held && r.IntN(4) == 0:
		return title(pick(r, heldVowelSyllables) + pick(r, HeldOutSyllables))
	case held:
		return InventName(r, HeldOutSyllables)
	}
	return wideName(r)
}

// WithCopying adds the copying families (the lesson model v3's corpus):
// Names and Repeats, generated after every other family, so the other
// families' documents are the same as without them.
func (o Options) WithCopying() Options {
	b := map[Family]int{}
	for k, v := range o.Bytes {
		b[k] = v
	}
	b[Names], b[Repeats] = 2_400_000, 800_000
	o.Bytes = b
	return o
}

// cuedSentence is a training sentence with the name in a cued slot, built
// from parts: many doers, verbs, quotes and openings, so that what a model
// learns is to copy the name into any slot of this kind, not these
// sentences. No sentence joins the parts of a held-out middle (heldKeys).
func cuedSentence(r *rand.Rand) string {
	for {
		switch r.IntN(6) {
		case 0, 1:
			u, v := pick(r, utterances), pick(r, sayVerbs)
			if !heldKeys[sayKey(u, v)] {
				return "\"" + u + pick(r, []string{",\" ", "!\" ", "?\" "}) + v + " {N}."
			}
		case 2, 3:
			d, v := pick(r, doers), pick(r, toVerbs)
			if !heldKeys[doKey(d, v)] {
				return d + " " + v + " {N}" + pick(r, trails) + "."
			}
		case 4:
			if r.IntN(2) == 0 {
				return pick(r, openers) + " {N} " + pick(r, actions) + "."
			}
			return "The {animal2}, the {animal3} and {N} " + pick(r, actions) + "."
		default:
			return "\"" + pick(r, utterances) + ", {N}!\" " + pick(r, sayVerbs) + " the {animal2}."
		}
	}
}
