package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"stepthrough/engine/model"
	"stepthrough/engine/trace"
)

// PoolConfig bounds the sessions of a Pool.
type PoolConfig struct {
	MaxSessions  int           // in all (default 200)
	MaxPerClient int           // per client address (default 20)
	IdleTimeout  time.Duration // a session unused this long is closed (default 30 min)
	// DetachedTimeout closes a session sooner when no connection holds it
	// (the tab was closed; a reload reconnects well within it): default 2 min.
	DetachedTimeout time.Duration
	// MemoryBudget is the bytes of KV cache and trace all sessions may
	// hold together (estimated when a run starts); 0: 4 GiB.
	MemoryBudget int64
	// WorkBudget is the multiply-adds a run's logit lens may be estimated
	// to take (model.LensWork over its prefill and every new token); a
	// run over it is refused with the estimate. 0: no limit.
	WorkBudget int64
}

// ErrBusy is the answer when the pool is full: too many sessions, or too
// much memory reserved by their runs.
var ErrBusy = &Error{"the server is busy: too many sessions or too much memory in use; try again in a minute"}

// ErrExpired is the answer of a session its pool has closed.
var ErrExpired = &Error{"this session has expired: reload the page to start a new one"}

// Pool holds the viewers' sessions — Explorer tabs and students' own
// branches — within limits per client and in total, and admits each run
// by the memory it will hold.
type Pool struct {
	eng Engines
	cfg PoolConfig

	mu       sync.Mutex
	sessions map[string]*Session
	reserved int64
}

// NewPool makes a pool over eng.
func NewPool(eng Engines, cfg PoolConfig) *Pool {
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 200
	}
	if cfg.MaxPerClient == 0 {
		cfg.MaxPerClient = 20
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.DetachedTimeout == 0 {
		cfg.DetachedTimeout = 2 * time.Minute
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = 4 << 30
	}
	return &Pool{eng: eng, cfg: cfg, sessions: map[string]*Session{}}
}

// New registers a session for a client, within the limits. A client at
// its limit (reloaded tabs leave sessions behind) gives up its least
// recently used session; when the pool is full, a session idle for a
// minute is closed to make room, else the answer is ErrBusy.
func (p *Pool) New(client string) (*Session, error) { return p.add(client, true) }

// NewBranch is New for a student's branch: at the client's limit the
// answer is ErrBusy (a branch never closes another one).
func (p *Pool) NewBranch(client string) (*Session, error) { return p.add(client, false) }

func (p *Pool) add(client string, dropOwn bool) (*Session, error) {
	for range 4 {
		s, lru, err := p.tryAdd(client, dropOwn)
		if lru == nil {
			return s, err
		}
		// The client is at its limit: close its least recently used
		// session, waiting for an action that holds it to finish. The
		// session's lock is taken before the pool's, as a run reserving
		// memory takes them, so the two never wait for each other.
		p.Release(lru)
	}
	return nil, ErrBusy
}

// tryAdd registers a session if the limits allow; at the client's limit
// (when it may drop its own) it returns the session to close first.
func (p *Pool) tryAdd(client string, dropOwn bool) (*Session, *Session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var mine []*Session
	for _, s := range p.sessions {
		if s.client == client {
			mine = append(mine, s)
		}
	}
	if len(mine) >= p.cfg.MaxPerClient {
		if !dropOwn {
			return nil, nil, ErrBusy
		}
		return nil, leastRecent(mine), nil
	}
	if len(p.sessions) >= p.cfg.MaxSessions && !p.makeRoom(len(mine)) {
		return nil, nil, ErrBusy
	}
	var b [12]byte
	rand.Read(b[:])
	s := New(hex.EncodeToString(b[:]), client, p.eng)
	s.pool = p
	p.sessions[s.id] = s
	return s, nil, nil
}

func leastRecent(list []*Session) *Session {
	var lru *Session
	var at time.Time
	for _, s := range list {
		if t := s.LastUsed(); lru == nil || t.Before(at) {
			lru, at = s, t
		}
	}
	return lru
}

// Idle times after which a full pool takes a session for a newcomer: one
// no tab holds (a page load whose WebSocket never came, or a closed tab)
// at once from a client holding more sessions than the newcomer, else
// soon, since a page connects within a second; one a tab holds only from
// such a client, and later; failing those, anyone's session idle a
// minute.
const (
	detachedGrace = 3 * time.Second
	attachedGrace = 30 * time.Second
	staleGrace    = time.Minute // anyone's, least recently used first
)

// makeRoom closes one session for a newcomer holding own sessions, so a
// few addresses filling the pool cannot lock everyone else out: the
// victim comes from the client holding the most sessions (the heaviest
// user pays), detached sessions first. p.mu is held.
func (p *Pool) makeRoom(own int) bool {
	counts := map[string]int{}
	for _, s := range p.sessions {
		counts[s.client]++
	}
	now := time.Now()
	var detached, attached, stale *Session
	for _, s := range p.sessions {
		idle := now.Sub(s.LastUsed())
		heavy := counts[s.client] > own+1
		if s.conns.Load() == 0 && (idle >= detachedGrace || heavy) && heavier(s, detached, counts) {
			detached = s
		}
		if heavy && idle >= attachedGrace && heavier(s, attached, counts) {
			attached = s
		}
		if idle >= staleGrace && (stale == nil || s.LastUsed().Before(stale.LastUsed())) {
			stale = s
		}
	}
	for _, v := range []*Session{detached, attached, stale} {
		if v != nil && v.expireIfIdle(now, 0) {
			p.forget(v)
			return true
		}
	}
	return false
}

// heavier reports whether s is a better victim than cur: its client holds
// more sessions, or as many and s was used less recently.
func heavier(s, cur *Session, counts map[string]int) bool {
	if cur == nil {
		return true
	}
	if a, b := counts[s.client], counts[cur.client]; a != b {
		return a > b
	}
	return s.LastUsed().Before(cur.LastUsed())
}

// forget removes s and its reservation. p.mu is held.
func (p *Pool) forget(s *Session) {
	delete(p.sessions, s.id)
	p.reserved -= s.reserved
	s.reserved = 0
}

// Get finds a live session by id.
func (p *Pool) Get(id string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id]
}

// Release closes a session and takes it out of the pool (a branch whose
// student rejoined the class or left).
func (p *Pool) Release(s *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forget(s)
}

// Evict closes the sessions idle longer than the pool's IdleTimeout, and
// those no connection holds after DetachedTimeout.
func (p *Pool) Evict(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		idle := p.cfg.IdleTimeout
		if s.conns.Load() == 0 {
			idle = min(idle, p.cfg.DetachedTimeout)
		}
		if s.expireIfIdle(now, idle) {
			p.forget(s)
		}
	}
}

// CloseAll closes every session (shutdown).
func (p *Pool) CloseAll() {
	for _, s := range p.all() {
		p.Release(s)
	}
}

func (p *Pool) all() []*Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := make([]*Session, 0, len(p.sessions))
	for _, s := range p.sessions {
		all = append(all, s)
	}
	return all
}

// Len counts the live sessions; Count a client's; Reserved the bytes
// their runs hold.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

func (p *Pool) Count(client string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sessions {
		if s.client == client {
			n++
		}
	}
	return n
}

func (p *Pool) Reserved() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserved
}

// reserve admits a run of s that will hold bytes, replacing the
// reservation of its previous run; ErrBusy when the budget would be
// exceeded, and a reason of its own for a run larger than the whole
// budget (waiting would not help it). s.mu is held.
func (p *Pool) reserve(s *Session, bytes int64) error {
	return p.reserveFor(s, bytes, "this run", "its KV cache and trace, the logit lens included", "use a shorter prompt or fewer new tokens")
}

// reserveFor is reserve naming what the bytes are for, as Hold does.
func (p *Pool) reserveFor(s *Session, bytes int64, what, holds, fix string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.sessions[s.id]; !ok {
		return ErrExpired
	}
	if err := p.fits(bytes, s.reserved, what, holds, fix); err != nil {
		return err
	}
	p.reserved += bytes - s.reserved
	s.reserved = bytes
	return nil
}

// Hold reserves bytes of the memory budget for engine work outside a
// session's run (activation patching, a comparison) until release is
// called; ErrBusy when the budget would be exceeded, and a reason of its
// own, naming what (the work) holds and how to hold less (fix), when
// bytes alone exceed it.
func (p *Pool) Hold(bytes int64, what, holds, fix string) (release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.fits(bytes, 0, what, holds, fix); err != nil {
		return nil, err
	}
	p.reserved += bytes
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.reserved -= bytes
		})
	}, nil
}

// fits checks that bytes, replacing a reservation of held, stay within
// the budget. p.mu is held.
func (p *Pool) fits(bytes, held int64, what, holds, fix string) error {
	if bytes > p.cfg.MemoryBudget {
		return errorf("%s would hold about %s (%s), more than the %s all runs on this server may hold (--memory-budget): %s",
			what, mib(bytes), holds, mib(p.cfg.MemoryBudget), fix)
	}
	if p.reserved-held+bytes > p.cfg.MemoryBudget {
		return ErrBusy
	}
	return nil
}

// mib writes bytes in MiB: whole ones as such, else to a tenth.
func mib(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// runBytes estimates what a run of promptTokens and maxTokens new tokens
// recording rec holds: its KV cache (float32 K and V, every layer) and the
// trace the Explorer records (attention rows of the last 64 positions per
// step, activations, logits, the sampler's candidates and the logit lens).
func runBytes(m *model.Model, rec trace.Options, promptTokens, maxTokens, draftK int) int64 {
	c := m.Config
	ctx := int64(promptTokens + maxTokens + draftK)
	kv := kvBytes(c, ctx)
	perPosLayer := (2*int64(c.Heads)*ctx + int64(c.QDim()) + 2*int64(c.KVDim()) + 9*int64(c.Embd) + 3*int64(c.FFN)) * 4
	// a speculative round records its verify batch: k+1 positions a step
	positions := int64(min(promptTokens, 64)) + int64(maxTokens)*int64(draftK+1)
	steps := int64(1 + maxTokens)
	trace := positions*int64(c.Layers)*perPosLayer + positions*2*int64(c.Embd)*4 + steps*(int64(c.Vocab)*4+8<<10)
	return kv + trace + lensBytes(c, rec, promptTokens, maxTokens, draftK)
}

// kvBytes is a float32 KV cache of positions, every layer.
func kvBytes(c *model.Config, positions int64) int64 {
	return int64(c.Layers) * int64(c.KVDim()) * 8 * positions
}

// besideBytes estimates what the sessions beside a run of positions hold:
// the interventions' baseline (edits: its KV cache and a step's logits)
// and the comparison with another weight type (vs: the model converted,
// whose KV cache and recorded pass of one step take what a run of those
// positions without new tokens takes).
func besideBytes(m *model.Model, rec trace.Options, positions int, edits, vs bool) int64 {
	var b int64
	if edits {
		b += kvBytes(m.Config, int64(positions)) + int64(m.Config.Vocab)*4
	}
	if vs {
		b += runBytes(m, rec, positions, 0, 0)
	}
	return b
}

// lensBytes is what a run's logit lens holds (none when rec keeps none):
// every step keeps each layer's last row of logits (the vocabulary, per
// layer and step) and the likeliest tokens of its last positions; while
// a pass runs, the backend's buffer holds a layer's rows of logits.
func lensBytes(c *model.Config, rec trace.Options, promptTokens, maxTokens, draftK int) int64 {
	if rec.Lens == 0 {
		return 0
	}
	steps, layers, vocab := int64(1+maxTokens), int64(c.Layers), int64(c.Vocab)
	last := steps * layers * vocab * 4
	rows := lensRows(rec, promptTokens) + int64(maxTokens)*lensRows(rec, draftK+1)
	kept := rows * layers * (int64(rec.Lens)*12 + 24)
	buffer := lensRows(rec, max(promptTokens, draftK+1)) * vocab * 4
	return last + kept + buffer
}

// lensRows is how many rows of a pass of n positions the lens of a trace
// recording rec computes.
func lensRows(rec trace.Options, n int) int64 {
	for _, k := range []int{rec.LastPositions, rec.LensPositions} {
		if k > 0 {
			n = min(n, k)
		}
	}
	return int64(n)
}

// checkLensWork refuses a run whose logit lens is estimated over the
// pool's work budget: its prefill's kept rows, and a pass per new token
// (a speculative round's verify batch).
func (p *Pool) checkLensWork(m *model.Model, rec trace.Options, promptTokens, maxTokens, draftK int) error {
	if rec.Lens == 0 || p.cfg.WorkBudget <= 0 {
		return nil
	}
	rows := lensRows(rec, promptTokens) + int64(maxTokens)*lensRows(rec, draftK+1)
	work := m.LensWork(int(rows))
	if work <= p.cfg.WorkBudget {
		return nil
	}
	return errorf("this run's logit lens would take about %.1f G multiply-adds (%d rows × %d layers over a vocabulary of %d), over the %.1f G one request may take (--work-budget): use fewer new tokens",
		float64(work)/1e9, rows, m.Config.Layers, m.Config.Vocab, float64(p.cfg.WorkBudget)/1e9)
}
