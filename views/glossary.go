package views

// Glossary is the one place the app explains its terms: each a sentence a
// beginner can follow, shown where the term appears (Term: on hover, or
// on tap and keyboard focus). Keep each true of what the engine does.
var Glossary = map[string]string{
	"token":             "A piece of text the model reads and writes: a word, part of a word, a space or a punctuation mark, each with an id in the vocabulary.",
	"embedding":         "The row of numbers the model looks up for a token id: its starting point in the model's space.",
	"residual stream":   "The vector each position carries through the layers: every attention and MLP block reads it and adds its output back to it.",
	"attention":         "The step where each position weighs the earlier positions (softmax of query·key scores) and mixes in their values.",
	"MLP":               "The feed-forward block of a layer: each position's vector widened, bent by a nonlinearity and narrowed back, on its own.",
	"logits":            "The raw scores the model gives every token in its vocabulary for the next position; any real number, not yet probabilities.",
	"softmax":           "Turns scores into probabilities: exp(score / temperature), divided by the sum over all tokens, so they add up to 1.",
	"temperature":       "Divides the scores before softmax: below 1 sharpens the distribution towards the likeliest token, above 1 flattens it; 0 means always the likeliest.",
	"top-k":             "Keeps only the k likeliest tokens and drops the rest before the draw.",
	"top-p":             "Keeps the fewest likeliest tokens whose probabilities add up to at least p (nucleus sampling).",
	"min-p":             "Drops every token less likely than p times the likeliest token's probability.",
	"typical-p":         "Keeps the tokens whose surprise is closest to the distribution's average surprise, until their probabilities add up to p.",
	"penalties":         "Lowers the scores of tokens already in the recent text (repeat, frequency and presence penalties), to discourage repetition.",
	"KV cache":          "The keys and values each layer computed for earlier positions, kept so a new token's pass reuses them instead of recomputing the prompt.",
	"BOS":               "The beginning-of-sequence token the tokenizer puts before every prompt.",
	"prefill":           "The first pass, over the whole prompt at once, which fills the KV cache and gives the first token's scores.",
	"TTFT":              "Time to first token: from the start of the run to the first generated token, the prompt's pass included.",
	"TPOT":              "Time per output token after the first: one decode step's time, averaged over the steps measured.",
	"PCA":               "Principal component analysis: the two directions along which these vectors differ most, used to draw many-number vectors on a flat map.",
	"KL":                "Kullback–Leibler divergence: how far one probability distribution is from another (0 when they are the same), here the reference's next-token distribution against another precision's.",
	"perplexity":        "exp of the average negative log-probability the model gave the tokens: how many equally likely choices it was, on average, torn between.",
	"p/q":               "In speculative decoding, p is the target model's probability of a drafted token and q the draft's; the guess is kept with probability min(1, p/q).",
	"quantization":      "Storing the weights in fewer bits (8, 5, 4, …) with a scale per small block, so the model takes less memory and reads faster, at a small cost in accuracy.",
	"sample":            "The draw: a random number between 0 and 1 picks one of the kept tokens, each with a chance equal to its probability.",
	"speculative round": "A small draft model guesses a few tokens, the target model checks them all in one pass, and the guesses it agrees with are kept.",
}

// gloss is the explanation of a term ("" for a word the glossary lacks).
func gloss(term string) string { return Glossary[term] }

// StageGloss is the sentence that explains the stage x: its glossary
// word's (a sampler step's, its filter's).
func StageGloss(x Stage) string { return Glossary[x.Term] }
