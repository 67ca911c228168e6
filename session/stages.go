package session

import (
	"fmt"

	"stepthrough/engine/trace"
	"stepthrough/views"
)

// stage is one entry of the stage registry: how a kind of stage is named
// on the pipeline strip and on a handout, and how its view model (a
// views.Panel, which draws itself as a panel and as an SVG) is built from
// a trace step. Adding a stage — "speculative verify", "tool call" — is one
// entry here, its kind in engine/trace and its panel type in views.
type stage struct {
	kind  trace.Kind
	label func(trace.Stage) string // on the pipeline strip
	title func(trace.Stage) string // a handout's heading
	build func(*Session, *trace.Step, trace.Stage) views.Panel
}

func named(s string) func(trace.Stage) string { return func(trace.Stage) string { return s } }

// stages is the registry: the stages in pipeline order (trace.Kinds).
var stages = []stage{
	{trace.StageTokenize, named("tokenize"), named("Tokenize"), (*Session).tokenizePanel},
	{trace.StageEmbed, named("embed"), named("Embed"), (*Session).embedPanel},
	{trace.StageAttention, func(x trace.Stage) string { return fmt.Sprintf("L%d attn", x.Layer+1) },
		func(x trace.Stage) string { return fmt.Sprintf("Attention, layer %d", x.Layer+1) }, (*Session).attentionPanel},
	{trace.StageMLP, func(x trace.Stage) string { return fmt.Sprintf("L%d MLP", x.Layer+1) },
		func(x trace.Stage) string { return fmt.Sprintf("MLP, layer %d", x.Layer+1) }, (*Session).mlpPanel},
	{trace.StageLogits, named("logits"), named("Logits"), (*Session).logitsPanel},
	{trace.StageSoftmax, named("softmax"), named("Softmax"), (*Session).softmaxPanel},
	{trace.StageSampler, func(x trace.Stage) string { return fmt.Sprintf("sampler %d", x.SamplerStep+1) },
		func(x trace.Stage) string { return fmt.Sprintf("Sampler step %d", x.SamplerStep+1) }, (*Session).samplerPanel},
	{trace.StageSample, named("sample"), named("Sample"), (*Session).samplePanel},
	{trace.StageKV, named("KV append"), named("KV cache append"), (*Session).kvPanel},
	{trace.StagePropose, named("propose"), named("Speculative round: the draft proposes"), specPanel("propose")},
	{trace.StageVerify, named("verify"), named("Speculative round: the target verifies"), specPanel("verify")},
	{trace.StageAccept, named("accept/reject"), named("Speculative round: accept or reject"), specPanel("accept")},
	{trace.StageRollback, named("rollback"), named("Speculative round: roll back"), specPanel("rollback")},
}

// stageOf finds a kind's registry entry; an unknown kind gets a plain
// label and no panel.
func stageOf(k trace.Kind) stage {
	for _, s := range stages {
		if s.kind == k {
			return s
		}
	}
	return stage{kind: k, label: named(string(k)), title: named(string(k)),
		build: func(*Session, *trace.Step, trace.Stage) views.Panel { return nil }}
}

// labelOf is a stage's short label (the stage strip, the status line): a
// sampler step is named by the filter it ran (top-k, min-p, …) when the
// step recorded its chain.
func labelOf(st *trace.Step, x trace.Stage) string {
	if x.Name == trace.StageSampler && st != nil && x.SamplerStep >= 0 && x.SamplerStep < len(st.Sampler) {
		return string(st.Sampler[x.SamplerStep].Step)
	}
	return stageOf(x.Name).label(x)
}

// Title is a stage's heading on a handout.
func Title(x views.Stage) string {
	return stageOf(trace.Kind(x.Name)).title(trace.Stage{Name: trace.Kind(x.Name), Layer: x.Layer, SamplerStep: x.SamplerStep})
}
