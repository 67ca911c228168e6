package corpus

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// The free forms widen the copying families past the story grammar, so
// that copying a name rests neither on the name's letters nor on the words
// before it: names whose first syllable has letters and shapes the
// grammar's syllables lack, and sentences about people (not only animals)
// that put the name after many more verbs, prepositions and openings.

// wideSyllables are first syllables of training names: an onset that may
// be a cluster (bl, str, qu, y …) or none, a vowel that may be a pair, a
// coda such as st, nd or x. None is a held-out syllable, so no held-out
// name shares a syllable with a training name.
var wideSyllables = func() []string {
	held := map[string]bool{}
	for _, s := range slices.Concat(HeldOutSyllables, heldVowelSyllables, vowelSyllables) {
		held[s] = true
	}
	onsets := append([]string{""}, strings.Fields("b c d f g h j k l m n p r s t v w x z y qu bl br cl cr dr fl fr gl gr pl pr sk sl sm sn sp st sw tr th sh ch str")...)
	vowels := strings.Fields("a e i o u y ee oo ai ou ea")
	codas := append([]string{"", "", ""}, strings.Fields("n r l s m k t x st nd rk sh")...)
	seen := map[string]bool{}
	var out []string
	for _, o := range onsets {
		for _, v := range vowels {
			for _, c := range codas {
				s := o + v + c
				if !seen[s] && !held[s] && (o != "" || v != "y") {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}()

// Names that begin with a vowel are a case of their own: at the start of
// a text the tokenizer writes their first letter as a word of its own ("I",
// "O", "A"), which a later mention, after a space, writes as another token.
// vowelSyllables begin training names; heldVowelSyllables (about one in
// five, split by hash) begin held-out ones, and are no training name's
// first syllable.
var vowelSyllables, heldVowelSyllables = func() (train, held []string) {
	for _, v := range strings.Fields("a e i o u ee oo ai ou ea") {
		for _, c := range strings.Fields("b c d f g h j k l m n p r s t v w x z st nd rk sh lv mb rv") {
			if s := v + c; heldByHash(s) {
				held = append(held, s)
			} else {
				train = append(train, s)
			}
		}
	}
	return train, held
}()

// wideName invents a training name: a wide first syllable (a vowel one in
// one name of four), then none to two of the grammar's training syllables
// (at least four letters in all).
func wideName(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString(pick(r, vowelSyllables))
	} else {
		b.WriteString(pick(r, wideSyllables))
	}
	for range r.IntN(2) + r.IntN(2) {
		b.WriteString(pick(r, TrainSyllables))
	}
	if b.Len() < 4 {
		b.WriteString(pick(r, TrainSyllables))
	}
	return title(b.String())
}

// The parts of free sentences.
var (
	people = strings.Fields("boy girl man woman baby king queen farmer doctor nurse pilot cook driver singer clown robot " +
		"dragon giant witch wizard pirate knight princess prince mother father sister brother grandma grandpa uncle aunt " +
		"friend child captain sailor painter fisherman guard mayor coach")
	freeDoers = []string{"The {person}", "A {person}", "My {person}", "Her {person}", "His {person}", "Our {person}",
		"The old {person}", "The {adj} {person}", "Every {person}", "Tom", "Mia", "Leo", "Zoe", "Sam", "Lily", "Max", "Ruby", "We", "I", "They", "Somebody"}
	freeVerbs = []string{"kissed", "called", "phoned", "met", "saw", "heard", "found", "asked", "told", "picked", "chose",
		"invited", "trusted", "missed", "loved", "liked", "knew", "greeted", "carried", "pushed", "pulled", "tickled",
		"pointed at", "shouted at", "yelled at", "winked at", "nodded at", "bowed to", "wrote to", "sent a letter to",
		"sang a song for", "baked a cake for", "made a hat for", "bought a gift for", "read a story to", "brought the {obj} to",
		"handed the {obj} to", "took the {obj} from", "got a {obj} from", "learned a lot from", "ran away from", "stood behind",
		"sat beside", "sat near", "walked behind", "went home with", "went out with", "stayed with", "cooked dinner for",
		"looked after", "cared for", "worried about", "dreamed about", "talked about", "asked about", "laughed at",
		"painted a picture of", "made a cake for", "built a house for", "opened the door for", "was afraid of", "was proud of",
		"jumped over", "ran toward", "came back to", "said sorry to", "said goodbye to", "could not find", "wanted to meet",
		"went looking for", "rescued", "married", "taught", "believed", "copied", "forgave", "obeyed", "answered",
		"patted", "woke", "fed", "hugged", "waved to", "ate lunch with", "played chess with", "wrote a poem for", "voted for",
		"paid", "warned", "drove", "hired", "thanked", "visited", "followed", "helped", "joined", "washed", "dressed",
		"praised", "blamed", "comforted", "surprised", "tricked", "cheered on", "lifted", "held", "poked", "tagged", "teased",
		"scolded", "splashed", "served", "guided", "led", "protected", "hid", "beat", "caught", "needed", "admired", "envied",
		"phoned up", "drew a picture of", "made friends with", "played tag with",
		"had lunch with", "sat down next to", "stood in front of", "walked over to", "ran up to", "looked up at", "called out for",
		"waited a long time for", "saved a seat for", "kept a secret from", "heard a story about", "got a hug from", "was angry with"}
	freeOpeners = []string{"Yesterday,", "Today,", "On Monday,", "At the party,", "In the kitchen,", "Before bed,", "Last week,",
		"Every night,", "On the way home,", "At dinner,", "In the evening,", "Once,", "Next,", "Then one day,", "Early the next day,",
		"After school,", "In winter,", "Far away,", "By the river,", "Later,"}
	freeTrails = []string{"", "", "", " again", " at once", " all day long", " happily", " in the {place}", " once more", " every day"}
	// freeFrames put the name in slots of other kinds: after "and", after
	// "by", after "is" and "was", after "like" and "than", as an object
	// of a phrase.
	freeFrames = []string{
		"{doer} and {N} went to the {place}.",
		"{doer} and {N} {action}.",
		"The {obj} was found by {N}.",
		"The cake was made by {N}.",
		"The song was written by {N}.",
		"The best {person} in town is {N}.",
		"The name of the {person} was {N}.",
		"The one with the {color} {obj} is {N}.",
		"Nobody was braver than {N}.",
		"{doer} wanted to be like {N}.",
		"It was time to wake up {N}.",
		"That {obj} is for {N}.",
		"The last one home was {N}.",
		"Who is at the door? It is {N}.",
		"We won the game, all thanks to {N}.",
		"The {obj} next to {N} was {color}.",
		"{doer} sat close to {N}.",
		"{doer} went along with {N}.",
		"{doer} stood in front of {N}.",
		"{doer} played instead of {N}.",
		"Everything changed because of {N}.",
		"This {obj} is a gift from {N}.",
		"Look, here comes {N}!",
		"Nobody knew more songs than {N}.",
		"{doer} could not stop thinking about {N}.",
		"{doer} {verb} {N}, and {N} {verb} {doer2}.",
	}
)

// freeSentence is a sentence with the name in a cued slot, built from the
// free parts.
func freeSentence(r *rand.Rand) string {
	doer := strings.ReplaceAll(pick(r, freeDoers), "{person}", pick(r, people))
	verb := pick(r, freeVerbs)
	var s string
	switch r.IntN(6) {
	case 4:
		return slotSentence(r, doer)
	case 0, 1:
		s = doer + " " + verb + " {N}" + pick(r, freeTrails) + "."
		if r.IntN(2) == 0 {
			s = pick(r, freeOpeners) + " " + midSentence(doer) + s[len(doer):]
		}
	default:
		s = pick(r, freeFrames)
		doer2 := strings.ReplaceAll(pick(r, freeDoers), "{person}", pick(r, people))
		s = strings.NewReplacer("{doer}", doer, "{doer2}", midSentence(doer2), "{verb}", verb,
			"{action}", pick(r, actions), "{person}", pick(r, people)).Replace(s)
	}
	return s
}

// midSentence writes a doer inside a sentence: its first letter
// lowercased ("The boy" → "the boy"), unless it is "I" or a name.
func midSentence(doer string) string {
	if doer == "I" || slices.Contains(RecurringNames, doer) {
		return doer
	}
	return strings.ToLower(doer[:1]) + doer[1:]
}

// The parts of slot sentences, built word by word so that the words
// before a name are many more than any list of verbs: a verb that moves
// an object and its preposition, a verb and a preposition, a passive.
var (
	moveVerbs = map[string][]string{
		"to":   strings.Fields("gave brought sent threw showed sold lent passed handed offered mailed rolled kicked"),
		"from": strings.Fields("took got bought borrowed grabbed stole"),
		"for":  strings.Fields("made baked kept saved fixed painted wrapped picked chose"),
		"with": strings.Fields("split traded"),
	}
	moveObjs  = append(strings.Fields("apple cake ticket flower key coin map ring present note"), objects...)
	leanVerbs = strings.Fields("waved smiled shouted sang called ran walked swam flew wrote spoke pointed laughed nodded winked looked talked hurried came jumped climbed stared rushed rode sailed leaned crawled")
	leanPreps = strings.Fields("at to with for toward after beside behind near past on about into onto around under over like without")
	// auxiliaries and the verbs they lead: "could hear N", "wanted to call N".
	auxes        = []string{"could", "would", "will", "can", "did not", "wanted to", "had to", "tried to", "went to", "liked to", "began to", "forgot to", "hoped to", "promised to", "needed to", "must"}
	baseVerbs    = strings.Fields("see hear call find help meet visit thank feed hug follow tell ask catch wake watch teach greet invite carry trust miss love know pay warn forgive answer join tease kiss remember beat save")
	passiveVerbs = strings.Fields("found made written painted built taken eaten seen heard kept lost fixed opened carried drawn sold sent")
)

// slotSentence puts the name after words built from the slot parts.
func slotSentence(r *rand.Rand, doer string) string {
	switch r.IntN(4) {
	case 3:
		return doer + " " + pick(r, auxes) + " " + pick(r, baseVerbs) + " {N}" + pick(r, freeTrails) + "."
	case 0:
		p := pick(r, []string{"to", "from", "for", "with"})
		art := "the"
		if p != "with" {
			art = pick(r, []string{"the", "the", "a", "{his}", "my", "some"})
		}
		return doer + " " + pick(r, moveVerbs[p]) + " " + art + " " + pick(r, moveObjs) + " " + p + " {N}" + pick(r, freeTrails) + "."
	case 1:
		return doer + " " + pick(r, leanVerbs) + " " + pick(r, leanPreps) + " {N}" + pick(r, freeTrails) + "."
	}
	return "The " + pick(r, moveObjs) + " was " + pick(r, passiveVerbs) + " by {N}" + pick(r, freeTrails) + "."
}

// commonWords join the list words, so that repeated lists are not only the
// grammar's words.
var commonWords = strings.Fields("chair table door window lamp bed cup plate spoon fork knife clock phone paper pencil pen " +
	"river mountain road bridge island cloud star wind fire water stone sand grass flower leaf branch garden city village " +
	"king queen boat train plane bike bus truck ship rocket " +
	"bread cheese soup rice egg cake cookie orange banana grape lemon pear carrot potato " +
	"run jump swim sing dance read write draw cook sleep walk talk think laugh cry " +
	"big small tall short hot cold fast slow old new soft hard loud dark bright warm " +
	"Monday Tuesday Friday Sunday summer winter spring autumn morning evening night today " +
	"eleven twelve twenty hundred first second third last")

// longWords join the list words too: everyday words the stories never
// write, most of them two tokens or more, so that copying a list is
// copying every piece of a word, not only the grammar's one-token words.
var longWords = strings.Fields(
	"apron attic basket battery beetle bicycle blossom bottle bracelet branch bubble cabbage cactus camera candy canoe " +
		"castle cellar chimney cinnamon circus closet coconut collar compass cookie cotton crayon cricket crown crystal " +
		"cupboard curtain cushion daisy desert diamond dinosaur doorbell dragonfly drawer eagle elbow envelope eraser " +
		"feather fence finger firework flag flashlight forest fountain freezer galaxy giraffe glove goblin grapefruit " +
		"guitar hamster harbor helicopter honeybee hoodie iceberg igloo insect island jacket jelly jigsaw jungle kangaroo " +
		"kettle kitchen kitten ladle lantern lettuce library lizard locket magnet mango meadow melon mitten monkey mushroom " +
		"napkin necklace needle noodle notebook octopus olive orchard ostrich oven paddle pancake panda paper parrot peanut " +
		"pebble pencil penguin pepperoni piano picnic pineapple planet plum puddle pumpkin puppet puzzle rabbit radio " +
		"raincoat rainbow raisin ribbon robot rooster saddle sandwich scarf scissors seashell shadow shovel skateboard sled " +
		"slipper snail snowflake sofa spinach sponge squirrel stapler strawberry sugar suitcase sunflower sweater teapot " +
		"telescope tent thimble thunder ticket toaster tomato toothbrush torch towel tractor treasure trumpet tulip turtle " +
		"umbrella unicorn vase vegetable wagon walnut wallet walrus whistle wizard yogurt zebra zipper angry bumpy chilly " +
		"cloudy crispy curly dizzy dusty fluffy fuzzy gentle giant golden greedy grumpy hairy hollow huge icy juicy lazy " +
		"lucky messy muddy narrow noisy plain polite rough round rusty salty sandy scary sharp shiny silly silver skinny " +
		"smooth sour spicy sticky stormy striped sunny sweet thick thirsty tidy tiny wild windy wooden bake borrow bounce " +
		"build carry catch chase climb collect count crawl dig drip drop explore fix float fold gallop giggle glue hide hop " +
		"hum hurry juggle kick knit knock launch lick march melt mix nap paint peel plant pour pull push race rescue roll " +
		"rush scribble search shake share shout skip slide sneeze spill splash squeeze stamp stir stretch swing tickle toss " +
		"travel trip tumble twist wander wash whisper wiggle wobble yawn")

// The parts of free intros: what a character does in the first sentence
// of a story, and first sentences that name someone at their end.
var (
	freePreds = []string{"found a {color} {obj} in the {place}", "lost {his} {color} {obj}", "went to the {place} early",
		"lived in a small house", "had a very loud laugh", "was very {adj}", "could run very fast", "worked at the {place}",
		"made soup every day", "loved to sing", "wrote a long story", "opened the old {obj}", "painted the {obj} {color}",
		"climbed a tall tree", "fell asleep in the {place}", "was the best {person} in town", "came home late",
		"carried a {color} {obj}", "knew every song", "drew a {animal2}", "kept a {animal2} as a pet", "sold apples at the market",
		"built a boat", "could not sleep", "grew carrots and beans", "woke up before the sun", "played the drum",
		"never told a lie", "had two brothers", "walked to the {place} alone", "lived on a farm", "baked pies for everyone",
		"was new in town", "liked rainy days", "missed the bus", "broke a cup", "got a {color} bike", "ran a little shop"}
	namingIntros = []string{"The {person} was called {N}.", "My {animal} is called {N}.", "Our new {person} is named {N}.",
		"I met a {person} named {N} in the {place}.", "{doer} had a friend called {N}.", "The new {person} was {N}.",
		"Everyone in town knew the {person} {N}.", "Nobody was kinder than {N}.", "This is the story of {N}.",
		"The {animal} that lived in the {place} was named {N}.", "There was once a {person} named {N}.",
		"{doer} wrote a letter to {N}.", "The first one to arrive was {N}."}
)

// freeIntro is the first sentence of a training Names story in a form the
// story grammar lacks: the name first and something it did, the name and
// what it is, an opening word before the name, or the name at the end of a
// sentence about someone else.
func freeIntro(r *rand.Rand) string {
	if r.IntN(5) < 4 {
		return nameFirst(r)
	}
	doer := strings.ReplaceAll(pick(r, freeDoers), "{person}", pick(r, people))
	return strings.NewReplacer("{doer}", doer, "{person}", pick(r, people)).Replace(pick(r, namingIntros))
}

// nameFirst is a sentence that begins with the name (or an opening word
// and the name) and says something it did.
func nameFirst(r *rand.Rand) string {
	var s string
	switch r.IntN(4) {
	case 0, 1:
		s = "{N} " + pick(r, freePreds) + "."
	case 2:
		s = "{N} the {person} " + pick(r, freePreds) + "."
	default:
		o := pick(r, freeOpeners)
		if r.IntN(2) == 0 {
			o = strings.TrimSuffix(o, ",")
		}
		s = o + " {N} " + pick(r, freePreds) + "."
	}
	return strings.ReplaceAll(s, "{person}", pick(r, people))
}

// The parts of fillers: sentences about the scene, not the character, in
// words the story grammar lacks, that put distance between two mentions.
var (
	sceneNouns = strings.Fields("house sky road sun cloud window kitchen street door letter wind rain snow sea grass roof wall floor table soup bread tea clock bus town shop tree")
	sceneAdjs  = strings.Fields("cold warm bright dark wet dry heavy empty full old new tiny huge noisy quiet still clean dirty red grey")
	sceneVerbs = []string{"was", "looked", "felt", "seemed", "got", "grew", "stayed"}
	sceneTimes = []string{"", "", " that day", " all morning", " at night", " all week", " again", " in the morning"}
)

// filler is a sentence about the scene: "The road was wet all morning."
func filler(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return "The " + pick(r, sceneNouns) + " " + pick(r, sceneVerbs) + " " + pick(r, sceneAdjs) + pick(r, sceneTimes) + "."
	case 1:
		return "It was " + pick(r, sceneAdjs) + " outside" + pick(r, sceneTimes) + "."
	}
	return "{P} saw that the " + pick(r, sceneNouns) + " was " + pick(r, sceneAdjs) + "."
}

// startStory begins a training Names story the way hand-written ones
// often begin: the name first in the text (so its first letter is a
// token of its own, with no space before it), then one to three sentences
// that do not name the character (what it did, the scene, other people),
// then a cued mention, often by someone else. The cued mention is the
// first one after a space, so it can only be copied from the name's
// unspaced first mention, across the gap. s holds the story's parts,
// someone else ({person2}) and the capital possessive ({His}) among them.
func startStory(r *rand.Rand, s storyParts, b *strings.Builder, spans *[]int) {
	intro := "{N} " + pick(r, freePreds) + "."
	switch r.IntN(4) {
	case 0:
		intro = "{N} the {person} " + pick(r, freePreds) + "."
	case 1:
		intro = "{N}, a {adj} {person}, " + pick(r, freePreds) + "."
	}
	s["person"] = pick(r, people)
	s.fill(b, spans, intro, false)
	for range 1 + r.IntN(3) {
		b.WriteByte(' ')
		s.fill(b, spans, gapSentence(r), false)
	}
	b.WriteByte(' ')
	switch r.IntN(3) {
	case 0:
		s.fill(b, spans, cuedSentence(r), true)
	case 1:
		s.fill(b, spans, freeSentence(r), true)
	default:
		s.fill(b, spans, swapSentence(r), true)
	}
}

// gapSentence says something that does not name the character: what
// {P} did, the scene, or what someone else did. None ends in a slot where
// a person might be, so a cued slot after the gap is still the name's.
func gapSentence(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return filler(r)
	case 1:
		return pick(r, []string{"{His}", "The", "A"}) + " {person2} " + pick(r, freePreds) + "."
	}
	return "{P} " + pick(r, freePreds) + "."
}
