// Package quantlens follows one prompt through two weight types of one
// model (the file's own type and a conversion of it) and says where
// inside the model the two part: the residual stream's relative error
// and cosine similarity after each layer's attention and MLP, position
// by position; each head's attention pattern (the Jensen–Shannon
// divergence of its rows); the logit lens's top token under both; and
// the final next-token distributions (package quantize's Stat). It
// reads every value from the engine's hooks, so it measures the pass a
// viewer sees; whether a mechanism survives is measured with the
// engine's own head scores and copy count (MeasureMechanism).
package quantlens

import (
	"context"
	"fmt"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
)

// MaxTokens is the longest prompt a pass records: its attention rows
// take layers × heads × MaxTokens² values.
const MaxTokens = 128

// Pass is what one weight type computed over the prompt, copied from the
// hooks: per layer, the residual stream after attention and after the
// MLP (n×Embd), every head's attention row over the positions it sees
// (n×Heads×n, row t holding positions 0..t), and the logit lens's top
// token at each position; and the logits of every position (n×Vocab).
type Pass struct {
	Tokens              []int32
	Layers, Heads, Embd int
	Vocab               int
	AttnResid, MLPResid [][]float32 // [layer] n×Embd
	Weights             [][]float32 // [layer] n×Heads×n
	LensTop             [][]int32   // [layer] n
	Logits              []float32   // n×Vocab
	recorded, lensSeen  []int       // rows recorded per layer (a check that the backend sent every row)
}

// Run reads ids (a whole prompt, from position 0) with l, recording
// every layer's stages.
func Run(ctx context.Context, l *engine.Loaded, ids []int32) (*Pass, error) {
	if len(ids) == 0 || len(ids) > MaxTokens {
		return nil, fmt.Errorf("quantization lens: the prompt is %d tokens; give 1 to %d", len(ids), MaxTokens)
	}
	p := newPass(l.Model.Config, ids)
	s, err := l.NewSession(len(ids))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	logits, err := s.EvalAll(hooks.WithHooks(ctx, p.hooks()), ids)
	if err != nil {
		return nil, err
	}
	if len(logits) != len(ids)*p.Vocab {
		return nil, fmt.Errorf("quantization lens: %d logits for %d positions of %d", len(logits), len(ids), p.Vocab)
	}
	p.Logits = logits
	for layer := range p.Layers {
		if p.recorded[layer] != 2*len(ids) || p.lensSeen[layer] < len(ids) {
			return nil, fmt.Errorf("quantization lens: layer %d: the %s backend reported %d residual rows and %d lens rows of %d positions",
				layer+1, l.Backend().Name, p.recorded[layer], p.lensSeen[layer], len(ids))
		}
	}
	return p, nil
}

func newPass(c *model.Config, ids []int32) *Pass {
	n := len(ids)
	p := &Pass{Tokens: ids, Layers: c.Layers, Heads: c.Heads, Embd: c.Embd, Vocab: c.Vocab,
		recorded: make([]int, c.Layers), lensSeen: make([]int, c.Layers)}
	for range c.Layers {
		p.AttnResid = append(p.AttnResid, make([]float32, n*c.Embd))
		p.MLPResid = append(p.MLPResid, make([]float32, n*c.Embd))
		p.Weights = append(p.Weights, make([]float32, n*c.Heads*n))
		p.LensTop = append(p.LensTop, make([]int32, n))
	}
	return p
}

// hooks copy each stage into the pass, each row at its position.
func (p *Pass) hooks() *hooks.Hooks {
	n := len(p.Tokens)
	return &hooks.Hooks{
		OnResidual: func(e hooks.Residual) {
			dst := p.AttnResid[e.Layer]
			if e.After == "mlp" {
				dst = p.MLPResid[e.Layer]
			}
			copy(dst[e.Pos0*p.Embd:], e.X[:e.N*p.Embd])
			p.recorded[e.Layer] += e.N
		},
		OnAttention: func(e hooks.Attention) {
			for t := range e.N {
				pos := e.Pos0 + t
				for h := range e.Heads {
					row := e.Weights[(t*e.Heads+h)*e.Ctx:]
					copy(p.Weights[e.Layer][(pos*p.Heads+h)*n:], row[:pos+1])
				}
			}
		},
		OnLens: func(e hooks.Lens) {
			for t := range e.N {
				p.LensTop[e.Layer][e.Pos0+t] = engine.Argmax(e.Logits[t*e.Vocab : (t+1)*e.Vocab])
			}
			p.lensSeen[e.Layer] += e.N
		},
	}
}
