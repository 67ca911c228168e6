package present

import (
	"net/url"

	"stepthrough/views"
)

// example is a prompt the first page offers, chosen for its next-token
// distribution on the lesson model; TestExamplesHoldOnTheModel checks
// each claim against the engine.
type example struct {
	prompt, why string
	// the claim: the top token's probability at T = 1 lies in [lo, hi]
	lo, hi float64
}

var examples = []example{
	{"She was very", "several feelings share the next word: no token reaches 30%", 0, 0.3},
	{"Lily wanted to play with her", "a flat field of toys: the most likely takes under 15%", 0, 0.15},
	{"One day, Tom went to the", "places close together: watch top-p decide how many stay", 0, 0.3},
	{"The cat sat on the", "one word takes over 90%: what temperature can and cannot change", 0.9, 1},
}

// Examples are the first page's example prompts, each a link that runs it
// on the lesson model.
func Examples() []views.Example {
	var out []views.Example
	for _, x := range examples {
		q := url.Values{"prompt": {x.prompt}, "model": {"lesson.gguf"}}
		out = append(out, views.Example{Prompt: x.prompt, Why: x.why, URL: "/?" + q.Encode()})
	}
	return out
}
