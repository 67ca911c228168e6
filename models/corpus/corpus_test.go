package corpus

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The committed recipe's corpus and its held-out split: deterministic,
// every family present, and the split holds out what it says it does.
func TestSplit(t *testing.T) {
	train, held := Split(Default(1), 0.1)
	again, _ := Split(Default(1), 0.1)
	if len(train) != len(again) || train[0].Text != again[0].Text || train[len(train)-1].Text != again[len(again)-1].Text {
		t.Fatal("not deterministic")
	}
	all := strings.Builder{}
	hashes := map[uint64]bool{}
	counts := map[Family]int{}
	for _, d := range train {
		hashes[Hash(d.Text)] = true
		counts[d.Family]++
		all.WriteString(d.Text)
		all.WriteByte('\n')
	}
	text := all.String()
	for _, f := range Families {
		if copying := f == Names || f == Repeats; (counts[f] == 0) != copying {
			t.Errorf("%d %s documents in training", counts[f], f)
		}
	}
	heldCounts := map[Family]int{}
	for _, d := range held {
		heldCounts[d.Family]++
		if hashes[Hash(d.Text)] {
			t.Fatalf("held-out document is also in training: %q", d.Text)
		}
	}
	for _, f := range Families {
		if copying := f == Names || f == Repeats; (heldCounts[f] == 0) != copying {
			t.Errorf("%d %s documents held out", heldCounts[f], f)
		}
	}
	// held-out names: never a word of the training text
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`\pL+`).FindAllString(text, -1) {
		words[w] = true
	}
	names := 0
	for _, d := range held {
		if d.Family != Stories {
			continue
		}
		names++
		if words[d.Name] {
			t.Errorf("held-out name %s occurs in training", d.Name)
		}
		if len(d.NameSpans) == 0 {
			t.Errorf("story without a cued mention: %q", d.Text)
		}
		for _, at := range d.NameSpans {
			if !strings.HasPrefix(d.Text[at:], d.Name) || d.Text[at-1] != ' ' {
				t.Fatalf("span %d is not the name after a space in %q", at, d.Text)
			}
		}
		if names == 200 {
			break
		}
	}
	// held-out phrasings never occur in training
	for i, p := range HeldOutPhrasings {
		for _, c := range Countries[:20] {
			if strings.Contains(text, p.Question(c)) {
				t.Errorf("held-out phrasing %d occurs in training: %q", i, p.Question(c))
			}
		}
	}
	// held-out sums never occur in training
	re := regexp.MustCompile(`What is (\d+) \+ (\d+)\?`)
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		if a >= 10 && b >= 10 && HeldOutSum(Sum{a, b}) {
			t.Fatalf("held-out sum %d + %d in training", a, b)
		}
	}
}

// The scratchpad's arithmetic is right, columns and result.
func TestScratchpad(t *testing.T) {
	if got, want := Scratchpad(Sum{347, 85}), "347 + 085: 7 + 5 + 0 = 12, 4 + 8 + 1 = 13, 3 + 0 + 1 = 04, so 0432."; got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for k := 0; k < 2000; k++ {
		s := Sum{r.IntN(1000), r.IntN(1000)}
		p := Scratchpad(s)
		got, _ := strconv.Atoi(p[len(p)-5 : len(p)-1])
		if got != s.A+s.B {
			t.Fatalf("%v: %q", s, p)
		}
	}
}

func TestInventName(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for k := 0; k < 1000; k++ {
		seen[InventName(r, TrainSyllables)] = true
	}
	if len(seen) < 850 {
		t.Errorf("%d distinct names of 1000: too few to defeat memorising", len(seen))
	}
	for _, s := range HeldOutSyllables {
		for _, u := range TrainSyllables {
			if s == u {
				t.Errorf("syllable %q is on both sides", s)
			}
		}
	}
}

// The copying corpus (v3) holds every document of the default one, adds
// the copying families, and holds their patterns out as it says.
func TestCopyingCorpus(t *testing.T) {
	base, _ := Split(Default(1).Scaled(0.2), 0.1)
	train, held := Split(Default(1).Scaled(0.2).WithCopying(), 0.1)
	in := map[uint64]bool{}
	var all strings.Builder
	for _, d := range train {
		in[Hash(d.Text)] = true
		all.WriteString(d.Text)
		all.WriteByte('\n')
	}
	for _, d := range base {
		if !in[Hash(d.Text)] {
			t.Fatalf("default document missing from the copying corpus: %q", d.Text)
		}
	}
	text := all.String()
	for _, frag := range []string{"Look at this!\" shouted ", "Look at this,\" shouted ", "Look at this?\" shouted ", "Wait for me!\" cried ",
		"Wait for me,\" cried ", "Wait for me?\" cried ", " shared a snack with ", " cheered for ", "s waited for ", " who lived by the ", " whose name was ", "\" the ", "Two friends, a "} {
		if strings.Contains(text, frag) {
			t.Errorf("held-out pattern %q occurs in training", frag)
		}
	}
	if m := regexp.MustCompile(`young \pL+ sat next to`).FindString(text); m != "" {
		t.Errorf("held-out pattern %q occurs in training", m)
	}
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`\pL+`).FindAllString(text, -1) {
		words[w] = true
	}
	for _, w := range []string{"shouted", "shared", "snack", "cheered", "Everyone", "waited", "young", "next", "cried", "lived", "whose", "name", "told", "everyone", "morning"} {
		if !words[w] {
			t.Errorf("%q, a word of the held-out patterns, never occurs in training", w)
		}
	}
	counts := map[Family]int{}
	starts := 0
	for _, d := range held {
		counts[d.Family]++
		if d.Family != Names {
			continue
		}
		if words[d.Name] {
			t.Errorf("held-out name %s occurs in training", d.Name)
		}
		if len(d.NameSpans) == 0 {
			t.Fatalf("no cued mention: %q", d.Text)
		}
		at := d.NameSpans[0]
		if !strings.HasPrefix(d.Text[at:], d.Name) || d.Text[at-1] != ' ' {
			t.Fatalf("span %d is not the name after a space in %q", at, d.Text)
		}
		// the first cued mention is in the pattern the document names
		if !slices.Contains(HeldMiddles(), d.Pattern) {
			t.Fatalf("pattern %q is not a held-out middle (%q)", d.Pattern, d.Text)
		}
		before, _, _ := strings.Cut(d.Pattern, "{N}")
		if fixed := before[strings.LastIndex(before, "}")+1:]; !strings.HasSuffix(d.Text[:at], fixed) {
			t.Errorf("the first mention of %q does not follow %q, its pattern's words", d.Text, fixed)
		}
		if strings.HasPrefix(d.Text, d.Name) {
			starts++
		}
	}
	if counts[Names] < 50 || counts[Repeats] < 20 || starts < 10 {
		t.Errorf("held out: %d names documents (%d named at the start), %d repeats", counts[Names], starts, counts[Repeats])
	}
}

// Training names of the copying families start with letters and shapes
// the stories' syllables lack, and share no syllable with held-out names.
func TestWideNames(t *testing.T) {
	held := map[string]bool{}
	for _, s := range slices.Concat(HeldOutSyllables, heldVowelSyllables) {
		held[s] = true
	}
	for _, s := range slices.Concat(wideSyllables, vowelSyllables) {
		if held[s] {
			t.Errorf("first syllable %q is a held-out syllable", s)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	initials := map[byte]bool{}
	vowels := 0
	for range 2000 {
		n := wideName(r)
		if len(n) < 3 || n[0] < 'A' || n[0] > 'Z' {
			t.Fatalf("name %q", n)
		}
		initials[n[0]] = true
		if strings.ContainsRune("AEIOU", rune(n[0])) {
			vowels++
		}
	}
	if len(initials) != 26 {
		t.Errorf("names start with %d of the 26 capitals", len(initials))
	}
	if vowels < 400 {
		t.Errorf("%d of 2000 training names begin with a vowel, want about a quarter", vowels)
	}
}

// A story that begins with the name says one to three things without it
// (no " Name" after a space) before its first cued mention, which is the
// name whole.
func TestStartStory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		name := wideName(r)
		s := storyPartsFor(r, name)
		s["animal3"], s["person2"], s["His"] = pick(r, animals), pick(r, people), title(s["his"])
		var b strings.Builder
		var spans []int
		startStory(r, s, &b, &spans)
		text := b.String()
		if !strings.HasPrefix(text, name+" ") && !strings.HasPrefix(text, name+",") {
			t.Fatalf("%q does not begin with %s", text, name)
		}
		if len(spans) == 0 || !strings.HasPrefix(text[spans[0]:], name) {
			t.Fatalf("%q: cued spans %v, want the first at the name", text, spans)
		}
		gap := text[len(name):spans[0]]
		if strings.Contains(gap, " "+name) {
			t.Fatalf("%q names %s before its cued mention", text, name)
		}
		if sentences := strings.Count(gap, ". "); sentences < 2 || sentences > 4 {
			t.Fatalf("%q: %d sentences before the cued one, want the intro and one to three more", text, sentences)
		}
		if strings.Contains(text, "{") {
			t.Fatalf("%q has an unfilled slot", text)
		}
	}
}
