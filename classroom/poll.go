package classroom

import (
	"fmt"
	"sort"

	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
	"stepthrough/views"
)

// PollRows is the histogram of a class's answers to q at a trace step
// (pure: the step's logits and sampler steps and the tokenizer are all it
// reads). withModel adds the engine's side, as after the reveal: which
// rows are right and, for next-token questions, the model's top tokens
// with their probabilities at temperature 1, listed even if nobody chose
// them. Choices keep their order, probabilities fall in tenths, the rest
// go by count.
func PollRows(st *trace.Step, tk *tokenizer.Tokenizer, q *lessons.Question, answers map[string]string, withModel bool) []views.PollRow {
	key := func(a string) string { return a }
	order := map[string]int{} // rows with a fixed place: choices, probability bins
	for i, c := range q.Choices {
		order[c] = i + 1
	}
	if q.Kind == "probability" { // a histogram over ten bins, not one row per number typed
		key = probabilityBin
		for b := range 10 {
			order[binLabel(b)] = b + 1
		}
	}
	counts := map[string]int{}
	for _, a := range answers {
		counts[key(a)]++
	}
	for k := range order {
		if _, ok := counts[k]; !ok {
			counts[k] = 0
		}
	}
	var probs []float32
	correct := ""
	top := map[string]int32{} // the model's top tokens by their answer (tk.Display)
	if withModel {
		correct, _ = lessons.EngineAnswer(st, tk, q)
		if _, ok := counts[key(correct)]; !ok {
			counts[key(correct)] = 0
		}
		if q.Kind == "next-token" && st.Logits != nil {
			probs = sample.Probabilities(st.Logits.Logits, 1)
			for _, id := range sample.TopN(probs, 5) {
				p := tk.Display(id)
				top[p] = id
				if counts[p] == 0 {
					counts[p] = 0
				}
			}
		}
	}
	total := len(answers)
	rows := make([]views.PollRow, 0, len(counts))
	for a, n := range counts {
		// Raw answers are compared; the row carries them as pages write them.
		r := views.PollRow{Answer: lessons.Shown(a), Label: lessons.Label(q.Kind, a), Count: n}
		if total > 0 {
			r.Share = float64(n) / float64(total)
		}
		if withModel {
			if q.Kind == "probability" {
				r.Correct = a == key(correct)
			} else {
				r.Correct = lessons.Judge(q.Kind, correct, a)
			}
			if id, ok := tokenOf(tk, top, a); ok && probs != nil {
				r.ModelP, r.HasModelP = float64(probs[id]), true
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if oa, ob := order[a.Answer], order[b.Answer]; oa > 0 || ob > 0 {
			if oa > 0 && ob > 0 {
				return oa < ob
			}
			return oa > 0
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.ModelP != b.ModelP {
			return a.ModelP > b.ModelP
		}
		return a.Answer < b.Answer
	})
	return rows
}

// tokenOf is the token an answer is: one of the model's top tokens, or
// the one token whose text it is.
func tokenOf(tk *tokenizer.Tokenizer, top map[string]int32, a string) (int32, bool) {
	if id, ok := top[a]; ok {
		return id, true
	}
	if ids := tk.EncodeIDs(a, false); len(ids) == 1 && tk.Display(ids[0]) == a {
		return ids[0], true
	}
	return 0, false
}

// probabilityBin puts a probability answer in its tenth: "40–50%".
func probabilityBin(a string) string {
	v, ok := lessons.ParseProbability(a)
	if !ok {
		return a
	}
	return binLabel(min(9, int(v*10)))
}

func binLabel(b int) string { return fmt.Sprintf("%d–%d%%", 10*b, 10*b+10) }
