package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Family names a kind of document.
type Family string

// The four families.
const (
	Facts      Family = "facts"
	Stories    Family = "stories"
	Code       Family = "code"
	Arithmetic Family = "arithmetic"
)

// Families in the order the corpus mixes them.
var Families = []Family{Facts, Stories, Code, Arithmetic}

// Doc is one document of the corpus.
type Doc struct {
	Family Family
	Text   string
	// NameSpans are, for stories, the byte offsets in Text where the
	// character's name is mentioned again after its first mention: the
	// positions where a model must copy from context.
	NameSpans []int
}

// Options size a corpus.
type Options struct {
	Seed uint64
	// Bytes per family (approximate).
	FactsBytes, StoriesBytes, CodeBytes, ArithmeticBytes int
	// HeldOut draws names and combinations that differ from a training
	// corpus of the same options (different stream of the generator).
	HeldOut bool
}

// Default sizes: a few MB in all, facts repeated often enough to be learnt.
func Default(seed uint64) Options {
	return Options{Seed: seed, FactsBytes: 1_200_000, StoriesBytes: 1_200_000, CodeBytes: 250_000, ArithmeticBytes: 250_000}
}

// Generate makes the corpus, deterministically from the options.
func Generate(o Options) []Doc {
	stream := uint64(1)
	if o.HeldOut {
		stream = 2
	}
	r := rand.New(rand.NewPCG(o.Seed, stream))
	var docs []Doc
	fill := func(budget int, gen func(*rand.Rand) Doc) {
		for n := 0; n < budget; {
			d := gen(r)
			docs = append(docs, d)
			n += len(d.Text)
		}
	}
	fill(o.FactsBytes, fact)
	fill(o.StoriesBytes, story)
	fill(o.CodeBytes, code)
	fill(o.ArithmeticBytes, arithmetic)
	r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	return docs
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func fact(r *rand.Rand) Doc {
	c := pick(r, Countries)
	name := c.Name
	cap1 := strings.ToUpper(name[:1]) + name[1:]
	var lines []string
	for k := 0; k < 3; k++ {
		switch r.IntN(6) {
		case 0:
			lines = append(lines, fmt.Sprintf("The capital of %s is %s.", name, c.Capital))
		case 1:
			lines = append(lines, fmt.Sprintf("%s is the capital of %s.", c.Capital, name))
		case 2:
			lines = append(lines, fmt.Sprintf("Q: What is the capital of %s? A: %s.", name, c.Capital))
		case 3:
			lines = append(lines, fmt.Sprintf("%s is a country in %s.", cap1, c.Continent))
		case 4:
			lines = append(lines, fmt.Sprintf("Q: Which continent is %s in? A: %s.", name, c.Continent))
		case 5:
			lines = append(lines, fmt.Sprintf("%s is in %s. Its capital is %s.", cap1, c.Continent, c.Capital))
		}
	}
	return Doc{Family: Facts, Text: strings.Join(lines, " ")}
}

var (
	girls   = strings.Fields("Mia Lily Emma Ava Zoe Ella Lucy Anna Sara Nora Ruby Isla Maya Leah Chloe Grace Alice Rosa Hana Lina Mila Nina Ivy Lea Amy Jade Kira Luna Rita Tess Vera Wendy Yara Zara Bella Cora Daisy Eva Fiona Gina Hope Iris Julia Kate Lola Molly Nell Olive Piper Quinn Rose Sofia Tara Una Violet Willa Xena Yuki Zoey Ada Bea Cleo Dora Elsa Faye Gwen Hazel Ines Jana Kaya Lara Maeve Nia Opal Pia Reya Sage Tilly Uma Wren Abby Becky Carla Dina Edie Flora Greta Holly Ingrid Joy Kelly Lily-Ann Mabel Nadia Orla Petra Rhea Stella Thea Ursa Viola Zelda")
	boys    = strings.Fields("Tom Max Leo Sam Ben Jack Noah Liam Luke Finn Owen Eli Adam Hugo Ivan Jake Kai Levi Milo Nate Oscar Paul Ray Seth Theo Victor Will Zack Alex Carl Dan Eric Fred Gus Hank Ian Joel Kurt Lars Marc Ned Otto Pete Rex Sid Tim Vic Walt Yann Abe Cole Dean Evan Gabe Hal Jay Kip Lee Mo Nils Omar Rafe Sven Ty Vince Wade Arlo Bram Cyrus Drew Ezra Felix Gil Hector Ira Jonah Kit Lenny Mateo Noel Pablo Reed Sol Toby Ulric Vito Alan Bruno Colin Dario Emil Frank Glen Harry Igor Jim Karl Lucas Mark Nico Ollie Peter Rudy Simon Trent Umar")
	animals = strings.Fields("cat dog bunny bear fox mouse duck frog bird lion owl pig cow horse goat fish")
	colors  = strings.Fields("red blue green yellow pink purple orange white black brown")
	objects = strings.Fields("kite ball hat book box cup drum boat car doll sock bag toy shell bell")
	places  = strings.Fields("park garden forest beach river school farm hill lake shop")
	adjs    = strings.Fields("little happy small brave kind shy funny quiet clever sleepy")
)

// Names are all character names the stories use (at least 200).
func Names() []string { return append(append([]string(nil), girls...), boys...) }

func story(r *rand.Rand) Doc {
	girl := r.IntN(2) == 0
	name, he, his := pick(r, boys), "he", "his"
	if girl {
		name, he, his = pick(r, girls), "she", "her"
	}
	animal, color, obj, place, adj := pick(r, animals), pick(r, colors), pick(r, objects), pick(r, places), pick(r, adjs)
	He := strings.ToUpper(he[:1]) + he[1:]
	var b strings.Builder
	var spans []int
	mention := func() { spans = append(spans, b.Len()); b.WriteString(name) }
	switch r.IntN(3) {
	case 0:
		fmt.Fprintf(&b, "Once upon a time, there was a %s %s named %s. %s had a %s %s. One day, %s went to the %s. ", adj, animal, name, He, color, obj, he, place)
		b.WriteString("At the " + place + ", ")
		mention()
		fmt.Fprintf(&b, " saw a friend. They played with the %s %s all day. ", color, obj)
		mention()
		b.WriteString(" was very happy.")
	case 1:
		fmt.Fprintf(&b, "%s was a %s %s. Every morning, %s played in the %s with %s %s %s. One day, the %s was gone. \"Where is my %s?\" asked ", name, adj, animal, he, place, his, color, obj, obj, obj)
		mention()
		fmt.Fprintf(&b, ". %s looked and looked. At last, ", He)
		mention()
		fmt.Fprintf(&b, " found the %s under a tree.", obj)
	default:
		fmt.Fprintf(&b, "There was a %s named %s. %s loved the color %s. Mom gave %s a %s %s. \"Thank you!\" said ", animal, name, He, color, map[bool]string{true: "her", false: "him"}[girl], color, obj)
		mention()
		fmt.Fprintf(&b, ". Then %s ran to the %s. Everyone waved at ", he, place)
		mention()
		b.WriteString(".")
	}
	return Doc{Family: Stories, Text: b.String(), NameSpans: spans}
}

var (
	things = strings.Fields("user order item post cart city song movie book player team note task photo file")
	fields = strings.Fields("name email id title price count size date status color")
)

func code(r *rand.Rand) Doc {
	v, f := pick(r, things), pick(r, fields)
	getter := "get" + strings.ToUpper(v[:1]) + v[1:]
	switch r.IntN(3) {
	case 0:
		return Doc{Family: Code, Text: fmt.Sprintf("const %s = %s();\nconsole.log(%s.%s);", v, getter, v, f)}
	case 1:
		return Doc{Family: Code, Text: fmt.Sprintf("let %s = await %s(id);\nif (%s.%s) {\n  return %s.%s;\n}", v, getter, v, f, v, f)}
	default:
		n := pick(r, things)
		return Doc{Family: Code, Text: fmt.Sprintf("function show(%s) {\n  const %s = %s.%s;\n  return %s;\n}", v, n, v, f, n)}
	}
}

func arithmetic(r *rand.Rand) Doc {
	var parts []string
	for k := 0; k < 4; k++ {
		a, b := r.IntN(21), r.IntN(21)
		if r.IntN(2) == 0 {
			parts = append(parts, fmt.Sprintf("%d + %d = %d.", a, b, a+b))
		} else {
			a, b = max(a, b), min(a, b)
			parts = append(parts, fmt.Sprintf("%d - %d = %d.", a, b, a-b))
		}
	}
	return Doc{Family: Arithmetic, Text: strings.Join(parts, " ")}
}
