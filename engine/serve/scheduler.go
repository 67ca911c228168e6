package serve

import (
	"context"
	"fmt"
	"sync"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/kv"
	"stepthrough/engine/sample"
	"stepthrough/engine/stop"
)

// Scheduler serves requests on one loaded model; Run drives it.
type Scheduler struct {
	l     *engine.Loaded
	opt   Options
	ctx   int // positions one request may use
	start time.Time

	mu        sync.Mutex
	nextID    int
	queue     []*seq
	running   []*seq
	held      int      // KV positions reserved by running requests (contiguous)
	pool      *kv.Pool // the paged KV memory, when Options.Paged
	preempted []int    // requests preempted while planning the next step
	steps     []Step
	nsteps    int
	done      []Times
	stopped   bool
	wake      chan struct{}
	onStep    func(Step)
	totals    Totals

	// reused by each step
	items  []engine.BatchItem
	logits [][]float32
	batch  []*seq
	counts []int
}

// seq is a request in the scheduler.
type seq struct {
	id        int
	req       Request
	sess      *engine.Session
	smp       *sample.Sampler
	end       *stop.End // the request's stop rule
	events    chan Event
	feed      []int32  // tokens to read: the prompt, or after a preemption the prompt and the reply so far
	out       []int32  // tokens generated
	read      int      // tokens of feed read
	one       [1]int32 // the next decode token
	generated int
	times     Times
	need      int // KV positions reserved
	cancelled bool
	text      []byte
	label     string
}

// New makes a scheduler on l. Options left zero take their defaults.
func New(l *engine.Loaded, opt Options) (*Scheduler, error) {
	if opt.Policy == "" {
		opt.Policy = Continuous
	}
	if opt.MaxSeqs == 0 {
		opt.MaxSeqs = 16
	}
	if opt.TokenBudget == 0 {
		opt.TokenBudget = l.MaxBatch()
	}
	opt.TokenBudget = min(opt.TokenBudget, l.MaxBatch())
	if opt.Steps <= 0 {
		opt.Steps = 4096
	}
	if opt.Paged && opt.BlockSize == 0 {
		opt.BlockSize = 16
	}
	probe, err := l.NewSession(0)
	if err != nil {
		return nil, err
	}
	ctx := probe.Capacity()
	probe.Close()
	if opt.KVPositions == 0 {
		opt.KVPositions = max(opt.MaxSeqs, 1) * ctx
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	s := &Scheduler{l: l, opt: opt, ctx: ctx, start: time.Now(), wake: make(chan struct{}, 1)}
	if opt.Paged {
		if s.pool, err = l.NewKVPool(opt.BlockSize, opt.KVPositions/opt.BlockSize); err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		s.pool.Retain = opt.PrefixCache
		s.opt.KVPositions = s.pool.Blocks * opt.BlockSize
	}
	return s, nil
}

// Options are the scheduler's settings, defaults filled in.
func (s *Scheduler) Options() Options { return s.opt }

// Context is the most positions (prompt and reply) one request may use.
func (s *Scheduler) Context() int { return s.ctx }

// OnStep sets a function called after every step (from Run's goroutine;
// it must not block).
func (s *Scheduler) OnStep(f func(Step)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onStep = f
}

// Handle is a submitted request: its ID and its stream of events, which
// ends with one Done event. The channel is buffered for the whole reply,
// so a slow reader never holds the scheduler up.
type Handle struct {
	ID     int
	Seed   uint64 // the request's sampler seed (drawn when not set)
	Events <-chan Event
	s      *Scheduler
}

// Cancel stops the request at the next step (its stream ends with
// FinishCancelled).
func (h *Handle) Cancel() {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for _, q := range append(h.s.queue[:len(h.s.queue):len(h.s.queue)], h.s.running...) {
		if q.id == h.ID {
			q.cancelled = true
		}
	}
	h.s.signal()
}

// Submit queues a request. It fails at once when the request can never
// run: an empty prompt, a token limit below 1, or more positions than one
// request may use or the whole KV cache holds.
func (s *Scheduler) Submit(r Request) (*Handle, error) {
	if len(r.Prompt) == 0 {
		return nil, fmt.Errorf("serve: empty prompt")
	}
	if r.MaxTokens < 1 {
		return nil, fmt.Errorf("serve: max tokens %d, want at least 1", r.MaxTokens)
	}
	need := len(r.Prompt) + r.MaxTokens
	if need > s.ctx || need > s.opt.KVPositions {
		return nil, fmt.Errorf("serve: %d prompt tokens and %d new ones need %d positions; one request may use %d", len(r.Prompt), r.MaxTokens, need, min(s.ctx, s.opt.KVPositions))
	}
	smp, err := sample.New(r.Sampling)
	if err != nil {
		return nil, fmt.Errorf("serve: sampling: %w", err)
	}
	smp.Accept(r.Prompt...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrClosed
	}
	s.nextID++
	q := &seq{id: s.nextID, req: r, feed: r.Prompt, smp: smp, end: stop.NewEnd(s.l.Model.Tokenizer, stop.Limits{MaxTokens: r.MaxTokens, Stops: r.Stop, IgnoreEOS: r.IgnoreEOS}), events: make(chan Event, r.MaxTokens+2), need: need}
	q.times = Times{ID: q.id, Arrived: time.Now(), PromptTokens: len(r.Prompt)}
	q.label = r.Label
	if q.label == "" {
		q.label = fmt.Sprintf("#%d", q.id)
	}
	s.queue = append(s.queue, q)
	s.signal()
	return &Handle{ID: q.id, Seed: smp.Seed(), Events: q.events, s: s}, nil
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run steps the scheduler until ctx is done; then it ends every request
// still queued or running (FinishCancelled) and refuses new ones.
func (s *Scheduler) Run(ctx context.Context) error {
	defer s.shutdown()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		parts := s.next()
		if len(parts) == 0 {
			select {
			case <-ctx.Done():
			case <-s.wake:
			}
			continue
		}
		if err := s.step(ctx, parts); err != nil {
			return err
		}
	}
}

// next ends cancelled requests, admits waiting ones and plans a step.
func (s *Scheduler) next() []Part {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reap()
	s.admit()
	parts := s.plan()
	for s.pool != nil && len(parts) > 0 && s.blocksNeeded() > s.pool.Free() {
		s.preempt()
		parts = s.plan()
	}
	return parts
}

func (s *Scheduler) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, q := range append(s.queue, s.running...) {
		s.end(q, Event{Done: true, Finish: FinishCancelled})
	}
	s.queue, s.running = nil, nil
}
