package chattemplate

import (
	"encoding/json"
	"errors"
	"strings"
)

// A message's text is plain: the markers a user types in it must not
// become the control tokens the template writes. To know where that text
// lies in the rendered prompt, the template is rendered a second time with
// each supplied string replaced by a mark (private-use code points: an
// opening rune, a two-rune index, a closing rune), and the marked text is
// matched against the real one.
const (
	markOpen   = '\uF8F0'
	markClose  = '\uF8F1'
	markBase   = 0xE000 // index digits are U+E000..U+EFFF
	markDigits = 0x1000
)

// ErrNotLocated is RenderPlain's answer when the supplied text cannot be
// found in the prompt: the template changed it as it wrote it (cut it,
// tested what it holds, escaped it in a way not recognised), or a string
// held a mark's own code point.
var ErrNotLocated = errors.New("chat template: the messages' text cannot be located in the prompt the template writes")

// RenderPlain is Render that also returns where each string the caller
// supplied (contents, names, tool call ids and arguments, tool results,
// the tools' definitions) lies in the text: byte ranges, sorted, not
// overlapping. The text is Render's. When the strings cannot be located
// the text comes with ErrNotLocated and no ranges.
func (t *Template) RenderPlain(msgs []Message, tools []Tool, addGenerationPrompt bool) (string, [][2]int, error) {
	text, err := t.Render(msgs, tools, addGenerationPrompt)
	if err != nil {
		return "", nil, err
	}
	var m marker
	marked, err := t.render(msgs, tools, addGenerationPrompt, m.mark)
	if err != nil || m.clash {
		return text, nil, ErrNotLocated
	}
	plain, ok := m.locate(marked, text)
	if !ok {
		return text, nil, ErrNotLocated
	}
	return text, plain, nil
}

// marker hands out marks and keeps the strings they stand for.
type marker struct {
	orig  []string
	clash bool // a string held markOpen, or there were too many to mark
}

// mark returns s's mark. An empty string stays empty: templates test
// whether a content is empty, and a mark is not.
func (m *marker) mark(s string) string {
	if s == "" {
		return s
	}
	if strings.ContainsRune(s, markOpen) || len(m.orig) == markDigits*markDigits {
		m.clash = true
		return s
	}
	i := len(m.orig)
	m.orig = append(m.orig, s)
	return string([]rune{markOpen, rune(markBase + i/markDigits), rune(markBase + i%markDigits), markClose})
}

// index reads the mark at the start of s: the string it stands for and
// what follows it.
func (m *marker) index(s string) (string, string, bool) {
	r := []rune(s[:min(len(s), 4*4)])
	if len(r) < 4 || r[0] != markOpen || r[3] != markClose || r[1] < markBase || r[2] < markBase {
		return "", "", false
	}
	i := int(r[1]-markBase)*markDigits + int(r[2]-markBase)
	if r[1]-markBase >= markDigits || r[2]-markBase >= markDigits || i >= len(m.orig) {
		return "", "", false
	}
	return m.orig[i], s[len(string(r[:4])):], true
}

// locate walks marked and text together: the template's own text must be
// the same in both, and at each mark text must hold the string marked as
// the template writes it (as given, trimmed, or escaped inside a JSON
// string), followed by the template text that follows the mark.
func (m *marker) locate(marked, text string) ([][2]int, bool) {
	var plain [][2]int
	at := 0
	for {
		i := strings.IndexRune(marked, markOpen)
		if i < 0 {
			return plain, marked == text[at:]
		}
		if !strings.HasPrefix(text[at:], marked[:i]) {
			return nil, false
		}
		at += i
		s, rest, ok := m.index(marked[i:])
		if !ok {
			return nil, false
		}
		next := rest
		if j := strings.IndexRune(rest, markOpen); j >= 0 {
			next = rest[:j]
		}
		w, ok := written(s, text[at:], next)
		if !ok {
			return nil, false
		}
		if w > 0 {
			plain = append(plain, [2]int{at, at + w})
		}
		at += w
		marked = rest
	}
}

// written is the length of s as text (which starts where s was written)
// holds it, in one of the forms templates write a string in, when the
// template text next follows it.
func written(s, text, next string) (int, bool) {
	for _, form := range []string{s, strings.TrimSpace(s), jsonInner(s)} {
		if strings.HasPrefix(text, form) && strings.HasPrefix(text[len(form):], next) {
			return len(form), true
		}
	}
	return 0, false
}

// jsonInner is s as tojson writes it, without the quotes (HTML characters
// not escaped, as Python's json.dumps).
func jsonInner(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return s
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}
