package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
)

// editFlags are the interventions a command takes.
type editFlags struct {
	ablate                 *string
	steerLayer             *int
	steerToward, steerAway *string
	steerStrength          *float64
	patch, patchFrom       *string
	meanOver               *string
	patchAt                patchSite // --patch read by read
}

// patchSite is where --patch replaces the residual stream: after layer
// Layer at position Pos (both from 0).
type patchSite struct{ Layer, Pos int }

// addEditFlags registers --ablate, --steer-* and --patch*.
func addEditFlags(fs *flag.FlagSet) *editFlags {
	return &editFlags{
		ablate:        fs.String("ablate", "", "interventions: heads, MLP units or a layer's attention or MLP switched off or scaled, written L4H5, L4H5*0.5, L2U17, L3attn, L3mlp, joined by ';'"),
		steerLayer:    fs.Int("steer-layer", 0, "steering: add a direction to the residual stream after this layer (from 1; 0: none), at every position"),
		steerToward:   fs.String("steer-toward", "", "steering: the direction is this text's mean residual stream at --steer-layer…"),
		steerAway:     fs.String("steer-away", "", "…minus this text's"),
		steerStrength: fs.Float64("steer-strength", 4, "steering: the multiple of the direction added (-1000 to 1000)"),
		patch:         fs.String("patch", "", "activation patching: the residual stream after layer L at position P of the prompt, written L3@5 (from 1), taken from a run of --patch-from"),
		patchFrom:     fs.String("patch-from", "", "activation patching: the text whose run gives --patch's vector"),
		meanOver:      fs.String("mean-over", "", "mean ablation: --ablate's heads and units switched off (no factor) take their mean output over this text's positions instead of zero"),
	}
}

// read reads --ablate and --patch for m and checks the other flags; nil
// for no intervention.
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
	if err := f.checkSteer(m.Config.Layers); err != nil {
		return nil, usageError{err}
	}
	steer, patch := *f.steerLayer != 0, *f.patch != ""
	switch {
	case patch && *f.patchFrom == "":
		return nil, usageError{fmt.Errorf("intervention: --patch needs --patch-from, the text its vector comes from")}
	case *f.meanOver != "" && !slices.ContainsFunc(set.Edits, func(e intervene.Edit) bool { return e.Meanable() }):
		return nil, usageError{fmt.Errorf("intervention: --mean-over needs --ablate with a head or an MLP unit switched off (L4H1, L2U7)")}
	}
	if patch {
		var err error
		if f.patchAt, err = parsePatch(*f.patch, m.Config.Layers); err != nil {
			return nil, usageError{err}
		}
	}
	if len(set.Edits) == 0 && !steer && !patch {
		return nil, nil
	}
	return set, nil
}

// checkSteer checks the --steer-* flags for a model of layers layers; the
// strength has the bounds of a written steering (intervene.ParseSteer's,
// as the Explorer and Compare lanes read it).
func (f *editFlags) checkSteer(layers int) error {
	l := *f.steerLayer
	switch {
	case l == 0:
		return nil
	case l < 1 || l > layers:
		return fmt.Errorf("intervention: --steer-layer %d: the model has layers 1 to %d", l, layers)
	case *f.steerToward == "" || *f.steerAway == "":
		return fmt.Errorf("intervention: --steer-layer needs --steer-toward and --steer-away texts")
	}
	if s := *f.steerStrength; !(math.Abs(s) <= intervene.MaxSteerStrength) {
		return fmt.Errorf("intervention: --steer-strength %v: the strength is a number from -%g to %g", s, float64(intervene.MaxSteerStrength), float64(intervene.MaxSteerStrength))
	}
	return nil
}

// parsePatch reads --patch, written L3@5 (the layer, 1 to layers, and
// the prompt position, from 1), and nothing after it.
func parsePatch(text string, layers int) (patchSite, error) {
	bad := func(why string) (patchSite, error) {
		return patchSite{}, fmt.Errorf("intervention: --patch %.40q: %s (write L3@5: the layer and the prompt position, from 1)", text, why)
	}
	layer, pos, ok := strings.Cut(strings.TrimPrefix(text, "L"), "@")
	if !ok || !strings.HasPrefix(text, "L") {
		return bad("it is L, the layer, @ and the position")
	}
	l, lok := fromOne(layer)
	p, pok := fromOne(pos)
	switch {
	case !lok || !pok:
		return bad("the layer and the position are whole numbers from 1, with nothing after them")
	case l >= layers:
		return bad(fmt.Sprintf("the model has layers 1 to %d", layers))
	}
	return patchSite{Layer: l, Pos: p}, nil
}

// fromOne reads a whole number counted from 1, in its plain decimal form
// (no sign, no leading zero), and returns it from 0.
func fromOne(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n - 1, true
}

// patchSource is --patch-from's tokens (nil without --patch), once
// --patch's position is within them and within the prompt's tokens.
func (f *editFlags) patchSource(tk *tokenizer.Tokenizer, prompt int) ([]int32, error) {
	if *f.patch == "" {
		return nil, nil
	}
	from := tk.EncodeIDs(*f.patchFrom, true)
	for _, text := range []struct {
		name string
		n    int
	}{{"the prompt", prompt}, {"--patch-from", len(from)}} {
		if f.patchAt.Pos >= text.n {
			return nil, usageError{fmt.Errorf("intervention: --patch %s: position %d is past %s, which has %d tokens", *f.patch, f.patchAt.Pos+1, text.name, text.n)}
		}
	}
	return from, nil
}

// edited makes set, with the vectors of --mean-over, --steer-* and
// --patch read on s (engine.Session.ResolveEdits: the intact model; s is
// left empty), the edits of s's passes; prompt is the tokens of the
// prompt the edits run on. It returns the edits s applies.
func (f *editFlags) edited(ctx context.Context, s *engine.Session, set *intervene.Set, prompt int) (*intervene.Set, error) {
	if set == nil {
		return nil, nil
	}
	from, err := f.patchSource(s.Model.Tokenizer, prompt)
	if err != nil {
		return nil, err
	}
	src := engine.EditSources{MeanOver: *f.meanOver}
	if l := *f.steerLayer; l != 0 {
		src.Steer = &intervene.Steer{Layer: l - 1, Toward: *f.steerToward, Away: *f.steerAway, Strength: float32(*f.steerStrength)}
	}
	if from != nil {
		src.Patch = &engine.PatchSource{Layer: f.patchAt.Layer, Pos: f.patchAt.Pos, From: from}
	}
	if set, err = s.ResolveEdits(ctx, set, src); err != nil {
		return nil, usageError{err}
	}
	if err := s.SetEdits(set); err != nil {
		return nil, usageError{err}
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
