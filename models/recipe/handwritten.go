package recipe

import (
	_ "embed"
	"fmt"
	"strings"
)

// handwrittenTSV is the hand-written copying checks (handwritten.tsv).
//
//go:embed handwritten.tsv
var handwrittenTSV string

// handCase is one hand-written copying check: greedy decoding after
// Prompt must write " "+Name (a name, or a word of a list).
type handCase struct{ Prompt, Name string }

// handwritten parses handwritten.tsv: comment lines start with #, every
// other line is a prompt and a name separated by a tab.
func handwritten() ([]handCase, error) {
	var cs []handCase
	for i, line := range strings.Split(strings.TrimSpace(handwrittenTSV), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		p, n, ok := strings.Cut(line, "\t")
		if !ok || p == "" || n == "" || strings.ContainsAny(n, " \t") {
			return nil, fmt.Errorf("handwritten.tsv line %d: want a prompt, a tab and one name: %q", i+1, line)
		}
		cs = append(cs, handCase{p, n})
	}
	return cs, nil
}

// handwritten adds to rate, for every hand-written check, whether greedy
// decoding writes the whole name.
func (e evaluator) handwritten(rate *Rate) error {
	cs, err := handwritten()
	if err != nil {
		return err
	}
	for _, c := range cs {
		got, err := e.completes(c.Prompt, c.Name)
		if err != nil {
			return err
		}
		rate.add(got.ok, func() string { return fmt.Sprintf("…%s → %q (want %q)", tail(c.Prompt, 40), got.got, c.Name) })
	}
	return nil
}
