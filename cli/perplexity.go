package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/perplexity"
	"stepthrough/models/corpus"
)

// runPerplexity measures a model on a text, and against a base model.
func runPerplexity(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "perplexity", "--model M (--file TEXT | --lesson-heldout BYTES) [--kl-base BASE] [--ctx 128] [-t N] [--json]")
	path := fs.String("model", "", "model `file`")
	file := fs.String("file", "", "the text `file` to measure on")
	held := fs.Int("lesson-heldout", 0, "measure on the first `bytes` of the lesson corpus's held-out split (documents never trained on) instead of a file")
	base := fs.String("kl-base", "", "a base model `file` (the same model at a higher precision): KL divergence and same-top share against it")
	n := fs.Int("ctx", 128, "chunk length in tokens (the second half of each chunk is scored, as llama-perplexity does)")
	threads := fs.Int("t", 0, "CPU `threads` (0: one per core)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	if (*file == "") == (*held <= 0) {
		return usageError{fmt.Errorf("give --file or --lesson-heldout (one of them)")}
	}
	text, err := readText(*file, *held)
	if err != nil {
		return err
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	lm, err := engine.Load(m, engine.Options{Threads: *threads, Backend: "cpu"})
	if err != nil {
		return err
	}
	defer lm.Close()
	opt := perplexity.Options{Context: *n, Progress: func(done, total int) { progressBar(env, int64(done), int64(total)) }}
	if *base != "" {
		bm, err := model.Load(*base)
		if err != nil {
			return fmt.Errorf("kl-base: %w", err)
		}
		defer bm.Close()
		bl, err := engine.Load(bm, engine.Options{Threads: *threads, Backend: "cpu"})
		if err != nil {
			return err
		}
		defer bl.Close()
		opt.Base = bl
	}
	r, err := perplexity.Run(ctx, lm, m.Tokenizer.EncodeIDs(text, true), opt) // BOS first, as llama-perplexity tokenizes
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(r)
	}
	fmt.Fprintf(env.Stdout, "%s: perplexity %.4f ± %.4f over %d tokens (%d chunks of %d)\n", *path, r.PPL, r.PPLErr, r.Tokens, r.Chunks, *n)
	if opt.Base != nil {
		fmt.Fprintf(env.Stdout, "against %s (perplexity %.4f): mean KL %.6f, p99 KL %.6f, max KL %.6f, same top token %.2f%%\n",
			*base, r.BasePPL, r.MeanKL, r.P99KL, r.MaxKL, 100*r.SameTop)
	}
	return nil
}

// readText is the file's text, or the start of the lesson corpus's
// held-out split.
func readText(file string, held int) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		return string(b), err
	}
	_, docs := corpus.Split(corpus.Default(1), 0.1)
	var b strings.Builder
	for _, d := range docs {
		if b.Len() >= held {
			break
		}
		b.WriteString(d.Text)
	}
	s := b.String()
	return s[:min(len(s), held)], nil
}
