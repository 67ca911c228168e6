package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
	"stepthrough/engine/quantlens"
)

// QuantLensLayer is one row of `quantlens`'s table: the means over
// positions, the head whose pattern moved most, and at how many positions
// the logit lens's top token is the same under both types.
type QuantLensLayer struct {
	Layer      int     `json:"layer"` // 1-based
	AttnRelErr float64 `json:"attn_rel_err"`
	MLPRelErr  float64 `json:"mlp_rel_err"`
	Cosine     float64 `json:"cosine"` // after the MLP
	WorstHead  string  `json:"worst_head"`
	WorstJS    float64 `json:"worst_head_js_bits"`
	LensAgree  int     `json:"lens_top_agrees"`
	Positions  int     `json:"positions"`
}

// QuantLensMechanism is the copying mechanism under one type.
type QuantLensMechanism struct {
	Type          string             `json:"type"`
	Heads         []engine.HeadScore `json:"top_heads"` // the three highest induction scores
	Copied, Total int                `json:"-"`
	CopyRate      float64            `json:"copy_rate"`
}

// QuantLensResult is what `quantlens` prints.
type QuantLensResult struct {
	Ref, Type     string               `json:"-"`
	Tokens        int                  `json:"tokens"`
	Layers        []QuantLensLayer     `json:"layers"`
	FirstDisagree int                  `json:"first_lens_disagreement_last_position"` // 1-based layer; 0: never
	MeanKL        float64              `json:"mean_kl"`
	Agreement     float64              `json:"top_token_agreement"`
	Mechanism     []QuantLensMechanism `json:"mechanism,omitempty"`
}

// runQuantLens follows a prompt through the file's own type and a
// conversion, layer by layer.
func runQuantLens(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "quantlens", "--model F --type T [--prompt TEXT] [--mechanism] [-t N] [--json]")
	path := fs.String("model", "", "model `file` (F32, F16 or BF16 weights: the reference)")
	typ := fs.String("type", "Q4_K_M", "the type to compare with: one of quantize's targets")
	prompt := fs.String("prompt", "Once upon a time, there was a girl named", "the prompt both types read")
	mech := fs.Bool("mechanism", false, "also score the heads and copying on random repeated text under each type (20 tokens read twice, 8 sequences, seed 1)")
	threads := fs.Int("t", 0, "CPU `threads` (0: one per core)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	target, err := quantize.ParseTarget(*typ)
	if err != nil {
		return usageError{err}
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	ids := m.Tokenizer.EncodeIDs(*prompt, true)
	if len(ids) > quantlens.MaxTokens {
		return usageError{fmt.Errorf("--prompt is %d tokens; the limit is %d", len(ids), quantlens.MaxTokens)}
	}
	qm, _, _, err := quantize.InMemory(m.File, target)
	if err != nil {
		return fmt.Errorf("%s to %s: %w", *path, target, err)
	}
	opt := engine.Options{Threads: *threads, Backend: "cpu", Context: max(len(ids), 41)}
	res := &QuantLensResult{Ref: model.Summarize(m.File).Type, Type: target, Tokens: len(ids)}
	var loaded [2]*engine.Loaded
	for i, mm := range []*model.Model{m, qm} {
		if loaded[i], err = engine.Load(mm, opt); err != nil {
			return err
		}
		defer loaded[i].Close()
	}
	if err := res.measure(ctx, loaded, ids); err != nil {
		return err
	}
	if *mech {
		if err := res.mechanism(ctx, loaded); err != nil {
			return err
		}
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	return res.write(env)
}

// measure runs both passes and fills the table.
func (res *QuantLensResult) measure(ctx context.Context, loaded [2]*engine.Loaded, ids []int32) error {
	var passes [2]*quantlens.Pass
	for i, l := range loaded {
		p, err := quantlens.Run(ctx, l, ids)
		if err != nil {
			return err
		}
		passes[i] = p
	}
	r, err := quantlens.Compare(passes[0], passes[1])
	if err != nil {
		return err
	}
	for i, l := range r.Layers {
		h, hd := l.WorstHead()
		res.Layers = append(res.Layers, QuantLensLayer{Layer: i + 1, AttnRelErr: quantlens.SpreadOf(l.Attn.RelErr).Mean, MLPRelErr: quantlens.SpreadOf(l.MLP.RelErr).Mean,
			Cosine: quantlens.SpreadOf(l.MLP.Cosine).Mean, WorstHead: fmt.Sprintf("L%dH%d", i+1, h+1), WorstJS: hd.JSMean, LensAgree: l.LensAgreements(), Positions: len(ids)})
	}
	res.FirstDisagree = r.FirstDisagree[len(ids)-1] + 1
	res.MeanKL, res.Agreement = r.MeanKL(), r.Agreement()
	return nil
}

// mechanism scores the heads and copying under both types.
func (res *QuantLensResult) mechanism(ctx context.Context, loaded [2]*engine.Loaded) error {
	m := loaded[0].Model
	seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, 20, 8, 1)
	if err != nil {
		return err
	}
	for i, l := range loaded {
		mm, err := quantlens.MeasureMechanism(ctx, l, seqs)
		if err != nil {
			return err
		}
		typ := []string{res.Ref, res.Type}[i]
		res.Mechanism = append(res.Mechanism, QuantLensMechanism{Type: typ, Heads: mm.Heads[:min(3, len(mm.Heads))], Copied: mm.Copied, Total: mm.Total, CopyRate: mm.CopyRate()})
	}
	return nil
}

func (res *QuantLensResult) write(env Env) error {
	fmt.Fprintf(env.Stdout, "%s (as stored) against %s, %d prompt tokens; means over positions, rel.err = ‖%s−stored‖/‖stored‖ of the residual stream\n\n",
		res.Ref, res.Type, res.Tokens, res.Type)
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "layer\tattn rel.err\tmlp rel.err\tcosine (mlp)\tworst head (JS, bits)\tlens top agrees")
	for _, l := range res.Layers {
		fmt.Fprintf(w, "%d\t%.4f\t%.4f\t%.5f\t%s %.4f\t%d/%d\n", l.Layer, l.AttnRelErr, l.MLPRelErr, l.Cosine, l.WorstHead, l.WorstJS, l.LensAgree, l.Positions)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	first := "never"
	if res.FirstDisagree > 0 {
		first = fmt.Sprintf("first at layer %d", res.FirstDisagree)
	}
	fmt.Fprintf(env.Stdout, "\nthe lens's top token at the last position (the next token) disagrees: %s\n", first)
	fmt.Fprintf(env.Stdout, "final: mean KL %.4g nats, the top token agrees at %.0f%% of positions\n", res.MeanKL, 100*res.Agreement)
	for _, m := range res.Mechanism {
		fmt.Fprintf(env.Stdout, "%s: induction heads", m.Type)
		for _, h := range m.Heads {
			fmt.Fprintf(env.Stdout, " %s %.3f", h.Head, h.Induction)
		}
		fmt.Fprintf(env.Stdout, "; copies %d of %d repeated tokens (%.3f)\n", m.Copied, m.Total, m.CopyRate)
	}
	return nil
}
