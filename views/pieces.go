package views

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EmptyPiece labels a vocabulary entry that writes no text, where a
// quoted label would read "" and say nothing.
const EmptyPiece = "(empty piece)"

// EmptyPieceWhy is why a piece is empty, for a chip's title and the note
// under a table that lists one.
const EmptyPieceWhy = "An empty piece is a vocabulary entry that writes no text: an unused slot of the vocabulary (a random-weight model pads its vocabulary with them, and with random weights they can score high)"

// PieceLabel is how a page names a token by its text (tokenizer.Display):
// quoted, so its spaces and escapes show (" Par", "\n"), or EmptyPiece
// for an entry that writes no text.
func PieceLabel(text string) string {
	if text == "" {
		return EmptyPiece
	}
	return strconv.Quote(text)
}

// pictures are the symbols a chip draws for whitespace, and what each
// stands for.
var pictures = []struct{ char, picture, name string }{
	{" ", "·", "space"},
	{"\n", "↵", "newline"},
	{"\t", "⇥", "tab"},
	{"\r", "␍", "carriage return"},
}

// ShowPiece is a token chip's text: spaces as ·, a newline as ↵, a tab as
// ⇥, a carriage return as ␍, any other control character as its Unicode
// control picture (␀ for NUL), and EmptyPiece for a piece that writes no
// text. A chip would otherwise draw whitespace as an empty box.
func ShowPiece(text string) string {
	if text == "" {
		return EmptyPiece
	}
	var b strings.Builder
	for _, r := range text {
		switch {
		case r < 0x20:
			b.WriteString(picture(r))
		case r == 0x7f:
			b.WriteRune('␡')
		case r == ' ':
			b.WriteRune('·')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func picture(r rune) string {
	for _, p := range pictures {
		if string(r) == p.char {
			return p.picture
		}
	}
	return string(rune(0x2400 + r))
}

// PieceNote says what a chip's symbols stand for ("↵ newline") or why a
// piece is empty; "" for a piece drawn as it is.
func PieceNote(text string) string {
	if text == "" {
		return EmptyPieceWhy
	}
	if !utf8.ValidString(text) {
		return ""
	}
	var said []string
	seen := map[rune]bool{}
	for _, r := range text {
		if seen[r] || r >= 0x20 && r != 0x7f {
			continue
		}
		seen[r] = true
		name := fmt.Sprintf("control character U+%04X", r)
		if r == 0x7f {
			name = "delete character U+007F"
		}
		for _, p := range pictures {
			if string(r) == p.char {
				name = p.name
			}
		}
		said = append(said, ShowPiece(string(r))+" "+name)
	}
	return strings.Join(said, ", ")
}

// hasEmptyPiece reports whether any bar names an empty piece.
func hasEmptyPiece(bars []Bar) bool {
	for _, b := range bars {
		if b.Piece == EmptyPiece {
			return true
		}
	}
	return false
}
