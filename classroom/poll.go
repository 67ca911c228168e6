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
	if withModel {
		correct, _ = lessons.EngineAnswer(st, tk, q)
		if _, ok := counts[key(correct)]; !ok {
			counts[key(correct)] = 0
		}
		if q.Kind == "next-token" && st.Logits != nil {
			probs = sample.Probabilities(st.Logits.Logits, 1)
			for _, id := range sample.TopN(probs, 5) {
				if p := string(tk.Bytes(id)); counts[p] == 0 {
					counts[p] = 0
				}
			}
		}
	}
	total := len(answers)
	rows := make([]views.PollRow, 0, len(counts))
	for a, n := range counts {
		r := views.PollRow{Answer: a, Count: n}
		if total > 0 {
			r.Share = float64(n) / float64(total)
		}
		if withModel {
			if q.Kind == "probability" {
				r.Correct = a == key(correct)
			} else {
				r.Correct = lessons.Judge(q.Kind, correct, a)
			}
			if probs != nil {
				if ids := tk.EncodeIDs(a, false); len(ids) == 1 && string(tk.Bytes(ids[0])) == a {
					r.ModelP, r.HasModelP = float64(probs[ids[0]]), true
				}
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

// probabilityBin puts a probability answer in its tenth: "40–50%".
func probabilityBin(a string) string {
	v, ok := lessons.ParseProbability(a)
	if !ok {
		return a
	}
	return binLabel(min(9, int(v*10)))
}

func binLabel(b int) string { return fmt.Sprintf("%d–%d%%", 10*b, 10*b+10) }
