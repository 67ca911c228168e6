package lessons

import (
	"testing"
	"unicode/utf8"
)

// An answer is written as it is when it is UTF-8 (every answer a student
// can send is) and quoted when it is not; a token is labelled quoted, as
// the Explorer shows tokens. Both are always valid UTF-8.
func TestShownAndLabel(t *testing.T) {
	for _, tt := range []struct {
		kind, answer, shown, label string
	}{
		{"next-token", " Sa", " Sa", `" Sa"`},
		{"next-token", "\x8a", `"\x8a"`, `"\x8a"`},
		{"next-token", "\xe7\x8c", `"\xe7\x8c"`, `"\xe7\x8c"`},
		{"next-token", "<|endoftext|>", "<|endoftext|>", `"<|endoftext|>"`},
		{"next-token", "猫", "猫", `"猫"`},
		{"choice", "The model stops copying it", "The model stops copying it", "The model stops copying it"},
		{"probability", "40–50%", "40–50%", "40–50%"},
		{"survivors", "\xff7", `"\xff7"`, `"\xff7"`},
	} {
		shown, label := Shown(tt.answer), Label(tt.kind, tt.answer)
		if shown != tt.shown || label != tt.label || !utf8.ValidString(shown+label) {
			t.Errorf("%s %q: Shown %q, Label %q; want %q, %q", tt.kind, tt.answer, shown, label, tt.shown, tt.label)
		}
	}
}
