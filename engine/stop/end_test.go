package stop

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// vocab is a test tokenizer: each token's bytes; eog ends generation.
type vocab struct {
	pieces []string
	eog    int32
}

func (v vocab) IsEOG(id int32) bool   { return id == v.eog }
func (v vocab) Bytes(id int32) []byte { return []byte(v.pieces[id]) }

// step is one pushed token's outcome.
type step struct{ Text, Finish string }

// The stop rule, token by token: an end of generation (its text not
// released, what was held released), a stop string split across tokens
// (never released), the token limit (the rest released), and a benchmark
// going on past the end of generation.
func TestEnd(t *testing.T) {
	v := vocab{pieces: []string{"<eog>", "Hello", " wor", "ld", ".\n", "\n", "The"}, eog: 0}
	cases := []struct {
		name   string
		limits Limits
		tokens []int32
		want   []step
	}{
		{name: "end of generation", limits: Limits{MaxTokens: 8, Stops: []string{"\n\n"}}, tokens: []int32{1, 4, 0},
			want: []step{{"Hello", ""}, {".", ""}, {"\n", EOS}}},
		{name: "stop across tokens", limits: Limits{MaxTokens: 8, Stops: []string{"\n\n"}}, tokens: []int32{1, 4, 5},
			want: []step{{"Hello", ""}, {".", ""}, {"", Stop}}},
		{name: "token limit", limits: Limits{MaxTokens: 2, Stops: []string{"ld."}}, tokens: []int32{2, 3},
			want: []step{{" wor", ""}, {"ld", Length}}},
		{name: "past the end", limits: Limits{MaxTokens: 3, IgnoreEOS: true}, tokens: []int32{0, 6, 0},
			want: []step{{"<eog>", ""}, {"The", ""}, {"<eog>", Length}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewEnd(v, c.limits)
			var got []step
			for _, id := range c.tokens {
				text, finish := e.Push(id)
				got = append(got, step{text, finish})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzEnd: whatever the tokens, the released text is the reply up to the
// first stop string (never the stop), the generation ends exactly once,
// at the first end of generation, stop string or limit.
func FuzzEnd(f *testing.F) {
	f.Add("Hello world.\n\nThe end", "\n\n", 3, 40)
	f.Add("aaaab", "aab", 1, 2)
	f.Fuzz(func(t *testing.T, text, stopText string, n, max int) {
		if n < 1 || n > 16 || max < 1 || max > 64 || len(text) > 256 {
			return
		}
		var pieces []string
		for i := 0; i < len(text); i += n {
			pieces = append(pieces, text[i:min(i+n, len(text))])
		}
		v := vocab{pieces: append(pieces, "<eog>"), eog: int32(len(pieces))}
		e := NewEnd(v, Limits{MaxTokens: max, Stops: []string{stopText}})
		var out strings.Builder
		finish, pushed := "", 0
		for id := range int32(len(pieces)) + 1 { // the text, then an end of generation
			var text string
			text, finish = e.Push(id)
			out.WriteString(text)
			pushed++
			if finish != "" {
				break
			}
		}
		if finish == "" {
			t.Fatal("no end after an end-of-generation token")
		}
		shown := strings.Join(pieces[:min(pushed, len(pieces))], "")
		want := shown
		if k := strings.Index(shown, stopText); stopText != "" && k >= 0 {
			want = shown[:k]
			if finish != Stop {
				t.Fatalf("stop %q in %q, finish %q", stopText, shown, finish)
			}
		}
		if out.String() != want {
			t.Fatalf("released %q, want %q (finish %s)", out.String(), want, finish)
		}
		if finish == Length && pushed != max || pushed > max {
			t.Fatalf("%d tokens pushed, limit %d, finish %s", pushed, max, finish)
		}
	})
}
