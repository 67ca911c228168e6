package serve

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// With the prefix cache, requests that arrive one after another with the
// same long system prompt read only what follows it once the first has
// ended, count the tokens they did not compute, and reply exactly as
// without the cache.
func TestPrefixCacheAcrossRequests(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	system := tok.EncodeIDs("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her dog.", true)
	asks := []string{" One day", " Lily saw", " The dog", " Then"}
	run := func(cache bool) (replies [][]int32, cached []int, tot Totals) {
		s := start(t, l, Options{Paged: true, PrefixCache: cache, BlockSize: 8, MaxSeqs: 4, ChunkedPrefill: true})
		for _, a := range asks { // one at a time: nothing is live to share
			h, err := s.Submit(Request{Prompt: append(slices.Clone(system), tok.EncodeIDs(a, false)...), MaxTokens: 6, Sampling: greedy()})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for ev := range h.Events {
				if ev.Done {
					cached = append(cached, ev.Times.Cached)
					break
				}
				ids = append(ids, ev.Token)
			}
			replies = append(replies, ids)
		}
		return replies, cached, s.Totals()
	}
	without, cachedWithout, totWithout := run(false)
	with, cachedWith, totWith := run(true)
	if diff := cmp.Diff(without, with); diff != "" {
		t.Errorf("replies differ with the cache (-without +with):\n%s", diff)
	}
	full := len(system) / 8 * 8
	if diff := cmp.Diff([]int{0, 0, 0, 0}, cachedWithout); diff != "" {
		t.Errorf("cached tokens without the cache (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, full, full, full}, cachedWith); diff != "" {
		t.Errorf("cached tokens with the cache (-want +got):\n%s", diff)
	}
	if got, want := totWithout.PrefillRead-totWith.PrefillRead, 3*full; got != want {
		t.Errorf("the cache saved %d prompt tokens of computation, want %d", got, want)
	}
	if totWith.CachedTokens != 3*full || totWith.PromptTokens != totWithout.PromptTokens {
		t.Errorf("totals with the cache %+v", totWith)
	}
}

// Under a KV budget too small to keep every prompt, the least recently
// used prefix is the one forgotten, and replies stay the same.
func TestPrefixCacheEvictsUnderBudget(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	a := tok.EncodeIDs("Once upon a time, there was a little girl named Lily. She", true)
	b := tok.EncodeIDs("The big brown dog ran to the park and found a red ball. He", true)
	// 5 blocks of 8: one request (its prompt and 6 tokens) takes 3; each
	// prompt leaves its 2 full blocks behind.
	s := start(t, l, Options{Paged: true, PrefixCache: true, BlockSize: 8, MaxSeqs: 1, KVPositions: 8 * 5})
	ask := func(p []int32) (int, []int32) {
		h, err := s.Submit(Request{Prompt: p, MaxTokens: 6, Sampling: greedy()})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for ev := range h.Events {
			if ev.Done {
				return ev.Times.Cached, ids
			}
			ids = append(ids, ev.Token)
		}
		return -1, nil
	}
	_, firstA := ask(a)
	if c, _ := ask(b); c != 0 {
		t.Errorf("b first time: %d cached", c)
	}
	// the pool (5 blocks) held a's 2 retained blocks and b's 3: a's were
	// evicted to make room for b, least recently used first
	if c, again := ask(a); c != 0 || !slices.Equal(again, firstA) {
		t.Errorf("a after b filled the pool: %d cached (want 0: evicted), reply %v then %v", c, firstA, again)
	}
	if c, _ := ask(a); c != len(a)/8*8 {
		t.Errorf("a asked twice in a row: %d cached, want %d", c, len(a)/8*8)
	}
	if st := s.pool.Stats(); st.Evictions == 0 {
		t.Errorf("no eviction counted: %+v", st)
	}
}

// OnToken sees every generated token with the logits it was drawn from,
// the step, and the requests that shared it; returning true ends the
// request there.
func TestOnTokenHook(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	s := start(t, l, Options{MaxSeqs: 4})
	prompt := tok.EncodeIDs("Once upon a time", true)
	want := alone(t, l, prompt, 8, greedy())
	type seenToken struct {
		Step  int
		Mates []string
	}
	var seen []seenToken
	h, err := s.Submit(Request{Label: "watched", Prompt: prompt, MaxTokens: 20, Sampling: greedy(), OnToken: func(tk Token) bool {
		if tk.Logits[tk.ID] != slices.Max(tk.Logits) {
			t.Errorf("token %d is not the argmax of the logits it came with", tk.ID)
		}
		seen = append(seen, seenToken{Step: tk.Step, Mates: tk.Mates()})
		return len(seen) == 5
	}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.Submit(Request{Label: "mate", Prompt: prompt, MaxTokens: 20, Sampling: greedy()})
	ids, _, finish := collect(t, h)
	collect(t, other)
	if finish != FinishStop || !slices.Equal(ids, want[:5]) {
		t.Errorf("ended %q with %v, want stop after %v", finish, ids, want[:5])
	}
	withMate := 0
	for i, tk := range seen {
		if i > 0 && tk.Step <= seen[i-1].Step {
			t.Errorf("token %d at step %d after step %d", i, tk.Step, seen[i-1].Step)
		}
		if slices.Equal(tk.Mates, []string{"mate"}) {
			withMate++
		}
	}
	if withMate == 0 {
		t.Errorf("no token shared a step with the other request: %+v", seen)
	}
}

// Requests share cached blocks only within their CacheScope: the same
// prompt asked from another scope is computed again and reports nothing
// cached, while its own scope still finds it.
func TestPrefixCacheScopes(t *testing.T) {
	l := load(t)
	prompt := l.Model.Tokenizer.EncodeIDs("Once upon a time, there was a little girl named Lily. She loved to play outside.", true)
	s := start(t, l, Options{Paged: true, PrefixCache: true, BlockSize: 8, MaxSeqs: 4})
	var cached []int
	for _, scope := range []string{"client A", "client B", "client A", "", "client B"} { // one at a time
		h, err := s.Submit(Request{Prompt: prompt, MaxTokens: 2, Sampling: greedy(), CacheScope: scope})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range h.Events {
			if ev.Done {
				cached = append(cached, ev.Times.Cached)
			}
		}
	}
	full := (len(prompt) - 1) / 8 * 8
	if diff := cmp.Diff([]int{0, 0, full, 0, full}, cached); diff != "" {
		t.Errorf("cached tokens per request (-want +got):\n%s", diff)
	}
}
