package recipe

import (
	"context"
	"fmt"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/perplexity"
	"stepthrough/engine/quantize"
	"stepthrough/models/corpus"
)

// QuantRow is the lesson model at one precision, measured on held-out
// text against the model as trained (F32).
type QuantRow struct {
	Type    string  `json:"type"`
	Bytes   int64   `json:"bytes"`
	PPL     float64 `json:"perplexity"`
	MeanKL  float64 `json:"mean_kl"`
	P99KL   float64 `json:"p99_kl"`
	SameTop float64 `json:"same_top"`
}

// Quantization measurement: the first QuantTextBytes of the held-out
// documents, chunks of QuantContext tokens (llama-perplexity's method).
const (
	QuantTextBytes = 60000
	QuantContext   = 128
)

// QuantText is the held-out text the table is measured on.
func QuantText(held []corpus.Doc) string {
	var b strings.Builder
	for _, d := range held {
		if b.Len() >= QuantTextBytes {
			break
		}
		b.WriteString(d.Text)
	}
	s := b.String()
	return s[:min(len(s), QuantTextBytes)]
}

// MeasureQuantization quantizes the model at path to each target in memory
// and measures perplexity and KL against it on text (F32 first, the base).
func MeasureQuantization(ctx context.Context, path, text string, targets []string, threads int) ([]QuantRow, error) {
	base, err := model.Load(path)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	bl, err := engine.Load(base, engine.Options{Threads: threads, Backend: "cpu"})
	if err != nil {
		return nil, err
	}
	defer bl.Close()
	ids := base.Tokenizer.EncodeIDs(text, true)
	opt := perplexity.Options{Context: QuantContext, Base: bl}
	r, err := perplexity.Run(ctx, bl, ids, opt)
	if err != nil {
		return nil, err
	}
	var size int64
	for _, t := range base.File.Tensors {
		size += int64(t.Size)
	}
	rows := []QuantRow{{Type: "F32", Bytes: size, PPL: r.PPL, SameTop: 1}}
	for _, t := range targets {
		row, err := measureTarget(ctx, base, bl, ids, t, threads)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func measureTarget(ctx context.Context, base *model.Model, bl *engine.Loaded, ids []int32, target string, threads int) (QuantRow, error) {
	w, rep, err := quantize.Convert(base.File, target, quantize.Options{})
	if err != nil {
		return QuantRow{}, err
	}
	f, err := gguf.ParseAligned(w.Bytes())
	if err != nil {
		return QuantRow{}, err
	}
	m, err := model.FromFile(f)
	if err != nil {
		return QuantRow{}, err
	}
	lm, err := engine.Load(m, engine.Options{Threads: threads, Backend: "cpu"})
	if err != nil {
		return QuantRow{}, err
	}
	defer lm.Close()
	r, err := perplexity.Run(ctx, lm, ids, perplexity.Options{Context: QuantContext, Base: bl})
	if err != nil {
		return QuantRow{}, err
	}
	var size int64
	for _, t := range rep.Tensors {
		if info, ok := f.Tensor(t.Name); ok {
			size += int64(info.Size)
		}
	}
	return QuantRow{Type: target, Bytes: size, PPL: r.PPL, MeanKL: r.MeanKL, P99KL: r.P99KL, SameTop: r.SameTop}, nil
}
