package present

import (
	"fmt"
	"net/url"
	"strings"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// The serving page's frame: its form, the recent runs, and one run as it
// stands (its load in words, each user's replies, each setting's results
// and, when done, the repeats and the verdict).

// DefaultServingForm is the form before the viewer changes it: a small
// load of 16 users on model, continuous batching against static.
func DefaultServingForm(model string) views.ServingForm {
	return views.ServingForm{Model: model, Users: "16", Rate: "50", PromptTokens: "32", MinTokens: "8", MaxTokens: "48", MaxSeqs: "4",
		Policy: "continuous", Cache: "contiguous", Chunked: "on", Compare: "static,contiguous,on", Temperature: "0", IgnoreEOS: "on", Shared: "0"}
}

// ServingFormOf is the form as the viewer posted it: get reads a field
// (bounded by the caller), stop the stop string as typed.
func ServingFormOf(get func(field string) string, stop string) views.ServingForm {
	f := views.ServingForm{Model: get("model"), Users: get("users"), Rate: get("rate"), PromptTokens: get("prompt"), MinTokens: get("min"), MaxTokens: get("max"),
		MaxSeqs: get("seqs"), Policy: get("policy"), Cache: get("cache"), Chunked: get("chunked"), Compare: get("compare"), Temperature: get("temperature"), Stop: stop, IgnoreEOS: get("ignore_eos"),
		Shared: get("shared")}
	if f.Shared == "" { // a form from before the field (a bookmarked post)
		f.Shared = "0"
	}
	return f
}

// ServingState is one serving run as it stands: what it runs, and what it
// has measured so far.
type ServingState struct {
	ID, Model       string
	Load            serve.Load
	Settings        []serve.Options
	Names           []string // each setting's name, in run order
	CtxLen, KVBytes int
	Done            bool
	Err             string
	Reports         []*serve.Report   // each setting's first run
	Repeats         [][]*serve.Report // each setting's runs, the first included
	Round           string            // while measuring again: which round
	Texts, Finish   [][]string        // per setting, per user
}

// ServingPage is the page's frame: the models, the form, and links to the
// recent runs (newest first, as given; only their ids, loads, models,
// names and whether done are read).
func ServingPage(models []string, form views.ServingForm, runs []ServingState) views.ServingPage {
	p := views.ServingPage{Models: models, Form: form, SweepURL: "/serving/sweep?model=" + url.QueryEscape(form.Model)}
	for _, r := range runs {
		status := "running"
		if r.Done {
			status = "done"
		}
		p.Runs = append(p.Runs, views.ServingLink{ID: r.ID, Title: r.title(), URL: "/serving/runs/" + r.ID, Status: status})
	}
	return p
}

func (r *ServingState) title() string {
	return fmt.Sprintf("%d users on %s: %s", r.Load.Users, r.Model, strings.Join(r.Names, " vs "))
}

// ServingRun is a run as the page shows it.
func ServingRun(r ServingState) *views.ServingRun {
	ld := r.Load
	arrivals := "all at once"
	if ld.Rate > 0 {
		arrivals = fmt.Sprintf("at random, %g a second on average (Poisson)", ld.Rate)
	}
	v := &views.ServingRun{ID: r.ID, Title: r.title(), Done: r.Done, Error: r.Err, EventsURL: "/serving/runs/" + r.ID + "/events",
		Hardware: serve.Hardware(), Settings: r.Names, KVPositions: r.Settings[0].KVPositions, MaxKV: (ld.PromptTokens + ld.MaxTokens + 15) / 16 * 16,
		Load: fmt.Sprintf("%d users arriving %s, each with a %d-token prompt%s and a reply of up to %d to %d tokens (temperature %g; %s), on %s with at most %d running at once and %d KV positions between them.",
			ld.Users, arrivals, ld.PromptTokens, sharedText(ld), ld.MinTokens, ld.MaxTokens, ld.Temperature, servingEnds(ld), r.Model, r.Settings[0].MaxSeqs, r.Settings[0].KVPositions)}
	for i := range ld.Users {
		u := views.ServingUser{N: i + 1, PromptTokens: ld.PromptTokens, MaxTokens: ld.ReplyTokens(i)}
		for k := range r.Texts {
			u.Texts, u.Finish = append(u.Texts, r.Texts[k][i]), append(u.Finish, r.Finish[k][i])
		}
		v.Users = append(v.Users, u)
	}
	for k, rep := range r.Reports {
		v.Results = append(v.Results, ServingResult(r.Names[k], rep, r.CtxLen, r.KVBytes))
	}
	v.Round = r.Round
	if r.Done && r.Err == "" {
		v.Repeats = ServingRepeats(r.Names, r.Repeats)
		v.Verdict = ServingVerdict(r.Names, r.Repeats)
	}
	return v
}

// sharedText says how much of every prompt is the same system prompt.
func sharedText(ld serve.Load) string {
	if ld.SharedPrefix == 0 {
		return ""
	}
	return fmt.Sprintf(" (its first %d tokens the same system prompt for every user)", ld.SharedPrefix)
}

// servingEnds says what ends a reply.
func servingEnds(ld serve.Load) string {
	var why []string
	if ld.IgnoreEOS {
		why = append(why, "every reply runs to its length, past the model's end of turn")
	} else {
		why = append(why, "a reply ends at its length or at the model's end of turn")
	}
	if ld.Stop != "" {
		why = append(why, fmt.Sprintf("or before %q", ld.Stop))
	}
	return strings.Join(why, " ")
}
