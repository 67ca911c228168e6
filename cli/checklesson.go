package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"stepthrough/lessons"
	"stepthrough/models"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/verify"
)

// runCheckLesson reads lesson files, checks them against their models,
// refuses a question the text before it answers (lessons.Spoilers) and a
// sentence that generalises with neither a source nor a claim
// (lessons.UnsourcedGeneral), and
// verifies every claim their steps declare (expect: lines) by playing the
// steps on the engine, as the Explorer would.
func runCheckLesson(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "check-lesson", "[--models-dir DIR] FILE.md ...")
	dir := fs.String("models-dir", "models", "`directory` of the models lessons name (the embedded lesson models are used when absent)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			helps[fs]()
			return err
		}
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usageError{fmt.Errorf("check-lesson: name at least one lesson file")}
	}
	reg := registry.New([]string{*dir})
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	reg.AddEmbedded("lesson-draft.gguf", models.LessonDraft)
	failed, total := 0, 0
	for _, path := range fs.Args() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		l, err := lessons.Parse(path, b)
		if err != nil {
			return err
		}
		m, err := reg.Get(l.Model)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := lessons.Check(l, m); err != nil {
			fmt.Fprintf(env.Stdout, "FAIL %v\n", err)
			failed, total = failed+1, total+1
			continue
		}
		for _, sp := range lessons.Spoilers(l) { // a question answered before it is asked
			fmt.Fprintf(env.Stdout, "FAIL %s\n", sp)
			failed, total = failed+1, total+1
		}
		for _, u := range lessons.UnsourcedGeneral(l) { // a statement about inference in general with nothing behind it
			fmt.Fprintf(env.Stdout, "FAIL %s\n", u)
			failed, total = failed+1, total+1
		}
		se := session.New("check", "cli", reg)
		results := verify.Lesson(ctx, se, l)
		se.Close()
		for _, r := range results {
			mark := "ok  "
			if r.Err != nil {
				mark, failed = "FAIL", failed+1
			}
			fmt.Fprintf(env.Stdout, "%s %s:%d step %d: expect %s", mark, path, r.Claim.Line, r.Step+1, r.Claim)
			if r.Err != nil {
				fmt.Fprintf(env.Stdout, ": %v", r.Err)
			}
			fmt.Fprintln(env.Stdout)
		}
		total += len(results)
		fmt.Fprintf(env.Stdout, "%s: %d claims\n", path, len(results))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed (claims that do not hold, lessons that do not fit their model, questions answered before they are asked, general statements with no source or claim)", failed, total)
	}
	return nil
}
