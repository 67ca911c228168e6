package views

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The live region's lines name the stage in words and the number its panel
// is about; a room's hide the numbers while its question waits.
func TestAnnounce(t *testing.T) {
	stages := []Stage{{Index: 0, Name: "tokenize", Label: "tokenize"}, {Index: 1, Name: "attention", Label: "L2 attn", Layer: 1},
		{Index: 2, Name: "softmax", Label: "softmax"}, {Index: 3, Name: "sampler", Label: "top-p", SamplerStep: 3}}
	at := func(i int, p Panel) Explorer {
		return Explorer{Stages: stages, Current: stages[i], Step: 1, Steps: 3, Panel: p}
	}
	soft := &SoftmaxPanel{Temperature: 0.8, ChainT: 0.8, TopP: 0.95, Kept: 2, Top: []Bar{{Piece: `" Par"`, Value: 0.9951}}}
	question := &RoomQuestion{Text: "Which token will score highest?"}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"before a run", Announce(Explorer{}), ""},
		{"attention", Announce(at(1, &AttentionPanel{Head: 2, Heads: 6, HeadOff: true})),
			"Stage 2 of 4: layer 2 attention, token step 2 of 3; head 3 of 6 (switched off)."},
		{"softmax", Announce(at(2, soft)),
			`Stage 3 of 4: softmax, token step 2 of 3; at T = 0.80 and top-p 0.95 the sampler chain keeps 2 tokens; the most likely next token is " Par", 99.51%.`},
		{"softmax, bars at another T than the chain's", Announce(at(2, &SoftmaxPanel{Temperature: 1, ChainT: 0, TopP: 0.95, Kept: 1, Top: []Bar{{Piece: `" Par"`, Value: 0.5}}})),
			`Stage 3 of 4: softmax, token step 2 of 3; at T = 0 (greedy) and top-p 0.95 the sampler chain keeps 1 token; the most likely next token is " Par", 50.00% at T = 1.00.`},
		{"a sampler step", Announce(at(3, &SamplerPanel{Name: "top-p", Before: 40, After: 3})),
			"Stage 4 of 4: sampler step top-p, token step 2 of 3; top-p keeps 3 of 40 tokens."},
		{"beside another type, from the logits on", Announce(Explorer{Stages: stages, Current: stages[2], Steps: 1, Panel: soft,
			Versus: &Versus{Type: "Q4_0", HaveDist: true, OwnTop: `" toy"`, VsTop: `" sock"`, KL: 0.0312}}),
			`Stage 3 of 4: softmax; at T = 0.80 and top-p 0.95 the sampler chain keeps 2 tokens; the most likely next token is " Par", 99.51%.` + "\n" +
				`Beside Q4_0: the likeliest next token is " sock", as stored " toy"; KL 0.0312 nats.`},
		{"beside another type, a layer", Announce(Explorer{Stages: stages, Current: stages[1], Steps: 1, Panel: &AttentionPanel{Head: 0, Heads: 6},
			Versus: &Versus{Type: "Q8_0", Rows: []VersusRow{{Label: "the residual stream after layer 2's attention", RelErr: 0.00123}}}}),
			"Stage 2 of 4: layer 2 attention; head 1 of 6.\nBeside Q8_0: the residual stream after layer 2's attention differs by a relative error of 0.123 %."},
		{"a notice on its own line", Announce(Explorer{Stages: stages, Current: stages[0], Steps: 1, Notice: "The calculator wrote 12.", Panel: &TokenizePanel{Tokens: make([]Token, 8)}}),
			"Stage 1 of 4: tokenize; 8 tokens.\nThe calculator wrote 12."},
		{"a room's question hides the numbers", RoomAnnounce(RoomView{LessonTitle: "Logits", LessonStep: 1, LessonSteps: 3, StepTitle: "Raw scores",
			Question: question, Hidden: true, Explorer: at(2, soft)}),
			"Lesson step 2 of 3: Raw scores.\nQuestion: Which token will score highest?\nStage 3 of 4: softmax, token step 2 of 3; its numbers appear at the reveal."},
		{"the reveal", RoomAnnounce(RoomView{LessonTitle: "Logits", LessonStep: 1, LessonSteps: 3, StepTitle: "Raw scores",
			Question: &RoomQuestion{Text: question.Text, Revealed: true, Reveal: `The engine's answer: " Par".`}, Explorer: at(2, soft)}),
			"Lesson step 2 of 3: Raw scores.\nRevealed: The engine's answer: \" Par\".\n" + `Stage 3 of 4: softmax, token step 2 of 3; at T = 0.80 and top-p 0.95 the sampler chain keeps 2 tokens; the most likely next token is " Par", 99.51%.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// The model map's parts are one tab stop: the part the viewer is at, else
// the first part that opens a stage; never a part that opens none.
func TestMapTabStop(t *testing.T) {
	parts := []MapPart{{Key: "tokenize", Stage: "tokenize"}, {Key: "norm"}, {Key: "logits", Stage: "logits"}, {Key: "mtp", Stage: "mtp", Absent: true}}
	for _, tc := range []struct {
		name string
		here string
		want []string
	}{
		{"at logits", "logits", []string{"logits"}},
		{"at a part that opens nothing", "norm", []string{"tokenize"}},
		{"nowhere", "", []string{"tokenize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := MapLayout{}
			for _, p := range parts {
				p.Here = p.Key == tc.here
				L.Parts = append(L.Parts, p)
			}
			var got []string
			for _, p := range L.Parts {
				if L.TabStop(p) {
					got = append(got, p.Key)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("tab stops (-want +got)\n%s", d)
			}
		})
	}
}
