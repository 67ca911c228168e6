package present

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
	rank  func(trace.Stage) int    // its place along the pipeline (the model map lights what comes before)
	term  string                   // the glossary word that explains it ("": its label, a sampler step's filter)
	label func(trace.Stage) string // on the pipeline strip
	title func(trace.Stage) string // a handout's heading
	build func(*snap, *trace.Step, trace.Stage) views.Panel
}

// Ranks along the pipeline: the prompt's side, the layers (two stages
// each), then the head's side. A speculative round's phases share the
// ranks of the plain stages they stand in for.
const (
	rankLayers = 10
	rankHead   = 1 << 20
)

func at(r int) func(trace.Stage) int { return func(trace.Stage) int { return r } }

func named(s string) func(trace.Stage) string { return func(trace.Stage) string { return s } }

// stages is the registry: the stages in pipeline order (trace.Kinds).
var stages = []stage{
	{trace.StageTokenize, at(0), "token", named("tokenize"), named("Tokenize"), (*snap).tokenizePanel},
	{trace.StageEmbed, at(1), "embedding", named("embed"), named("Embed"), (*snap).embedPanel},
	{trace.StageAttention, func(x trace.Stage) int { return rankLayers + 2*x.Layer }, "attention",
		func(x trace.Stage) string { return fmt.Sprintf("L%d attn", x.Layer+1) },
		func(x trace.Stage) string { return fmt.Sprintf("Attention, layer %d", x.Layer+1) }, (*snap).attentionPanel},
	{trace.StageMLP, func(x trace.Stage) int { return rankLayers + 1 + 2*x.Layer }, "MLP",
		func(x trace.Stage) string { return fmt.Sprintf("L%d MLP", x.Layer+1) },
		func(x trace.Stage) string { return fmt.Sprintf("MLP, layer %d", x.Layer+1) }, (*snap).mlpPanel},
	{trace.StageLogits, at(rankHead), "logits", named("logits"), named("Logits"), (*snap).logitsPanel},
	{trace.StageSoftmax, at(rankHead + 1), "softmax", named("softmax"), named("Softmax"), (*snap).softmaxPanel},
	{trace.StageSampler, func(x trace.Stage) int { return rankHead + 2 + x.SamplerStep }, "",
		func(x trace.Stage) string { return fmt.Sprintf("sampler %d", x.SamplerStep+1) },
		func(x trace.Stage) string { return fmt.Sprintf("Sampler step %d", x.SamplerStep+1) }, (*snap).samplerPanel},
	{trace.StageSample, at(rankHead + 1000), "sample", named("sample"), named("Sample"), (*snap).samplePanel},
	{trace.StageKV, at(rankHead + 1001), "KV cache", named("KV append"), named("KV cache append"), (*snap).kvPanel},
	{trace.StagePropose, at(0), "", named("propose"), named("Speculative round: the draft proposes"), specPanel("propose")},
	{trace.StageVerify, at(rankHead), "", named("verify"), named("Speculative round: the target verifies"), specPanel("verify")},
	{trace.StageAccept, at(rankHead + 1), "", named("accept/reject"), named("Speculative round: accept or reject"), specPanel("accept")},
	{trace.StageRollback, at(rankHead + 1000), "", named("rollback"), named("Speculative round: roll back"), specPanel("rollback")},
}

// stageOf finds a kind's registry entry; an unknown kind gets a plain
// label and no panel.
func stageOf(k trace.Kind) stage {
	for _, s := range stages {
		if s.kind == k {
			return s
		}
	}
	return stage{kind: k, rank: at(-1), label: named(string(k)), title: named(string(k)),
		build: func(*snap, *trace.Step, trace.Stage) views.Panel { return nil }}
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

// viewStage is a stage of step st as the views receive it: its rank,
// label and glossary word decided here.
func viewStage(st *trace.Step, i int, x trace.Stage, current int) views.Stage {
	e, label := stageOf(x.Name), labelOf(st, x)
	term := e.term
	if x.Name == trace.StageSampler {
		term = label // a sampler step is explained by its filter
	}
	return views.Stage{Index: i, Name: string(x.Name), Label: label, Layer: x.Layer, SamplerStep: x.SamplerStep,
		Rank: e.rank(x), Term: term, Current: i == current, Done: i < current}
}
