package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// RopeParams are one kind of layer's rotary encoding, as llama.cpp's
// rope_ext takes them: pair i of a head at position p turns by
// θ = p·Base^(−2i/dims)/factor_i, interpolated by FreqScale (linear
// scaling), mixed back toward the unscaled angle by YaRN's ramp over
// Corr when ExtFactor is set, and cos and sin are multiplied by
// AttnFactor.
type RopeParams struct {
	Scaling    string // "none", "linear", "yarn" or "longrope" (as rope.scaling.type)
	Base       float32
	FreqScale  float32    // 1/factor; 1 when unscaled
	ExtFactor  float32    // YaRN's extrapolation mix; 0 unless yarn
	AttnFactor float32    // multiplies cos and sin
	Corr       [2]float32 // YaRN's correction dimensions
}

// yarn's defaults (llama.cpp's hparams), which none of these families'
// files override
const yarnBetaFast, yarnBetaSlow = 32, 1

var ropeScalings = []string{"none", "linear", "yarn", "longrope"}

// readRope reads the RoPE base and scaling of the global layers and the
// local layers' base.
func readRope(m *metadata, spec *Spec, c *Config) error {
	m.ignore("rope.scaling.finetuned") // informational; llama.cpp computes nothing from it
	if spec.Rope == RopeNone {
		return nil
	}
	base, err := m.floatKey("rope.freq_base", false, 10000, 1, 1e12)
	if err != nil {
		return err
	}
	scaling := "linear" // llama.cpp's default: a factor alone scales linearly
	full := m.arch + ".rope.scaling.type"
	m.read[full] = true
	if v, ok := m.f.Get(full); ok {
		s, _ := v.V.(string)
		if !slices.Contains(ropeScalings, s) {
			return fmt.Errorf("metadata %s = %v: want one of %v", full, v, ropeScalings)
		}
		scaling = s
	}
	factor, err := m.floatKey("rope.scaling.factor", false, 0, 0, 1e6)
	if err != nil {
		return err
	}
	if factor == 0 {
		if factor, err = m.floatKey("rope.scale_linear", false, 0, 0, 1e6); err != nil {
			return err
		}
	} else {
		m.ignore("rope.scale_linear")
	}
	attn, err := m.floatKey("rope.scaling.attn_factor", false, 1, 0, 1e6)
	if err != nil {
		return err
	}
	orig := c.ContextLen
	if err := m.intKey("rope.scaling.original_context_length", &orig, false, 1, maxContext); err != nil {
		return err
	}
	freqScale := float32(1)
	if factor != 0 && scaling != "none" {
		freqScale = float32(1 / factor)
	}
	ext, mscale := float32(0), float32(1)
	if scaling == "yarn" {
		// llama.cpp's context setup: the magnitude YaRN would add is
		// cancelled, since the kernel adds it again
		ext = 1
		f := 1 / freqScale
		if f > 1 {
			mscale = 0.1*float32(math.Log(float64(f))) + 1
		}
		mscale *= 1 / (1 + 0.1*float32(math.Log(float64(f))))
	}
	mscale *= float32(attn)
	c.RopeBase, c.RopeOrigCtx = float32(base), orig
	c.Rope = RopeParams{Scaling: scaling, Base: float32(base), FreqScale: freqScale, ExtFactor: ext, AttnFactor: mscale}
	c.Rope.Corr = yarnCorrDims(c.RopeDims, orig, c.Rope.Base)
	c.RopeLocal = c.Rope
	if spec.SWAPeriod == 0 {
		return nil
	}
	localDefault := base
	if spec.LocalRopeBase != 0 {
		localDefault = float64(spec.LocalRopeBase)
		c.RopeLocal.FreqScale = 1
	}
	lb, err := m.floatKey("rope.freq_base_swa", false, localDefault, 1, 1e12)
	if err != nil {
		return err
	}
	c.RopeLocal.Base = float32(lb)
	c.RopeLocal.Corr = yarnCorrDims(c.RopeDims, orig, c.RopeLocal.Base)
	return nil
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the dimensions between which
// YaRN ramps from interpolation to extrapolation.
func yarnCorrDims(dims, origCtx int, base float32) [2]float32 {
	corr := func(rot float32) float32 {
		return float32(dims) * float32(math.Log(float64(float32(origCtx)/(rot*2*math.Pi)))) / (2 * float32(math.Log(float64(base))))
	}
	start := float32(math.Floor(float64(corr(yarnBetaFast))))
	end := float32(math.Ceil(float64(corr(yarnBetaSlow))))
	return [2]float32{max(0, start), min(float32(dims-1), end)}
}

// refuseUnread fails on a key under the architecture's prefix that the
// engine did not read: it might change the forward pass (a scaling, a
// second head size, a cap), and ignoring it would give a silently wrong
// answer. Keys that change nothing when they hold their neutral value are
// accepted with it.
func (m *metadata) refuseUnread(spec *Spec) error {
	neutral := map[string]any{"expert_count": uint64(0), "expert_used_count": uint64(0), "attention.causal": true}
	for _, kv := range m.f.KV {
		rest, ok := strings.CutPrefix(kv.Key, m.arch+".")
		if !ok || m.read[kv.Key] {
			continue
		}
		if want, ok := neutral[rest]; ok {
			got := kv.Value.V
			if n, isInt := kv.Value.Uint(); isInt {
				got = n
			}
			if got == want {
				continue
			}
		}
		return fmt.Errorf("metadata %s = %v: not supported for %s models by this engine (it would change the forward pass)", kv.Key, kv.Value, spec.Name)
	}
	return nil
}
