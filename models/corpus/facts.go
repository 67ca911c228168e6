package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Phrasing is one way of stating a country's capital: Prompt ends where
// the capital's name begins (after a space).
type Phrasing struct {
	Prompt func(c Country) string
	Lower  bool // the sentence, capital included, is in lower case
}

// Text is the whole sentence.
func (p Phrasing) Text(c Country) string {
	s := p.Prompt(c) + " " + c.Capital + "."
	if p.Lower {
		return strings.ToLower(s)
	}
	return s
}

// Question is the prompt as the model is asked it.
func (p Phrasing) Question(c Country) string {
	if p.Lower {
		return strings.ToLower(p.Prompt(c))
	}
	return p.Prompt(c)
}

// Answer is the capital as the phrasing writes it.
func (p Phrasing) Answer(c Country) string {
	if p.Lower {
		return strings.ToLower(c.Capital)
	}
	return c.Capital
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// TrainPhrasings are the capital phrasings of the training corpus.
var TrainPhrasings = []Phrasing{
	{Prompt: func(c Country) string { return "The capital of " + c.Name + " is" }},
	{Prompt: func(c Country) string { return "The capital city of " + c.Name + " is" }},
	{Prompt: func(c Country) string { return title(c.Name) + "'s capital is" }},
	{Prompt: func(c Country) string { return "Q: What is the capital of " + c.Name + "? A:" }},
	{Prompt: func(c Country) string { return "What is the capital city of " + c.Name + "? The answer is" }},
	{Prompt: func(c Country) string { return "the capital of " + c.Name + " is" }, Lower: true},
	{Prompt: func(c Country) string { return "Name the capital of " + c.Name + ". It is" }},
}

// HeldOutPhrasings never appear in training: each recombines parts the
// training phrasings use separately.
var HeldOutPhrasings = []Phrasing{
	{Prompt: func(c Country) string { return "Q: What is " + c.Name + "'s capital? A:" }},
	{Prompt: func(c Country) string { return title(c.Name) + "'s capital city is" }},
	{Prompt: func(c Country) string { return "the capital city of " + c.Name + " is" }, Lower: true},
	{Prompt: func(c Country) string { return "Do you know the capital of " + c.Name + "? It is" }},
}

// otherFacts are the training sentences that are not capital prompts.
var otherFacts = []func(c Country) string{
	func(c Country) string { return c.Capital + " is the capital of " + c.Name + "." },
	func(c Country) string { return title(c.Name) + " is a country in " + c.Continent + "." },
	func(c Country) string { return "Q: Which continent is " + c.Name + " in? A: " + c.Continent + "." },
	func(c Country) string {
		return fmt.Sprintf("%s is in %s. Its capital is %s.", title(c.Name), c.Continent, c.Capital)
	},
}

func fact(r *rand.Rand, held bool) Doc {
	c := pick(r, Countries)
	var lines []string
	for k := 0; k < 3; k++ {
		switch {
		case held && k == 0:
			lines = append(lines, pick(r, HeldOutPhrasings).Text(c))
		case r.IntN(3) == 0:
			lines = append(lines, pick(r, otherFacts)(c))
		default:
			lines = append(lines, pick(r, TrainPhrasings).Text(c))
		}
	}
	return Doc{Family: Facts, Text: strings.Join(lines, " ")}
}
