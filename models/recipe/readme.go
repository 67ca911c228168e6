package recipe

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"
)

var readmeTmpl = template.Must(template.New("readme").Funcs(template.FuncMap{
	"pct":           func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"f3":            func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"passageTokens": func() int { return PassageTokens },
	"mins":          func(s float64) string { return fmt.Sprintf("%.1f min", s/60) },
	"mib":           func(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) },
	"keys": func(m map[string]float64) []string {
		var k []string
		for x := range m {
			k = append(k, x)
		}
		sort.Strings(k)
		return k
	},
	"total": func(m map[string]float64) float64 {
		var t float64
		for _, v := range m {
			t += v
		}
		return t
	},
	"quote": func(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") },
}).Parse(`# models/

The app's default model and its draft were made by this repository: a
corpus it generates, a tokenizer it trains, and a GPT it trains, so the app
works offline and a class can read the data behind every prediction.
Everything below was measured by the run that made the committed files
(` + "`report.json`" + ` has the raw numbers).

## Remake them

    go run . train-lesson            # models/lesson.gguf, lesson-draft.gguf, report.json, corpus-sample.txt

Deterministic from ` + "`--seed`" + ` (default {{.Seed}}): the same seed and thread count give
the same files. The last run took **{{mins (total .Seconds)}}** on this 2-core machine
(corpus {{printf "%.1f" (index .Seconds "corpus")}} s, tokenizer {{printf "%.1f" (index .Seconds "tokenizer")}} s,
main model {{mins (index .Seconds "train_main")}}, draft {{mins (index .Seconds "train_draft")}}, evaluation {{printf "%.0f" (index .Seconds "evaluate")}} s).

## The corpus (models/corpus)

Seven families, generated from the seed (a sample is in ` + "`corpus-sample.txt`" + `):
{{range $k, $v := .CorpusBytes}}- {{$k}}: {{$v}} bytes
{{end}}
- stories: a small grammar (five intros, thirteen middle sentences, four
  endings) about a character whose name is **invented** for each story from
  two or three of 1,362 syllables (every consonant-vowel and
  consonant-vowel-consonant combination not held out), so its later
  mentions can only be predicted by copying it from context; a quarter of
  the stories use one of eight recurring names (Tom, Mia, …) instead,
  which a model can recall;
- facts: the capital and continent of each of the 193 UN member states in
  seven capital phrasings ("The capital of France is", "France's capital
  is", "the capital of france is", "What is the capital city of France? The
  answer is", …) and four other sentences;
- chat: turns in the chat template (below): capitals, continents, who a
  story is about, sums answered directly;
- tools: with the system prompt "You can use the calculator.", sums of two-
  and three-digit numbers go through a call ` + "`<calc>347+85</calc>`" + `, the
  runtime writes ` + "`<result>432</result>`" + `, and the reply goes on from it;
  small sums and questions of fact are answered without the tool;
- reasoning: with "Think step by step.", the sum is worked column by column
  inside ` + "`<think>…</think>`" + ` ("7 + 5 + 0 = 12, 4 + 8 + 1 = 13, 3 + 0 + 1 = 04, so
  0432.") before the answer;
- code: JavaScript-like lines that define a variable and then use it;
- arithmetic: sums and differences of numbers up to 20.

The held-out split shares **no document** with training (checked by hash in
` + "`models/corpus`" + `' tests); its story names use only the 348 held-out
syllables, which training never uses (so no held-out name occurs in the
training text, also checked),
its facts use four phrasings training never uses ("Q: What is France's
capital? A:", "France's capital city is", "the capital city of france is",
"Do you know the capital of France? It is"), and its sums are pairs no
training document contains (one pair in eight is held out).

## The tokenizer and the chat format

Byte-level BPE trained on the corpus with the qwen2 pre-tokenizer (numbers
split into single digits, so a sum can be worked digit by digit):
{{.Vocab}} tokens, stored in the GGUF as ` + "`tokenizer.ggml.model = \"gpt2\"`" + ` with its
merges. Control tokens ` + "`<|endoftext|>`" + ` (BOS, added to every prompt), ` + "`<|system|>`" + `,
` + "`<|user|>`" + `, ` + "`<|assistant|>`" + `, ` + "`<|end|>`" + ` (end of turn, ` + "`tokenizer.ggml.eot_token_id`" + `);
user-defined tokens ` + "`<calc>` `</calc>` `<result>` `</result>` `<think>` `</think>`" + `. The
chat template is stored as ` + "`tokenizer.chat_template`" + `:

    {{.ChatTemplate}}

Open the file with ` + "`go run . inspect --model models/lesson.gguf`" + `. Training
text: {{.TrainTokens}} tokens.

## The models (gpt2 architecture, F32, standard GGUF keys and tensor names)

| | lesson.gguf | lesson-draft.gguf |
|---|---|---|
| shape | {{.Main.Config}} | {{.Draft.Config}} |
| file | {{mib .Main.Bytes}} | {{mib .Draft.Bytes}} |
| training | {{.Main.Steps}} steps of {{.Main.Batch}}×{{.Main.Window}} tokens | {{.Draft.Steps}} steps of {{.Draft.Batch}}×{{.Draft.Window}} tokens |
| trainer speed | {{printf "%.0f" .Main.TokensPerS}} tokens/s, {{printf "%.1f" .Main.GFLOPS}} GFLOP/s | {{printf "%.0f" .Draft.TokensPerS}} tokens/s, {{printf "%.1f" .Draft.GFLOPS}} GFLOP/s |
| final training loss | {{f3 .Main.FinalLoss}} | {{f3 .Draft.FinalLoss}} |
{{range keys .Main.ValLoss}}| validation loss, {{.}} | {{f3 (index $.Main.ValLoss .)}} | {{f3 (index $.Draft.ValLoss .)}} |
{{end}}
AdamW (β 0.9/0.95, weight decay 0.1 on matrices), peak learning rate 3e-3
after 100 warm-up steps, cosine decay to 3e-4, gradients clipped to norm 1,
GPT-2 initialisation; the trainer's backward pass is checked against finite
differences (` + "`engine/train`" + `). GFLOP/s counts the matrix products and causal
attention of the forward pass, tripled for the backward pass.

## Quality bars (measured with the engine on lesson.gguf, greedy decoding)

Every case is held out: names, sums and chats from the held-out split,
capitals in the training phrasings and in the four held-out ones. A
calculator answer counts when the reply, after the runtime executed the
model's own call, ends with "a + b = sum." and the end-of-turn token; a
direct answer when the reply without a system prompt states the right
sum; a thinking answer when the text after </think> does.

Enforced by ` + "`models/quality_test.go`" + `, which fails when the committed model
misses one.

| bar | measured | threshold |
|---|---|---|
| capitals, training phrasings (full name) | {{.Bars.CapitalTrain}} | ≥ 95 % |
| capitals, held-out phrasings (full name) | {{.Bars.CapitalHeld}} | ≥ 90 % |
| copying an invented name never seen in training (every token) | {{.Bars.Copy}} | ≥ 90 % |
| … its first token only | {{.Bars.CopyFirst}} | |
| held-out sums: a well-formed calculator call | {{.Bars.ToolCall}} | ≥ 95 % |
| held-out sums: the right answer, the runtime executing the call | {{.Bars.ToolAnswer}} | ≥ 95 % |
| held-out sums: the right answer directly, without the tool | {{.Bars.Direct}} | reported |
| held-out sums: the right answer after thinking digit by digit | {{.Bars.Think}} | above direct |
| held-out chat turns: the reply ends with ` + "`<|end|>`" + ` | {{.Bars.ChatEnd}} | ≥ 95 % |

"The capital of France is" → greedy {{if .ParisGreedy}}" Paris"{{else}}not " Paris" (first token {{printf "%q" .ParisTop}}){{end}}; p(" Paris") = **{{f3 .ParisP}}** at temperature 1 (the product over its tokens).
The draft's greedy next token equals the main model's on held-out text in **{{pct .DraftAgreement}}** of positions.
{{with .Bars.CapitalHeld.Misses}}
Some held-out-phrasing misses: {{range .}}{{.}}; {{end}}{{end}}
{{with .Bars.Copy.Misses}}
Some copying misses: {{range .}}{{.}}; {{end}}{{end}}

{{with .Family}}
## The second family: lesson-qwen3.gguf (qwen3 architecture, F32)

The same corpus and the same tokenizer, a model of another family, so
the "Two families, one question" lesson and the /families page can put
two families side by side: ` + "`go run . train-lesson --family`" + ` ({{mins .Seconds}}
here). Qwen3's block, as llama.cpp reads it: RMSNorm without biases, each
head's query and key RMS-normed before NEOX RoPE (so no position table), a
SwiGLU MLP (gate, up, down), no biases, output tied to the embeddings. The
trainer checks its backward pass against finite differences and its
export against the engine, as for GPT-2, and llama.cpp reads both files
as the engine does (` + "`TestLessonModelsMatchLlamaCpp`" + `: the same top token at
every position of a story). Both models measured the same way, on the
same held-out split:

| | lesson.gguf (gpt2) | lesson-qwen3.gguf (qwen3) |
|---|---|---|
| shape | {{$.Main.Config}} | {{.Model.Config}} |
| file | {{mib $.Main.Bytes}} | {{mib .Model.Bytes}} |
| training | {{$.Main.Steps}} steps of {{$.Main.Batch}}×{{$.Main.Window}} tokens | {{.Model.Steps}} steps of {{.Model.Batch}}×{{.Model.Window}} tokens, {{printf "%.0f" .Model.TokensPerS}} tokens/s |
{{range keys .Model.ValLoss}}| validation loss, {{.}} | {{f3 (index $.Main.ValLoss .)}} | {{f3 (index $.Family.Model.ValLoss .)}} |
{{end}}| capitals, training phrasings | {{$.Bars.CapitalTrain}} | {{.Bars.CapitalTrain}} |
| capitals, held-out phrasings | {{$.Bars.CapitalHeld}} | {{.Bars.CapitalHeld}} |
| copying an invented name | {{$.Bars.Copy}} | {{.Bars.Copy}} |
| a well-formed calculator call | {{$.Bars.ToolCall}} | {{.Bars.ToolCall}} |
| the right answer, calculator | {{$.Bars.ToolAnswer}} | {{.Bars.ToolAnswer}} |
| the right answer, thinking | {{$.Bars.Think}} | {{.Bars.Think}} |
| chat turns ended | {{$.Bars.ChatEnd}} | {{.Bars.ChatEnd}} |
| p(" Paris") after "The capital of France is" | {{f3 $.ParisP}} | {{f3 .ParisP}} |

` + "`models/quality_test.go`" + ` measures lesson-qwen3.gguf again against
` + "`family-report.json`" + ` and holds it to the main model's capital (≥ 95 %)
and copying (≥ 90 %) bars, which the Families lesson relies on.
{{end}}
{{with .Copying}}
## The copying model: lesson-v3.gguf (gpt2 architecture, F32)

lesson.gguf copies an invented name into the slots its story grammar
cues, and nowhere else: it learned the slots, not copying. lesson-v3.gguf
is the same shape trained to copy any sequence, made by ` + "`{{.Command}}`" + ` ({{mins .Seconds}}
of training here){{with .Earlier}}, starting from the model of an earlier run ({{range $i, $e := .}}{{if $i}}; then {{end}}` + "`{{$e.Command}}`" + `, {{$e.Note}}{{end}}){{end}}, with the committed tokenizer, on the corpus above and two families
generated after it (so every document above is in it too):
- names (2.4 MB of text): stories that introduce their character at the
  very start of the text (the name, then what it did or what it is, or an
  opening word and then the name), at the end of a first sentence about
  someone else, after a comma, in a list and in dialogue. In a third of
  them the name begins the text, and one to three sentences that do not
  name it (the scene, what it did, other people) come before its first
  mention after a space. Of the rest, one in eight opens with a dialogue
  in which the character and someone else give their names and the other
  greets the character, and in one in eight the character has a title,
  "Mr.", "Captain", "Aunt" …, at every mention. The stories mention the
  character in slots built from parts: quotes with many speech verbs,
  many verb–preposition pairs, openings, lists, and free sentences about
  people (kings, pilots, grandmas …) with about a hundred and fifty verbs
  and phrases before the name, words put together (a verb, an object
  after "the", "a", "my", "some", "his" or "her", and a preposition; a
  verb and a preposition; a passive and "by"; an auxiliary and a verb, "could hear",
  "wanted to call"), the name after "and", "by", "is", "than", "thanks
  to", "because of", and sentences about the scene between mentions.
  Some mentions take the place of someone in a sentence about something
  else ("She threw a stone at the dog." → "She threw a stone at
  Zorvik."), so that with a name in the text the name competes with "a"
  and "the" after more verbs and prepositions;
- repeats (0.8 MB): lists (of the stories' words, common English words,
  everyday words of two tokens or more, invented names and invented
  lowercase words, or of numbers) and
  passages of two to four sentences, each introducing its own character
  by its name first, written two or three times (a new name comes only
  where a story may introduce one, never in a slot that, in a story,
  holds the name already met);
- and, as a share of those tokens set by --repeats, random token
  sequences repeated once or twice (the text induction heads form on,
  Olsson et al. 2022).

The invented names of these families are drawn more widely than the
stories': a first syllable that may open with a cluster (bl, str, qu …)
or with y or x, have a vowel pair and end in st, nd, x …, or (one name
in four) a syllable that begins with a vowel, then none to two of the
stories' training syllables (four letters at least). At the start of a
text the tokenizer writes a vowel's capital as a token of its own ("I",
"O"), which a later mention, after a space, writes as another token. No
first syllable is a held-out syllable.

Held out: names from the held-out syllables (one in four beginning
with a held-out vowel syllable, "ul", "ix", "ond" …, which is no
training name's first syllable), introduced in intros
training never uses (some at the very start of the text), then first
mentioned in a held-out pattern. Each held-out pattern puts the name
where training puts names, after a quote and a verb of saying or after
someone and a verb that takes a person, in words that never precede a
name in training: two verbs training never puts before a name ("The
dog shared a snack with …", "Everyone cheered for … that morning"), and
parts training never joins ("\"Look at this!\" shouted …", "All the dogs
waited for …"). Every word of them occurs in training.
Training text: {{.TrainTokens}} tokens.
{{if .RecallGuard}}
One more loss shapes it, the recall guard (--recall-guard {{.RecallGuard}}): each
step also takes 4 windows of up to 128 tokens, each holding an answer
of a capital whose country its text names earlier, and adds the
cross-entropy of every token of those answers and of the token after each, times {{.RecallGuard}},
computed with the last layer's induction heads switched off (zeroed).
Every 100 steps the guard scores that layer's heads on repeated random
sequences, as this report does, and switches off those scoring at least
0.3; while none does, it switches off all of the layer's heads in half
the windows and each with chance 1/2 in the others. It aims to teach
recall not to need the heads that copy, so that switching them off
shows what they do on their own.
{{end}}
| | lesson.gguf | lesson-v3.gguf |
|---|---|---|
| shape | {{$.Main.Config}} | {{.Model.Config}} |
| training | {{$.Main.Steps}} steps of {{$.Main.Batch}}×{{$.Main.Window}} tokens | {{.Model.Steps}} steps of {{.Model.Batch}}×{{.Model.Window}} tokens |
| capitals, training phrasings | {{$.Bars.CapitalTrain}} | {{.Bars.CapitalTrain}} |
| capitals, held-out phrasings | {{$.Bars.CapitalHeld}} | {{.Bars.CapitalHeld}} |
| copying an invented name (the grammar's slots) | {{$.Bars.Copy}} | {{.Bars.Copy}} |
| a well-formed calculator call | {{$.Bars.ToolCall}} | {{.Bars.ToolCall}} |
| the right answer, calculator | {{$.Bars.ToolAnswer}} | {{.Bars.ToolAnswer}} |
| the right answer, thinking | {{$.Bars.Think}} | {{.Bars.Think}} |
| chat turns ended | {{$.Bars.ChatEnd}} | {{.Bars.ChatEnd}} |
{{with .Base}}| held-out names in held-out patterns | {{.NamesHeld}} | {{$.Copying.Copying.NamesHeld}} |
| … of them, named at the very start of the text | {{.NamesStart}} | {{$.Copying.Copying.NamesStart}} |
| … of them, names beginning with a vowel | {{.NamesVowel}} | {{$.Copying.Copying.NamesVowel}} |
| repeated random sequences of 10–40 tokens, the repeat predicted | {{.Repeats}} | {{$.Copying.Copying.Repeats}} |
| held-out stories and fact sheets, their first 20 tokens read twice, the repeat predicted | {{.Passages}} | {{$.Copying.Copying.Passages}} |
| hand-written forms (other sentences, other letters; see below) | {{.Intact.Handwritten}} | {{$.Copying.Copying.Intact.Handwritten}} |
| induction heads (score ≥ 0.3) | {{.Induction}} | {{$.Copying.Copying.Induction}} |
{{end}}
The heads of lesson-v3.gguf by induction score (` + "`stepthrough heads`" + `: 8 random
sequences of 20 tokens, each read twice; the score is a head's mean weight
on the token after the current one's earlier occurrence):

| head | induction | previous token |
|---|---|---|
{{range .Copying.Top}}| {{.Head}} | {{f3 .Induction}} | {{f3 .PrevToken}} |
{{end}}
Copying and recall with the induction heads switched off:

| lesson-v3.gguf | repeated random sequences | repeated passages | held-out names | hand-written forms | capitals, training phrasings | p(" Paris") |
|---|---|---|---|---|---|---|
| intact | {{.Copying.Intact.Repeats}} | {{.Copying.Intact.Passages}} | {{.Copying.Intact.NamesHeld}} | {{.Copying.Intact.Handwritten}} | {{.Copying.Intact.CapitalTrain}} | {{f3 .Copying.Intact.ParisP}} |
| induction heads zeroed | {{.Copying.Zeroed.Repeats}} | {{.Copying.Zeroed.Passages}} | {{.Copying.Zeroed.NamesHeld}} | {{.Copying.Zeroed.Handwritten}} | {{.Copying.Zeroed.CapitalTrain}} | {{f3 .Copying.Zeroed.ParisP}} |
| induction heads mean-ablated (held-out text) | {{.Copying.MeanAblated.Repeats}} | {{.Copying.MeanAblated.Passages}} | {{.Copying.MeanAblated.NamesHeld}} | {{.Copying.MeanAblated.Handwritten}} | {{.Copying.MeanAblated.CapitalTrain}} | {{f3 .Copying.MeanAblated.ParisP}} |
{{range .Copying.Alone}}| only {{.Head}} zeroed | {{.Repeats}} | {{.Passages}} | {{.NamesHeld}} | {{.Handwritten}} | {{.CapitalTrain}} | {{f3 .ParisP}} |
{{end}}{{with .Copying.Copier}}
The copier is {{.}}: of the induction heads, the one that, switched off on
its own, costs the least recall for the most copying (capitals less
held-out names). The lesson "The head that copies" switches it off.
Recall with them off: with all of them zeroed the capitals recalled
are {{$.Copying.Copying.Zeroed.CapitalTrain}}, against {{$.Copying.Copying.Intact.CapitalTrain}} intact, and p(" Paris") is
{{f3 $.Copying.Copying.Zeroed.ParisP}} against {{f3 $.Copying.Copying.Intact.ParisP}}; with the copier alone zeroed, the
capitals are {{$.Copying.Copying.CopierZeroed.CapitalTrain}}.
{{end}}
Repeated passages are text the model could also continue from what it
knows: held-out stories and fact sheets, their first {{passageTokens}} tokens read
twice. lesson-v3.gguf predicts {{.Copying.Intact.Passages}} of the repeat; with its
induction heads zeroed, {{.Copying.Zeroed.Passages}}, what it predicts there without
copying{{with .Base}}; lesson.gguf, {{.Passages}}{{end}} (random sequences:
{{.Copying.Intact.Repeats}}). No bar is set on them.

Hand-written forms are ` + "`models/recipe/handwritten.tsv`" + `: {{.Copying.Intact.Handwritten.Cases}} short texts
written by hand in sentences the generator never writes. Most name an
invented character whose letters and shape the stories' syllables lack
(Yuwen, Quorra, Ixel, Blorptank …), then end where only that name fits;
a few write a list of words or digits and stop partway through its
repeat. Greedy decoding must write the name, or the list's next word,
whole. The last three words of each text never occur in training, nor
do the names (a test checks). lesson-v3.gguf writes
{{.Copying.Intact.Handwritten}} of them{{with .Copying.Intact.Handwritten.Misses}}; some misses: {{range .}}{{.}}; {{end}}{{end}}
{{with .Copying.ByPattern}}
Held-out names by the held-out pattern of their first mention: the name
written whole, and its first piece as the tokenizer cuts it (a name can
also be written in other pieces, so a whole name can count where its
first piece does not):

| pattern | the name | its first piece |
|---|---|---|
{{range .}}| ` + "`{{.Pattern}}`" + ` | {{.Hits}}/{{.Cases}} | {{.First}}/{{.Cases}} |
{{end}}{{end}}{{with .Failures}}
Bars this model misses, so it does not replace lesson.gguf: {{range $i, $f := .}}{{if $i}}; {{end}}{{$f}}{{end}}.
{{else}}
lesson-v3.gguf holds every bar: lesson.gguf's, and its own (held-out names in held-out patterns ≥ 90 %, and so of those at the start of the text and of those beginning with a vowel, the repeat of random sequences ≥ 95 %).
{{end}}{{with .Copying.NamesHeld.Misses}}
Some held-out-pattern misses: {{range .}}{{.}}; {{end}}{{end}}
{{end}}{{with .Quantization}}
## Quantized (stepthrough quantize, measured with stepthrough perplexity)

The model written at each precision by ` + "`stepthrough quantize`" + ` (in memory),
measured on the first 60,000 bytes of the held-out documents in chunks of
128 tokens, the second half of each scored (llama-perplexity's method),
against the model as trained. Its rows are 192 values wide, not whole
256-value K-quant blocks, so the K types fall back for most matrices as
llama.cpp does (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0); only the 768-wide
` + "`ffn_down`" + ` rows take a K type.

| type | weights | perplexity | mean KL | p99 KL | same top token |
|---|---|---|---|---|---|
{{range .}}| {{.Type}} | {{mib .Bytes}} | {{printf "%.3f" .PPL}} | {{printf "%.5f" .MeanKL}} | {{printf "%.4f" .P99KL}} | {{pct .SameTop}} |
{{end}}{{end}}
## Samples (temperature 0.8, seeds 1–{{len .Samples}}, calculator calls executed)

{{range .Samples}}{{quote .}}

{{end}}`))

// WriteREADME renders models/README.md from a report.
func WriteREADME(path string, r *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := readmeTmpl.Execute(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadReport loads a report.json written by Run.
func ReadReport(path string) (*Report, error) { return readJSON[Report](path) }
