package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"stepthrough/models"
	"stepthrough/server"
	"stepthrough/static"
)

// runServe runs the web app until ctx is done (Ctrl-C, SIGTERM).
func runServe(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "serve", "[--addr HOST:PORT] [--models-dir DIRS] [--data-dir DIR]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address`")
	dirs := fs.String("models-dir", "", "more `directories` of .gguf models, comma-separated (models/ and the embedded lesson models are always offered)")
	data := fs.String("data-dir", "data", "`directory` where classrooms are stored (rooms.db, SQLite)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if msg := static.Missing(); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	modelDirs := []string{"models"}
	if *dirs != "" {
		modelDirs = append(modelDirs, strings.Split(*dirs, ",")...)
	}
	if ref := filepath.Join("..", "shared", "reference", "models"); dirExists(ref) {
		modelDirs = append(modelDirs, ref) // the reference model beside the checkout is offered too
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	s, err := server.New(server.Config{Addr: *addr, ModelsDirs: modelDirs, Logger: log, DataDir: *data,
		Embedded: map[string][]byte{"lesson.gguf": models.Lesson, "lesson-draft.gguf": models.LessonDraft}})
	if err != nil {
		return err
	}
	if len(s.Models()) == 0 {
		fmt.Fprintf(env.Stderr, "no models found in %s: add a .gguf or pass --models-dir\n", strings.Join(modelDirs, ", "))
	}
	return s.Run(ctx, func(a string) { fmt.Fprintf(env.Stdout, "Stepthrough is serving on http://%s\n", a) })
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}
