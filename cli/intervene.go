package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
)

// ablateFlag registers --ablate.
func ablateFlag(fs *flag.FlagSet) *string {
	return fs.String("ablate", "", "interventions: heads, MLP units or a layer's attention or MLP switched off or scaled, written L4H5, L4H5*0.5, L2U17, L3attn, L3mlp, joined by ';' (they run on the CPU)")
}

// readEdits reads --ablate for m: nil for none. With edits the backend
// auto becomes the CPU, and vulkan is refused.
func readEdits(text string, backend *string, m *model.Model) (*intervene.Set, error) {
	if text == "" {
		return nil, nil
	}
	set, err := intervene.Parse(text)
	if err != nil {
		return nil, usageError{err}
	}
	if err := set.Check(m.Config.EditShape()); err != nil {
		return nil, usageError{err}
	}
	switch *backend {
	case "auto":
		*backend = "cpu"
	case "vulkan":
		return nil, usageError{fmt.Errorf("--ablate: %w", intervene.ErrBackend)}
	}
	return set, nil
}

// lensTop is how many tokens the logit lens lists per layer and position.
const lensTop = 5

// LensOut is the logit lens as `logits --lens` writes it: for every layer
// and prompt position, the tokens the model would predict if it ended
// after that layer, and where the model's own final prediction ranks.
type LensOut struct {
	Tokens []int32     `json:"tokens"`
	Ablate string      `json:"ablate,omitempty"`
	Layers []LensLayer `json:"layers"`
}

// LensLayer is one layer's lens.
type LensLayer struct {
	Layer     int       `json:"layer"` // from 1
	Positions []LensPos `json:"positions"`
}

// LensPos is one position's lens.
type LensPos struct {
	Top       []LensToken `json:"top"`
	FinalRank int         `json:"final_rank"` // the last layer's top token's rank here, from 1
}

// LensToken is a token and its probability (T = 1).
type LensToken struct {
	ID    int32   `json:"id"`
	Piece string  `json:"piece"`
	P     float64 `json:"p"`
}

// lensHook collects every layer's lens rows; build turns them into
// LensOut once the pass ends.
type lensHook struct {
	rows [][][]float32 // [layer][position] logits
}

func (h *lensHook) hooks() *hooks.Hooks {
	return &hooks.Hooks{OnLens: func(e hooks.Lens) {
		for len(h.rows) <= e.Layer {
			h.rows = append(h.rows, nil)
		}
		for t := range e.N {
			h.rows[e.Layer] = append(h.rows[e.Layer], append([]float32(nil), e.Logits[t*e.Vocab:(t+1)*e.Vocab]...))
		}
	}}
}

func (h *lensHook) write(w io.Writer, m *model.Model, ids []int32, ablate string) error {
	out := LensOut{Tokens: ids, Ablate: ablate}
	last := h.rows[len(h.rows)-1]
	for l, rows := range h.rows {
		L := LensLayer{Layer: l + 1}
		for p, logits := range rows {
			probs := sample.Probabilities(logits, 1)
			var pos LensPos
			for _, id := range sample.TopN(probs, lensTop) {
				pos.Top = append(pos.Top, LensToken{ID: id, Piece: m.Tokenizer.Display(id), P: float64(probs[id])})
			}
			final := sample.TopN(last[p], 1)[0]
			pos.FinalRank = 1
			for _, q := range probs {
				if q > probs[final] {
					pos.FinalRank++
				}
			}
			L.Positions = append(L.Positions, pos)
		}
		out.Layers = append(out.Layers, L)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
