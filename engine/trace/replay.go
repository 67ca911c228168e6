package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Kind names a kind of stage.
type Kind string

// The stage kinds, in pipeline order (Kinds).
const (
	StageTokenize  Kind = "tokenize"
	StageEmbed     Kind = "embed"
	StageAttention Kind = "attention"
	StageMLP       Kind = "mlp"
	StageLogits    Kind = "logits"
	StageSoftmax   Kind = "softmax"
	StageSampler   Kind = "sampler"
	StageSample    Kind = "sample"
	StageKV        Kind = "kv"
	// a speculative decoding round: the draft proposes, the target's
	// batch (embed, layers) verifies, each proposal is accepted or
	// rejected, and both caches roll back
	StagePropose  Kind = "propose"
	StageVerify   Kind = "verify"
	StageAccept   Kind = "accept"
	StageRollback Kind = "rollback"
)

// Kinds lists the stage kinds in pipeline order. A new stage kind is added
// here, to Stages (when a step has its data) and to the web's stage
// registry (package session), which builds its view.
var Kinds = []Kind{StageTokenize, StagePropose, StageEmbed, StageAttention, StageMLP, StageLogits, StageSoftmax, StageSampler, StageSample, StageKV,
	StageVerify, StageAccept, StageRollback}

// Stage is one stop when stepping through a trace.
type Stage struct {
	Name        Kind `json:"name"`
	Layer       int  `json:"layer"`        // for attention and mlp, else -1
	SamplerStep int  `json:"sampler_step"` // for sampler, else -1
}

// Stages lists the stops of a step in pipeline order: only the stages
// whose data the step holds (a trace recorded without attention has no
// attention stage). A speculative round is propose, the target's verify
// batch (embed and layers), verify, accept and rollback.
func Stages(s *Step) []Stage {
	var out []Stage
	add := func(name Kind, layer, sstep int) { out = append(out, Stage{name, layer, sstep}) }
	if s.Tokenize != nil {
		add(StageTokenize, -1, -1)
	}
	if s.Speculative != nil {
		add(StagePropose, -1, -1)
	}
	if s.Embed != nil {
		add(StageEmbed, -1, -1)
	}
	for _, L := range s.Layers {
		if L.Attention != nil {
			add(StageAttention, L.Index, -1)
		}
		if L.MLP != nil {
			add(StageMLP, L.Index, -1)
		}
	}
	if s.Speculative != nil {
		add(StageVerify, -1, -1)
		add(StageAccept, -1, -1)
		add(StageRollback, -1, -1)
		return out
	}
	if s.Logits != nil {
		add(StageLogits, -1, -1)
		add(StageSoftmax, -1, -1)
	}
	for i := range s.Sampler {
		add(StageSampler, -1, i)
	}
	if s.Sample != nil {
		add(StageSample, -1, -1)
	}
	if kvRecorded(s) {
		add(StageKV, -1, -1)
	}
	return out
}

// kvRecorded reports whether any layer recorded its KV append.
func kvRecorded(s *Step) bool {
	for _, L := range s.Layers {
		if L.KVLen > 0 {
			return true
		}
	}
	return false
}

// Cursor walks the stages of a list of steps, forward and back, with no
// recomputation: every stage's numbers are already in the steps.
type Cursor struct {
	Steps []*Step
	step  int
	stage int
}

// Position is the cursor's step index and stage index within it.
func (c *Cursor) Position() (step, stage int) { return c.step, c.stage }

// Seek moves to a step and stage, reporting whether both exist.
func (c *Cursor) Seek(step, stage int) bool {
	if step < 0 || step >= len(c.Steps) || stage < 0 || stage >= len(Stages(c.Steps[step])) {
		return false
	}
	c.step, c.stage = step, stage
	return true
}

// Current returns the current step and stage.
func (c *Cursor) Current() (*Step, Stage) {
	if len(c.Steps) == 0 {
		return nil, Stage{}
	}
	s := c.Steps[c.step]
	return s, Stages(s)[c.stage]
}

// Next moves one stage forward, into the next step after the last stage.
func (c *Cursor) Next() bool {
	if len(c.Steps) == 0 {
		return false
	}
	if c.stage+1 < len(Stages(c.Steps[c.step])) {
		c.stage++
		return true
	}
	if c.step+1 < len(c.Steps) {
		c.step, c.stage = c.step+1, 0
		return true
	}
	return false
}

// Prev moves one stage back.
func (c *Cursor) Prev() bool {
	if c.stage > 0 {
		c.stage--
		return true
	}
	if c.step > 0 {
		c.step--
		c.stage = len(Stages(c.Steps[c.step])) - 1
		return true
	}
	return false
}

// WriteJSONL writes one step as one line of JSON.
func WriteJSONL(w io.Writer, s *Step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("trace: step %d: %w", s.Index, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// MaxLine caps one JSON line when reading traces back.
const MaxLine = 256 << 20

// ReadJSONL reads steps written by WriteJSONL.
func ReadJSONL(r io.Reader) ([]*Step, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	var steps []*Step
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		s := new(Step)
		if err := json.Unmarshal(sc.Bytes(), s); err != nil {
			return nil, fmt.Errorf("trace: line %d: %w", line, err)
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: line %d: %w", len(steps)+1, err)
	}
	return steps, nil
}
