package present

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"stepthrough/engine/tokenizer"
)

// texts is what each token of ids adds to a page's text, always valid
// UTF-8 whatever bytes a token holds: its own text; for tokens that hold
// the parts of one character (byte tokens), the character on the first
// of them and nothing on the rest; a byte that makes no character (or not
// yet: the next token may end it) escaped, "\x8a".
func texts(tk *tokenizer.Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i := 0; i < len(ids); {
		n, text := charRun(tk, ids[i:])
		out[i] = text
		i += n
	}
	return out
}

// charRun is the text of the first tokens of ids that make valid UTF-8
// together (a character is at most utf8.UTFMax bytes, so at most that
// many tokens), and how many they are; else the first token escaped.
func charRun(tk *tokenizer.Tokenizer, ids []int32) (int, string) {
	var b []byte
	for n, id := range ids[:min(len(ids), utf8.UTFMax)] {
		if b = append(b, tk.Display(id)...); utf8.Valid(b) {
			return n + 1, string(b)
		}
	}
	return 1, escapeBytes(tk.Display(ids[0]))
}

// escapeBytes writes the bytes of s that are not UTF-8 as \x8a, the rest
// as it is.
func escapeBytes(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[0])
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}
