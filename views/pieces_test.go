package views

import "testing"

// Token texts as pages draw them: whitespace as symbols a chip can show,
// with what each stands for; an empty piece named and explained.
func TestPieceLabels(t *testing.T) {
	for _, tt := range []struct {
		text, label, show, note string
	}{
		{" Par", `" Par"`, "·Par", ""},
		{"\n", `"\n"`, "↵", "↵ newline"},
		{"a\tb\r\n", `"a\tb\r\n"`, "a⇥b␍↵", "⇥ tab, ␍ carriage return, ↵ newline"},
		{"\x00", `"\x00"`, "␀", "␀ control character U+0000"},
		{"", EmptyPiece, EmptyPiece, EmptyPieceWhy},
		{"<|im_end|>", `"<|im_end|>"`, "<|im_end|>", ""},
	} {
		t.Run(tt.label, func(t *testing.T) {
			if got := PieceLabel(tt.text); got != tt.label {
				t.Errorf("PieceLabel = %q, want %q", got, tt.label)
			}
			if got := ShowPiece(tt.text); got != tt.show {
				t.Errorf("ShowPiece = %q, want %q", got, tt.show)
			}
			if got := PieceNote(tt.text); got != tt.note {
				t.Errorf("PieceNote = %q, want %q", got, tt.note)
			}
		})
	}
}
