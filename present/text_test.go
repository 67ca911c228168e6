package present

import (
	"slices"
	"testing"

	"stepthrough/models/modelstest"
)

// Each token's share of a page's text is valid UTF-8: a character cut
// over byte tokens whole on the first of them, a byte that makes no
// character escaped.
func TestTexts(t *testing.T) {
	m, err := modelstest.Lesson(t).Get("lesson.gguf")
	if err != nil {
		t.Fatal(err)
	}
	tk := m.Tokenizer
	byteTok := func(b byte) int32 {
		for id := range int32(tk.Len()) {
			if tk.Display(id) == string([]byte{b}) {
				return id
			}
		}
		t.Fatalf("no token holds the byte 0x%02x alone", b)
		return 0
	}
	word := func(w string) int32 {
		ids := tk.EncodeIDs(w, false)
		if len(ids) != 1 {
			t.Fatalf("%q is %d tokens", w, len(ids))
		}
		return ids[0]
	}
	cat := []int32{byteTok(0xe7), byteTok(0x8c), byteTok(0xab)} // 猫
	for _, tt := range []struct {
		name string
		ids  []int32
		want []string
	}{
		{"words", []int32{word(" the"), word(" cat")}, []string{" the", " cat"}},
		{"a character over three tokens", cat, []string{"猫", "", ""}},
		{"after a word", append([]int32{word(" the")}, cat...), []string{" the", "猫", "", ""}},
		{"a lone continuation byte", []int32{byteTok(0x8a)}, []string{`\x8a`}},
		{"a character cut short", cat[:2], []string{`\xe7`, `\x8c`}},
		{"a lead byte then a word", []int32{byteTok(0xe7), word(" the")}, []string{`\xe7`, " the"}},
		{"a quote and a backslash stay", []int32{byteTok('"'), byteTok('\\')}, []string{`"`, `\`}},
		{"none", nil, []string{}},
	} {
		if got := texts(tk, tt.ids); !slices.Equal(got, tt.want) {
			t.Errorf("%s: texts = %q, want %q", tt.name, got, tt.want)
		}
	}
}
