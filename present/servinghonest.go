package present

import (
	"fmt"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// The "Measuring honestly" page: what a benchmark must report, and the
// loadgen command that reports it for a load.

// HonestChecklist is what a benchmark must report, and where loadgen's
// output reports it.
var HonestChecklist = []views.HonestItem{
	{What: "The hardware and the backend", Where: `the "hardware:" and "backend:" lines`, Why: "The same model is several times faster or slower on another machine; a number without its machine says nothing."},
	{What: "The model and its precision", Where: `the "model:" line (the file says its weights' type)`, Why: "Fewer bits read less memory per token: a quantized model is a different benchmark."},
	{What: "The load", Where: `the "load:" line: users, how they arrive, prompt and reply lengths, temperature, seed`, Why: "Throughput and latency depend on how many users come, when, and how long their prompts and replies are; the seed makes the load repeatable."},
	{What: "Both phases", Where: "TTFT (prompt read, plus any wait) and TPOT (each token after the first), and the time spent in prompt steps and in decode-only steps", Why: "Prefill is bound by arithmetic and grows with the prompt; decode is bound by reading memory. One number for both hides which one a change helped."},
	{What: "Percentiles, not only a mean", Where: "p50 and p95 of TTFT and TPOT, p95 of the time queued", Why: "Users feel the slow requests: a mean hides the tail that p95 shows."},
	{What: "Throughput and latency together", Where: `"tokens/s (generated)" beside each user's TTFT and TPOT`, Why: "Batching raises the server's tokens per second while each user may wait longer per token; either number alone misleads."},
	{What: "The same load for every setting compared, side by side", Where: "one load line, one row per setting, run in one session", Why: "The machine is shared and its speed drifts: compare settings run in the same session on the same load, and report the ratio."},
	{What: "A warm-up", Where: "loadgen runs untimed passes first", Why: "The first passes after loading pay for the weights coming into memory and cold caches; they are not the server's steady speed."},
	{What: "The spread", Where: "each setting's two rows", Why: "Two runs of the same setting differ; a difference between settings smaller than that spread is not a result."},
	{What: "Memory", Where: `"KV held at peak" and "contiguous at full context"`, Why: "How many users fit is set by the KV cache as much as by speed."},
}

// HonestPage is the page for model under load, before its output: the
// checklist and the loadgen command that measures the same.
func HonestPage(model string, load serve.Load) views.HonestPage {
	return views.HonestPage{Model: model, Checklist: HonestChecklist,
		Command: fmt.Sprintf("stepthrough loadgen --model %s --users %d --rate %g --prompt-tokens %d --min-tokens %d --max-tokens %d --max-seqs 8 --policy continuous,static --rounds 2",
			model, load.Users, load.Rate, load.PromptTokens, load.MinTokens, load.MaxTokens)}
}
