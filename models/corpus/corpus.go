package corpus

import (
	"hash/fnv"
	"math/rand/v2"
)

// Family names a kind of document.
type Family string

// The families.
const (
	Facts      Family = "facts"
	Stories    Family = "stories"
	Chat       Family = "chat"
	Tools      Family = "tools"
	Reasoning  Family = "reasoning"
	Code       Family = "code"
	Arithmetic Family = "arithmetic"
)

// Families in the order the corpus generates them (Names and Repeats
// only with WithCopying).
var Families = []Family{Facts, Stories, Chat, Tools, Reasoning, Code, Arithmetic, Names, Repeats}

// Doc is one document of the corpus.
type Doc struct {
	Family Family
	Text   string
	// Name is, for stories, the character's name, and NameSpans the byte
	// offsets in Text of its later mentions in slots where the grammar
	// always writes the name (never a pronoun): the positions where a
	// model must copy it from context.
	Name      string
	NameSpans []int
	// Pattern is, for a held-out Names story, the held-out sentence
	// pattern of its first cued mention (one of HeldMiddles).
	Pattern string
}

// Options size a corpus.
type Options struct {
	Seed uint64
	// Bytes per family (approximate).
	Bytes map[Family]int
	// HeldOut draws from the held-out side of every split: names from
	// other syllables, the held-out fact phrasings, the held-out sums,
	// another stream of the generator, and no document of the training
	// corpus of the same seed.
	HeldOut bool
	// Exclude are hashes (Hash) of documents never to generate: the
	// training corpus, when making the held-out split.
	Exclude map[uint64]bool
}

// Default sizes: a few MB in all.
func Default(seed uint64) Options {
	return Options{Seed: seed, Bytes: map[Family]int{
		Facts: 1_300_000, Stories: 1_500_000, Chat: 500_000, Tools: 450_000, Reasoning: 450_000, Code: 200_000, Arithmetic: 200_000,
	}}
}

// Scaled multiplies every family's size by f.
func (o Options) Scaled(f float64) Options {
	b := map[Family]int{}
	for k, v := range o.Bytes {
		b[k] = int(float64(v) * f)
	}
	o.Bytes = b
	return o
}

// Hash identifies a document's text.
func Hash(text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	return h.Sum64()
}

// generators make one document of a family; held says which side of the
// splits to draw from.
var generators = map[Family]func(r *rand.Rand, held bool) Doc{
	Facts: fact, Stories: story, Chat: chatDoc, Tools: toolDoc, Reasoning: reasoningDoc, Code: code, Arithmetic: arithmetic,
	Names: namesDoc, Repeats: repeatsDoc,
}

// Generate makes the corpus, deterministically from the options.
func Generate(o Options) []Doc {
	stream := uint64(1)
	if o.HeldOut {
		stream = 2
	}
	r := rand.New(rand.NewPCG(o.Seed, stream))
	var docs []Doc
	for _, f := range Families {
		budget := o.Bytes[f]
		for n, tries := 0, 0; n < budget && tries < 50*budget; tries++ {
			d := generators[f](r, o.HeldOut)
			if o.Exclude[Hash(d.Text)] {
				continue
			}
			docs = append(docs, d)
			n += len(d.Text)
		}
	}
	r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	return docs
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// Split makes the training corpus and its held-out split (a tenth of its
// size by default) with no document in common.
func Split(o Options, heldFraction float64) (train, held []Doc) {
	train = Generate(o)
	ex := make(map[uint64]bool, len(train))
	for _, d := range train {
		ex[Hash(d.Text)] = true
	}
	h := o.Scaled(heldFraction)
	h.HeldOut, h.Exclude = true, ex
	return train, Generate(h)
}
