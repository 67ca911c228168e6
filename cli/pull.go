package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"stepthrough/hfhub"
)

const pullUsage = `ORG/REPO[:QUANT] [--file NAME.gguf]

Fetches a GGUF model from the Hugging Face Hub into the Hugging Face cache
(shared with huggingface_hub and llama.cpp), where serve finds it, named
ORG/REPO:QUANT.

QUANT is the tag the file's name ends with (Q4_K_M, q8_0, UD-Q4_K_XL),
matched without case. Without it: Q8_0 where the repository has it, else
the smallest file of a type the engine runs that fits in memory (MemTotal
of /proc/meminfo; elsewhere memory rules nothing out) with 1 GiB left for
the KV cache. Split files (NAME-00001-of-0000N.gguf) are not taken.

The file's GGUF header is read first, and a file the engine cannot run is
refused before its bytes are fetched. An interrupted pull (a dropped
connection, Ctrl-C) continues where it stopped the next time; the bytes
are checked against the Hub's sha256 before they are kept. On a terminal
a progress line shows the bytes, the rate and the time left.

Environment: HF_ENDPOINT (default https://huggingface.co); HF_TOKEN, else
the token file $HF_HOME/token, sent to the endpoint's host only (a gated
repository needs one, and its terms accepted on its page); HF_HUB_CACHE,
else $HF_HOME/hub, else ~/.cache/huggingface/hub; HF_HUB_OFFLINE=1 finds
the model in the cache without a request.

flags:`

// runPull fetches a model from the Hugging Face Hub (package hfhub).
func runPull(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "pull", pullUsage)
	file := fs.String("file", "", "take this `file` of the repository (its path there, NAME.gguf) instead of choosing by quantization")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("name one repository: ORG/REPO[:QUANT]")}
	}
	ref, err := hfhub.ParseRef(pos[0])
	if err != nil {
		return usageError{err}
	}
	if *file != "" && ref.Quant != "" {
		return usageError{fmt.Errorf("name a quantization (:%s) or a --file, not both", ref.Quant)}
	}
	c, err := hfhub.FromEnv()
	if err != nil {
		return err
	}
	var opt hfhub.Options
	if mem, err := hfhub.TotalMemory(); err == nil {
		opt.Memory = mem
	}
	c.OnRetry = func(err error, wait time.Duration) {
		fmt.Fprintf(env.Stderr, "%v: trying again in %s\n", err, wait.Round(time.Millisecond))
	}
	p := &progressLine{w: env.Stdout}
	if isTerminal(env.Stdout) {
		opt.Progress = p.update
	}
	res, err := c.Pull(ctx, hfhub.Request{Ref: ref, File: *file}, opt)
	p.end()
	if err != nil {
		return err
	}
	printPulled(env.Stdout, res)
	return nil
}

// printPulled says what was pulled, where it is and what serve calls it.
func printPulled(w io.Writer, res *hfhub.Result) {
	switch {
	case res.Fetched == 0 && res.Resumed == 0:
		fmt.Fprintf(w, "%s: %s (%s, %s) is in the cache\n", res.Repo, res.File, hfhub.Size(res.Size), res.Why)
	case res.Resumed > 0:
		fmt.Fprintf(w, "%s: fetched %s (%s, %s), continuing from %s an earlier pull had fetched\n", res.Repo, res.File, hfhub.Size(res.Size), res.Why, hfhub.Size(res.Resumed))
	default:
		fmt.Fprintf(w, "%s: fetched %s (%s, %s)\n", res.Repo, res.File, hfhub.Size(res.Size), res.Why)
	}
	fmt.Fprintf(w, "path:  %s\nserve offers it as %s\n", res.Path, res.Name)
}

// parseInterleaved parses flags before and after the positional
// arguments (the flag package stops at the first), returning those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				helps[fs]()
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			return pos, finite(fs)
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// isTerminal reports whether w is a terminal (not a pipe, a file or
// /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressLine draws a download's progress on one terminal line, four
// times a second from a goroutine of its own (so the line is current when
// the bytes pause): the bytes, the rate since this pull began and the time
// left at that rate.
type progressLine struct {
	w           io.Writer
	done, total atomic.Int64
	once        sync.Once
	start       time.Time
	base        int64 // bytes there when this pull's first ones arrived
	stop        chan struct{}
	drawing     sync.WaitGroup
}

func (p *progressLine) update(done, total int64) {
	p.done.Store(done)
	p.total.Store(total)
	p.once.Do(func() {
		p.start, p.base, p.stop = time.Now(), done, make(chan struct{})
		p.drawing.Go(p.draw)
	})
}

// draw redraws the line until end, then once more.
func (p *progressLine) draw() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		done, total := p.done.Load(), p.total.Load()
		fmt.Fprintf(p.w, "\r%s", progressText(done-p.base, done, total, time.Since(p.start)))
		select {
		case <-p.stop:
			done, total := p.done.Load(), p.total.Load()
			fmt.Fprintf(p.w, "\r%s\n", progressText(done-p.base, done, total, time.Since(p.start)))
			return
		case <-t.C:
		}
	}
}

// progressText is one progress line: "1.5 GiB / 4.0 GiB  38% 21.3 MiB/s  ETA 2m0s".
func progressText(fetched, done, total int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s / %s  %3.0f%%", hfhub.Size(done), hfhub.Size(total), 100*float64(done)/float64(max(total, 1)))
	if elapsed < time.Second/2 || fetched <= 0 {
		return s + "\x1b[K"
	}
	rate := float64(fetched) / elapsed.Seconds()
	eta := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%s  %s/s  ETA %s\x1b[K", s, hfhub.Size(int64(rate)), eta)
}

// end draws the line a last time and ends it, if one was drawn.
func (p *progressLine) end() {
	p.once.Do(func() {}) // no line after this
	if p.stop != nil {
		close(p.stop)
		p.drawing.Wait()
	}
}
