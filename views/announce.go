package views

import (
	"fmt"
	"strings"
)

// What the page's one live region (#announce) says when a view changes.
// The server writes the sentences on the swapped view (data-announce, one
// per line); the page says the lines that changed since the last view,
// so a student hears the instructor's step, a slider's new count, a
// reveal — every number in them the engine's, as the panels show them.

// Announce is the Explorer's sentence for its current stage, e.g.
// "Stage 20 of 28: softmax; at T = 0.80 and top-p 0.95 the sampler chain
// keeps 1 token; the most likely next token is " Par", 99.92%.", then the
// step's notice on a line of its own. Empty before a run.
func Announce(e Explorer) string {
	if len(e.Stages) == 0 {
		return ""
	}
	return lines(stageSentence(e), versusSpoken(e.Versus), e.Notice)
}

// versusSpoken is what the comparison with another weight type shows
// here, in one sentence: the next token under both, or how far the
// stage's last vector (the residual stream, where it is shown) is off.
func versusSpoken(x *Versus) string {
	switch {
	case x == nil:
		return ""
	case x.HaveDist:
		return fmt.Sprintf("Beside %s: the likeliest next token is %s, as stored %s; KL %s nats.", x.Type, x.VsTop, x.OwnTop, f(x.KL))
	case len(x.Rows) > 0:
		r := x.Rows[len(x.Rows)-1]
		return fmt.Sprintf("Beside %s: %s differs by a relative error of %s.", x.Type, r.Label, pctOf(r.RelErr))
	}
	return fmt.Sprintf("Beside %s: the same tokens.", x.Type)
}

// RoomAnnounce is a room view's lines: the lesson step, its question or
// the engine's revealed answer, and the stage (without the engine's
// numbers while the question hides them).
func RoomAnnounce(v RoomView) string {
	var step, question, stage string
	if v.LessonTitle != "" {
		step = fmt.Sprintf("Lesson step %d of %d: %s.", v.LessonStep+1, v.LessonSteps, v.StepTitle)
	}
	if q := v.Question; q != nil {
		question = "Question: " + q.Text
		if q.Revealed {
			question = "Revealed: " + q.Reveal
		}
	}
	if len(v.Explorer.Stages) > 0 {
		stage = stageSentence(v.Explorer) + " " + versusSpoken(v.Explorer.Versus)
		if v.Hidden {
			stage = stagePlace(v.Explorer) + "; its numbers appear at the reveal."
		}
	}
	return lines(step, question, stage)
}

// lines joins the non-empty sentences one per line.
func lines(ss ...string) string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, strings.Join(strings.Fields(s), " "))
		}
	}
	return strings.Join(out, "\n")
}

// stagePlace is where the view is: "Stage 6 of 28: layer 1 attention,
// token step 2 of 8".
func stagePlace(e Explorer) string {
	s := fmt.Sprintf("Stage %d of %d: %s", e.Current.Index+1, len(e.Stages), stageSpoken(e.Current))
	if e.Steps > 1 {
		s += fmt.Sprintf(", token step %d of %d", e.Step+1, e.Steps)
	}
	return s
}

// stageSentence is stagePlace and what the stage's panel computed.
func stageSentence(e Explorer) string {
	s := stagePlace(e)
	if d := panelSpoken(e.Panel); d != "" {
		s += "; " + d
	}
	return s + "."
}

// stageSpoken names a stage in words where the strip abbreviates it
// ("L1 attn" is layer 1's attention).
func stageSpoken(x Stage) string {
	switch x.Name {
	case "attention":
		return fmt.Sprintf("layer %d attention", x.Layer+1)
	case "mlp":
		return fmt.Sprintf("layer %d MLP", x.Layer+1)
	case "sampler":
		return "sampler step " + x.Label
	}
	return x.Label
}

// panelSpoken is the number a stage's panel is about, in a few words.
func panelSpoken(p Panel) string {
	switch p := p.(type) {
	case *TokenizePanel:
		return plural(len(p.Tokens), "token")
	case *AttentionPanel:
		return fmt.Sprintf("head %d of %d%s", p.Head+1, p.Heads, offWord(p.HeadOff))
	case *MLPPanel:
		return strings.TrimPrefix(offWord(p.Off), " ")
	case *LogitsPanel:
		if len(p.Top) > 0 {
			return fmt.Sprintf("the highest logit is %s, %s", p.Top[0].Piece, f(p.Top[0].Value))
		}
	case *SoftmaxPanel:
		return softmaxSpoken(p)
	case *SamplerPanel:
		if p.Skipped {
			return fmt.Sprintf("%s is skipped: all %s pass", p.Name, plural(p.Before, "token"))
		}
		return fmt.Sprintf("%s keeps %d of %s", p.Name, p.After, plural(p.Before, "token"))
	case *SamplePanel:
		return fmt.Sprintf("the draw picks %s, %s", p.Chosen.Piece, pct(p.Chosen.Value))
	case *KVPanel:
		return fmt.Sprintf("the cache holds %d of %d positions", p.Len, p.Capacity)
	}
	return ""
}

// softmaxSpoken is the softmax panel at its sliders: what the chain keeps
// and the likeliest token.
func softmaxSpoken(p *SoftmaxPanel) string {
	var parts []string
	if p.ChainErr == "" {
		parts = append(parts, fmt.Sprintf("at %s and top-p %s the sampler chain keeps %s", chainT(p), fx(p.TopP), plural(p.Kept, "token")))
	}
	if len(p.Top) > 0 {
		top := fmt.Sprintf("the most likely next token is %s, %s", p.Top[0].Piece, pct(p.Top[0].Value))
		if p.ChainErr != "" || fx(p.ChainT) != fx(p.Temperature) {
			top += " at T = " + fx(p.Temperature)
		}
		parts = append(parts, top)
	}
	return strings.Join(parts, "; ")
}

// offClause is a head's intervention note's first clause ("; Head 2 is
// switched off in this run"), for the heatmap's name; "" without one.
func offClause(note string) string {
	if note == "" {
		return ""
	}
	if i := strings.Index(note, ":"); i > 0 {
		note = note[:i]
	}
	return "; " + note
}

func offWord(off bool) string {
	if off {
		return " (switched off)"
	}
	return ""
}
