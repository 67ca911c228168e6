package lessons

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A lesson teaches two kinds of fact. One about this model or engine is
// an expect: claim, checked on the engine; one about inference in general
// (other engines, GPUs, providers, papers) carries its source (a source:
// line). Unsourced finds the narration sentences that generalise and have
// neither, so a sentence such as "the same request always gets the same
// answer" cannot slip into a lesson as a fact about every server.

// generalWords are the words that make a sentence a statement about more
// than the run on screen.
var generalWords = []string{"always", "never", "every", "everything", "everyone", "cannot", "can't", "impossible",
	"gpu", "gpus", "servers", "providers", "usually", "typically", "production"}

// generalPhrases are the phrases that do.
var generalPhrases = []string{"all models", "any model", "every model", "most models", "large models", "larger models",
	"other engines", "other models", "in general", "real systems", "language models"}

// scopePhrases say that a sentence is about this engine, this model or
// this run: with a claim on its step, the engine checks it.
var scopePhrases = []string{"this model", "this engine", "this server", "this machine", "this run", "this lesson",
	"the lesson model", "on this", "in this", "here"}

// Unsourced is a narration sentence that generalises with neither a
// source nor a claim behind it.
type Unsourced struct {
	File     string
	Line     int // the sentence's first line
	Step     int // from 0
	Word     string
	Sentence string
}

func (u Unsourced) String() string {
	return fmt.Sprintf("%s:%d: step %d: %q says %q of inference in general, with no source: line on its step and no expect: claim behind it: cite its source, or say it of this model or engine and claim it",
		u.File, u.Line, u.Step+1, u.Sentence, u.Word)
}

// UnsourcedGeneral lists the sentences of l's narration (what a student
// reads, before and after a question) that generalise — they say
// "always", "never", "every", "cannot", "usually", or speak of GPUs,
// servers, providers or models at large (generalWords, generalPhrases) —
// while their step has no source: line and either the sentence does not
// say it is about this model, engine or run (scopePhrases) or the step
// has no expect: claim to check it. Quoted text ("…", “…”, `…`) is not
// the lesson's own statement and is skipped.
func UnsourcedGeneral(l *Lesson) []Unsourced {
	var out []Unsourced
	for i, st := range l.Steps {
		if len(st.Sources) > 0 {
			continue
		}
		for _, s := range sentences(st.Prose) {
			text := strings.ToLower(unquoted(s.text))
			w := generalWord(text)
			if w == "" || len(st.Claims) > 0 && scoped(text) {
				continue
			}
			out = append(out, Unsourced{File: l.File, Line: s.line, Step: i, Word: w, Sentence: s.text})
		}
	}
	return out
}

type sentence struct {
	line int
	text string
}

// sentences cuts prose into sentences, each with the line it starts on:
// a sentence ends at a full stop, question or exclamation mark followed
// by a space or a line's end, outside a straight double quotation; the
// text before a question and the text after it are cut apart.
func sentences(prose []ProseLine) []sentence {
	var out []sentence
	var b strings.Builder
	line, quote := 0, false
	flush := func() {
		if t := strings.TrimSpace(b.String()); t != "" {
			out = append(out, sentence{line, t})
		}
		b.Reset()
	}
	for i, pl := range prose {
		if i > 0 && pl.After != prose[i-1].After {
			flush()
			quote = false
		}
		for j, r := range pl.Text {
			if strings.TrimSpace(b.String()) == "" {
				line = pl.Line
			}
			b.WriteRune(r)
			if r == '"' {
				quote = !quote
			}
			next := j + 1
			if !quote && strings.ContainsRune(".!?", r) && (next == len(pl.Text) || pl.Text[next] == ' ') {
				flush()
			}
		}
		b.WriteByte(' ')
	}
	flush()
	return out
}

var quoted = regexp.MustCompile("\"[^\"]*\"|“[^”]*”|`[^`]*`")

// unquoted is s without its quotations.
func unquoted(s string) string { return quoted.ReplaceAllString(s, " ") }

// proseWord is a lower-case word, a possessive's "'s" left off ("this
// model's" is "this model").
var proseWord = regexp.MustCompile(`[a-z0-9]+(?:'[a-rt-z][a-z]*)?`)

// generalWord is the first word or phrase of lower-case text that
// generalises ("" when none does).
func generalWord(text string) string {
	words := proseWord.FindAllString(text, -1)
	for _, w := range words {
		if slices.Contains(generalWords, w) {
			return w
		}
	}
	joined := " " + strings.Join(words, " ") + " "
	for _, p := range generalPhrases {
		if strings.Contains(joined, " "+p+" ") {
			return p
		}
	}
	return ""
}

// scoped reports whether lower-case text says it is about this model,
// engine or run.
func scoped(text string) bool {
	joined := " " + strings.Join(proseWord.FindAllString(text, -1), " ") + " "
	for _, p := range scopePhrases {
		if strings.Contains(joined, " "+p+" ") {
			return true
		}
	}
	return false
}
