package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// splitGPT2 is a hand-written matcher for reGPT2, equivalent to running the
// regex (FuzzGPT2Split checks that) but several times faster:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(text string, out []span) []span {
	for i := 0; i < len(text); {
		end := matchGPT2(text, i)
		out = append(out, span{i, end})
		i = end
	}
	return out
}

type runeClass uint8

const (
	classOther runeClass = iota
	classSpace
	classLetter
	classNumber
)

func classAt(text string, i int) (runeClass, int) {
	c := text[i]
	if c < utf8.RuneSelf {
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			return classLetter, 1
		case '0' <= c && c <= '9':
			return classNumber, 1
		case c == ' ' || '\t' <= c && c <= '\r':
			return classSpace, 1
		}
		return classOther, 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	switch {
	case unicode.IsLetter(r):
		return classLetter, n
	case unicode.IsNumber(r):
		return classNumber, n
	case unicode.IsSpace(r):
		return classSpace, n
	}
	return classOther, n
}

func matchGPT2(text string, i int) int {
	if text[i] == '\'' && i+1 < len(text) {
		rest := text[i+1:]
		for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
			if len(rest) >= len(c) && rest[:len(c)] == c {
				return i + 1 + len(c)
			}
		}
	}
	cls, n := classAt(text, i)
	j := i
	if text[i] == ' ' && i+1 < len(text) {
		if c2, _ := classAt(text, i+1); c2 != classSpace {
			j, cls = i+1, c2
			_, n = classAt(text, j)
		}
	}
	if cls != classSpace {
		k := j + n
		for k < len(text) {
			c, m := classAt(text, k)
			if c != cls {
				break
			}
			k += m
		}
		return k
	}
	// whitespace run from i
	k, last := i, i
	for k < len(text) {
		c, m := classAt(text, k)
		if c != classSpace {
			break
		}
		last = k
		k += m
	}
	if k < len(text) && last > i {
		return last // \s+(?!\S): leave the last space for the word that follows
	}
	return k
}
