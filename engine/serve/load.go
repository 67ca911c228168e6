package serve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/sample"
)

// Load is a synthetic workload: users that each send one request, arriving
// at random (a Poisson process of Rate requests a second) or all at once.
type Load struct {
	Users        int     `json:"users"`         // 1 to 256
	Rate         float64 `json:"rate"`          // requests per second; 0: all at once
	PromptTokens int     `json:"prompt_tokens"` // per request
	MaxTokens    int     `json:"max_tokens"`    // per request
	// MinTokens, when set, makes each request's reply length uniform in
	// [MinTokens, MaxTokens] (seeded), as real replies vary.
	MinTokens   int     `json:"min_tokens,omitempty"`
	Temperature float64 `json:"temperature"` // 0: greedy
	Seed        uint64  `json:"seed"`        // arrivals and samplers
	// IgnoreEOS makes every request generate MaxTokens (as benchmarks
	// do, so every user costs the same); otherwise a reply ends at the
	// model's end of generation.
	IgnoreEOS bool `json:"ignore_eos"`
	// Stop, when set, ends a reply before this text (matched across
	// token boundaries, never streamed).
	Stop string `json:"stop,omitempty"`
	// SharedPrefix, when set, is how many of each prompt's first tokens
	// are the same for every user (a shared system prompt): what a prefix
	// cache can keep.
	SharedPrefix int `json:"shared_prefix,omitempty"`
}

// openings are the texts synthetic prompts are cut from.
var openings = []string{
	"Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.",
	"One day, a big dog went to the park. He saw a red ball under a tree.",
	"Tom and Sue were best friends. They liked to build tall towers with blocks.",
	"There was a small bird who could not fly. Every day she watched the other birds in the sky.",
	"Ben had a blue boat. He took it to the lake with his dad on a sunny morning.",
}

// Check reports a load that cannot run.
func (ld Load) Check() error {
	switch {
	case ld.Users < 1 || ld.Users > 256:
		return fmt.Errorf("users: %d, want 1 to 256", ld.Users)
	case ld.Rate < 0 || ld.Rate > 10000:
		return fmt.Errorf("rate: %g requests a second, want 0 (all at once) to 10000", ld.Rate)
	case ld.PromptTokens < 1 || ld.PromptTokens > 4096:
		return fmt.Errorf("prompt tokens: %d, want 1 to 4096", ld.PromptTokens)
	case ld.MaxTokens < 1 || ld.MaxTokens > 4096:
		return fmt.Errorf("max tokens: %d, want 1 to 4096", ld.MaxTokens)
	case ld.MinTokens < 0 || ld.MinTokens > ld.MaxTokens:
		return fmt.Errorf("min tokens: %d, want 0 to max tokens (%d)", ld.MinTokens, ld.MaxTokens)
	case ld.SharedPrefix < 0 || ld.SharedPrefix >= ld.PromptTokens:
		return fmt.Errorf("shared prefix: %d tokens, want 0 to prompt tokens − 1 (%d)", ld.SharedPrefix, ld.PromptTokens-1)
	case len(ld.Stop) > 64:
		return fmt.Errorf("stop: %d bytes, want at most 64", len(ld.Stop))
	case ld.Temperature < 0 || ld.Temperature > 2:
		return fmt.Errorf("temperature: %g, want 0 to 2", ld.Temperature)
	}
	return nil
}

// Prompt is user i's prompt: story text, its tokens repeated or cut to
// exactly PromptTokens (BOS first when the model wants one); with
// SharedPrefix, the first that many tokens are every user's same system
// text and user i's own text follows.
func (ld Load) Prompt(l *engine.Loaded, i int) []int32 {
	tok := l.Model.Tokenizer
	var ids []int32
	if ld.SharedPrefix > 0 {
		ids = fill(tok.EncodeIDs(systemText, true), tok.EncodeIDs(" "+systemText, false), ld.SharedPrefix)
		ids = append(ids, tok.EncodeIDs(" "+openings[i%len(openings)], false)...)
	} else {
		ids = tok.EncodeIDs(openings[i%len(openings)], true)
	}
	return fill(ids, tok.EncodeIDs(" "+openings[(i+1)%len(openings)], false), ld.PromptTokens)
}

// systemText is the shared prefix's text.
const systemText = "You are a storyteller for young children. Tell short, kind stories with simple words, and end every story happily."

// fill appends body to ids until there are n, and cuts to n.
func fill(ids, body []int32, n int) []int32 {
	for len(ids) < n && len(body) > 0 {
		ids = append(ids, body...)
	}
	return ids[:min(n, len(ids))]
}

// ReplyTokens is user i's token limit: MaxTokens, or with MinTokens set a
// length drawn for that user from [MinTokens, MaxTokens] (seeded).
func (ld Load) ReplyTokens(i int) int {
	if ld.MinTokens <= 0 {
		return ld.MaxTokens
	}
	return ld.MinTokens + rand.New(rand.NewPCG(ld.Seed, uint64(i)+2)).IntN(ld.MaxTokens-ld.MinTokens+1)
}

// Report is a load's measured result.
type Report struct {
	Options  Options   `json:"options"`
	Load     Load      `json:"load"`
	Backend  string    `json:"backend"`
	Summary  Summary   `json:"summary"`
	Requests []Times   `json:"-"`
	Steps    []Step    `json:"-"`
	Texts    []string  `json:"-"` // each user's reply
	Finish   []string  `json:"-"` // why each user's reply ended
	Started  time.Time `json:"-"`
}

// RunLoad serves ld on l under opt and measures it. onStep, when not nil,
// sees every step as it happens; onEvent every user's events (user index,
// event).
func RunLoad(ctx context.Context, l *engine.Loaded, opt Options, ld Load, onStep func(Step), onEvent func(int, Event)) (*Report, error) {
	if err := ld.Check(); err != nil {
		return nil, err
	}
	if opt.Steps == 0 { // keep every step of the load: each moves at least one token
		opt.Steps = min(1<<16, ld.Users*(ld.PromptTokens+ld.MaxTokens)+16)
	}
	s, err := New(l, opt)
	if err != nil {
		return nil, err
	}
	if onStep != nil {
		s.OnStep(onStep)
	}
	WarmUp(ctx, l)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan struct{})
	go func() { s.Run(runCtx); close(ran) }()
	defer func() { stop(); <-ran }()

	rep := &Report{Options: s.Options(), Load: ld, Backend: l.Backend().String(), Texts: make([]string, ld.Users), Finish: make([]string, ld.Users), Started: time.Now()}
	rng := rand.New(rand.NewPCG(ld.Seed, 1))
	var wg sync.WaitGroup
	errs := make(chan error, ld.Users)
	next := time.Now()
	for i := range ld.Users {
		if ld.Rate > 0 && i > 0 {
			next = next.Add(time.Duration(rng.ExpFloat64() / ld.Rate * float64(time.Second)))
			select {
			case <-time.After(time.Until(next)):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		p := sample.Defaults()
		p.Temperature, p.Seed, p.SeedSet = ld.Temperature, ld.Seed+uint64(i), true
		req := Request{Label: fmt.Sprintf("user %d", i+1), Prompt: ld.Prompt(l, i), MaxTokens: ld.ReplyTokens(i), Sampling: p, IgnoreEOS: ld.IgnoreEOS}
		if ld.Stop != "" {
			req.Stop = []string{ld.Stop}
		}
		h, err := s.Submit(req)
		if err != nil {
			return nil, fmt.Errorf("user %d: %w", i+1, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var text []byte
			for ev := range h.Events {
				text = append(text, ev.Text...)
				if onEvent != nil {
					onEvent(i, ev)
				}
				if ev.Done {
					rep.Finish[i] = ev.Finish
				}
				if ev.Done && ev.Finish != FinishEOS && ev.Finish != FinishLength && ev.Finish != FinishStop {
					errs <- fmt.Errorf("user %d: %s %v", i+1, ev.Finish, ev.Err)
				}
			}
			rep.Texts[i] = string(text)
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	rep.Requests, rep.Steps = s.Completed(), s.Steps()
	rep.Summary = Summarize(rep.Requests, rep.Steps)
	return rep, nil
}

// Hardware names this machine's CPU and cores (a benchmark reports it).
func Hardware() string {
	name := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d logical cores, %s/%s", name, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

// WarmUp runs a few untimed passes on l (a prompt, decode steps, a small
// batch), so a measurement does not include a model's first-touch costs
// (weights paged in from the file, caches cold).
func WarmUp(ctx context.Context, l *engine.Loaded) {
	var items []engine.BatchItem
	for range 4 {
		s, err := l.NewSession(64)
		if err != nil {
			return
		}
		defer s.Close()
		items = append(items, engine.BatchItem{Session: s, Tokens: []int32{1, 2, 3, 4, 5, 6, 7, 8}})
	}
	logits := make([][]float32, len(items))
	for range 8 {
		if l.Batch(ctx, items, logits) != nil {
			return
		}
		for i := range items {
			items[i].Tokens = []int32{engine.Argmax(logits[i])}
		}
	}
}
