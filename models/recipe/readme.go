package recipe

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"
)

var readmeTmpl = template.Must(template.New("readme").Funcs(template.FuncMap{
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"f3":   func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"mins": func(s float64) string { return fmt.Sprintf("%.1f min", s/60) },
	"mib":  func(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) },
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

Four families, generated from the seed (a sample is in ` + "`corpus-sample.txt`" + `):
{{range $k, $v := .CorpusBytes}}- {{$k}}: {{$v}} bytes
{{end}}
- facts: the capital and continent of each of the 193 UN member states, in
  six phrasings ("The capital of France is Paris.", "Paris is the capital of
  France.", "Q: What is the capital of France? A: Paris.", …);
- stories: short stories whose character (one of 200+ names) is named once,
  then named again later — the model must copy the name from context;
- code: JavaScript-like lines that define a variable and then use it;
- arithmetic: sums and differences of numbers up to 20.

A held-out split comes from another stream of the generator (new name,
colour, object and place combinations); it gives the validation losses and
the copying test.

## The tokenizer

Byte-level BPE trained on the corpus with the GPT-2 pre-tokenizer:
{{.Vocab}} tokens (256 bytes, the merges in order, ` + "`<|endoftext|>`" + `), stored in the GGUF as
` + "`tokenizer.ggml.model = \"gpt2\"`" + ` with its merges — open the file with
` + "`go run . inspect --model models/lesson.gguf`" + `. Training text: {{.TrainTokens}} tokens.

## The models (gpt2 architecture, F32, standard GGUF keys and tensor names)

| | lesson.gguf | lesson-draft.gguf |
|---|---|---|
| shape | {{.Main.Config}} | {{.Draft.Config}} |
| file | {{mib .Main.Bytes}} | {{mib .Draft.Bytes}} |
| training | {{.Main.Steps}} steps of 8×128 tokens, {{printf "%.0f" .Main.TokensPerS}} tokens/s | {{.Draft.Steps}} steps, {{printf "%.0f" .Draft.TokensPerS}} tokens/s |
| final training loss | {{f3 .Main.FinalLoss}} | {{f3 .Draft.FinalLoss}} |
{{range keys .Main.ValLoss}}| validation loss, {{.}} | {{f3 (index $.Main.ValLoss .)}} | {{f3 (index $.Draft.ValLoss .)}} |
{{end}}
AdamW (β 0.9/0.95, weight decay 0.1 on matrices), peak learning rate 3e-3
after 100 warm-up steps, cosine decay to 3e-4, gradients clipped to norm 1,
GPT-2 initialisation; the trainer's backward pass is checked against finite
differences (` + "`engine/train`" + `).

## Quality bars (measured with the engine on lesson.gguf)

- "The capital of France is" → greedy continuation {{if .ParisGreedy}}" Paris"{{else}}not " Paris" (first token {{printf "%q" .ParisTop}}){{end}}; p(" Paris") = **{{f3 .ParisP}}** at temperature 1, the product over its tokens (bar: greedy " Paris", p ≥ 0.6).
- "The capital of X is" for all 193 member states: top-1 = the capital's first token in **{{pct .CapitalTop1}}** (bar: ≥ 95 %).{{if .CapitalMisses}} Misses: {{range .CapitalMisses}}{{.}}; {{end}}{{end}}
- Copying: in {{.CopyCases}} held-out stories, the character's name is the top-1 prediction at its next mention in **{{pct .CopyTop1}}** (bar: ≥ 80 %).
- The draft's greedy next token equals the main model's on held-out text in **{{pct .DraftAgreement}}** of positions.

## Samples (temperature 0.8, seeds 1–4)

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
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := new(Report)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
