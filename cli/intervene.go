package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
)

// editFlags are the interventions a command takes.
type editFlags struct {
	ablate                 *string
	steerLayer             *int
	steerToward, steerAway *string
	steerStrength          *float64
	patch, patchFrom       *string
	meanOver               *string
}

// addEditFlags registers --ablate, --steer-* and --patch*.
func addEditFlags(fs *flag.FlagSet) *editFlags {
	return &editFlags{
		ablate:        fs.String("ablate", "", "interventions: heads, MLP units or a layer's attention or MLP switched off or scaled, written L4H5, L4H5*0.5, L2U17, L3attn, L3mlp, joined by ';'"),
		steerLayer:    fs.Int("steer-layer", 0, "steering: add a direction to the residual stream after this layer (from 1; 0: none), at every position"),
		steerToward:   fs.String("steer-toward", "", "steering: the direction is this text's mean residual stream at --steer-layer…"),
		steerAway:     fs.String("steer-away", "", "…minus this text's"),
		steerStrength: fs.Float64("steer-strength", 4, "steering: the multiple of the direction added"),
		patch:         fs.String("patch", "", "activation patching: the residual stream after layer L at position P, written L3@5 (from 1), taken from a run of --patch-from"),
		patchFrom:     fs.String("patch-from", "", "activation patching: the text whose run gives --patch's vector"),
		meanOver:      fs.String("mean-over", "", "mean ablation: --ablate's heads and units switched off (no factor) take their mean output over this text's positions instead of zero"),
	}
}

// read reads --ablate for m and checks the other flags; nil for no
// intervention.
func (f *editFlags) read(m *model.Model) (*intervene.Set, error) {
	set := &intervene.Set{}
	if *f.ablate != "" {
		var err error
		if set, err = intervene.Parse(*f.ablate); err != nil {
			return nil, usageError{err}
		}
	}
	if err := set.Check(m.Config.EditShape()); err != nil {
		return nil, usageError{err}
	}
	steer, patch := *f.steerLayer != 0, *f.patch != ""
	switch {
	case steer && (*f.steerLayer < 1 || *f.steerLayer > m.Config.Layers):
		return nil, usageError{fmt.Errorf("intervention: --steer-layer %d: the model has layers 1 to %d", *f.steerLayer, m.Config.Layers)}
	case steer && (*f.steerToward == "" || *f.steerAway == ""):
		return nil, usageError{fmt.Errorf("intervention: --steer-layer needs --steer-toward and --steer-away texts")}
	case patch && *f.patchFrom == "":
		return nil, usageError{fmt.Errorf("intervention: --patch needs --patch-from, the text its vector comes from")}
	case *f.meanOver != "" && !slices.ContainsFunc(set.Edits, func(e intervene.Edit) bool { return e.Meanable() }):
		return nil, usageError{fmt.Errorf("intervention: --mean-over needs --ablate with a head or an MLP unit switched off (L4H1, L2U7)")}
	}
	if len(set.Edits) == 0 && !steer && !patch {
		return nil, nil
	}
	return set, nil
}

// vectors adds the steering and patching edits, whose vectors come from
// runs of their texts on s (left empty after).
func (f *editFlags) vectors(ctx context.Context, s *engine.Session, set *intervene.Set) error {
	if set == nil {
		return nil
	}
	defer s.Reset()
	tk := s.Model.Tokenizer
	if *f.meanOver != "" {
		mean, err := s.MeanOver(ctx, *f.meanOver, set)
		if err != nil {
			return usageError{err}
		}
		*set = *mean
	}
	if l := *f.steerLayer; l != 0 {
		e, err := s.SteerEdit(ctx, intervene.Steer{Layer: l - 1, Toward: *f.steerToward, Away: *f.steerAway, Strength: float32(*f.steerStrength)})
		if err != nil {
			return usageError{err}
		}
		set.Edits = append(set.Edits, e)
	}
	if *f.patch != "" {
		var l, p int
		if n, err := fmt.Sscanf(*f.patch, "L%d@%d", &l, &p); err != nil || n != 2 || l < 1 || l > s.Model.Config.Layers || p < 1 {
			return usageError{fmt.Errorf("intervention: --patch %q: write L3@5 (layer and position from 1)", *f.patch)}
		}
		from := tk.EncodeIDs(*f.patchFrom, true)
		if p > len(from) {
			return usageError{fmt.Errorf("intervention: --patch-from has %d tokens; position %d is past them", len(from), p)}
		}
		rows, err := s.Residuals(ctx, l-1, from)
		if err != nil {
			return err
		}
		set.Edits = append(set.Edits, intervene.Edit{Layer: l - 1, Site: intervene.Resid, Pos: p - 1, Op: intervene.Replace, Vector: rows[p-1]})
	}
	return nil
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
			pos.FinalRank = sample.Rank(probs, sample.TopN(last[p], 1)[0])
			L.Positions = append(L.Positions, pos)
		}
		out.Layers = append(out.Layers, L)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
