package tokenizer

import (
	"strings"
	"sync"
	"unicode/utf8"
)

type bpeSymbol struct {
	id         int32 // token id, or -1 when the symbol is not a token
	start, end int   // byte range of the input
	prev, next int
}

type bpeBigram struct {
	left, right int
	lid, rid    int32
	rank        int32
	result      int32
}

// bpeFirst orders BPE's merges: the lowest rank, then the leftmost.
func bpeFirst(a, b *bpeBigram) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}

const (
	maxCachedWords = 1 << 16
	maxCachedLen   = 64
)

type cachedWord struct {
	ids  []int32
	ends []int32 // end of each token, relative to the word's start
}

// wordCache remembers how recent words were tokenized. It is bounded: when
// full it is emptied and starts again.
type wordCache struct {
	mu sync.RWMutex
	m  map[string]cachedWord
}

func (c *wordCache) load(word []byte) (cachedWord, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, ok := c.m[string(word)]
	return w, ok
}

func (c *wordCache) store(word string, w cachedWord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedWords {
		c.m = make(map[string]cachedWord)
	}
	c.m[word] = w
}

// encodeBPE follows llama.cpp's llm_tokenizer_bpe_session: pre-tokenize,
// then within each piece start from single bytes (each one GPT-2 unicode
// character) and apply the lowest-ranked merge, leftmost first, until none
// applies.
func (t *Tokenizer) encodeBPE(text string, from, to int, out []Token) []Token {
	if t.rawUTF8 {
		return t.encodeEscaped(text[from:to], from, out)
	}
	for _, w := range t.pre.split(text[from:to]) {
		out = t.encodeWord(text, span{w.start + from, w.end + from}, out)
	}
	return out
}

// encodeEscaped is encodeBPE for SentencePiece-style BPE (gemma4): every
// space becomes ▁ first, as llama.cpp's escape_whitespace, and the
// tokens' spans are mapped back to the input's bytes.
func (t *Tokenizer) encodeEscaped(src string, from int, out []Token) []Token {
	esc := strings.ReplaceAll(src, " ", "▁")
	orig := make([]int, 0, len(esc)+1) // esc byte → src byte
	for i := 0; i < len(src); i++ {
		orig = append(orig, i)
		if src[i] == ' ' {
			orig = append(orig, i, i)
		}
	}
	orig = append(orig, len(src))
	first := len(out)
	for _, w := range t.pre.split(esc) {
		out = t.encodeWord(esc, w, out)
	}
	for i := first; i < len(out); i++ {
		out[i].Start, out[i].End = from+orig[out[i].Start], from+orig[out[i].End]
	}
	return out
}

// symbols splits a word into BPE's starting symbols: one per byte (GPT-2's
// byte runes), or per UTF-8 character for rawUTF8 vocabularies, each with
// its token or -1.
func (t *Tokenizer) symbols(word string) []bpeSymbol {
	syms := make([]bpeSymbol, 0, len(word))
	for i := 0; i < len(word); {
		n, id := 1, t.byteTok[word[i]]
		if t.rawUTF8 {
			_, n = utf8.DecodeRuneInString(word[i:])
			id = -1
			if tok, ok := t.toID[word[i:i+n]]; ok {
				id = tok
			}
		}
		syms = append(syms, bpeSymbol{id: id, start: i, end: i + n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	syms[len(syms)-1].next = -1
	return syms
}

func (t *Tokenizer) encodeWord(text string, w span, out []Token) []Token {
	word := text[w.start:w.end]
	if c, ok := t.cache.load([]byte(word)); ok {
		at := w.start
		for i, id := range c.ids {
			end := w.start + int(c.ends[i])
			out = append(out, Token{ID: id, Start: at, End: end})
			at = end
		}
		return out
	}
	if t.ignoreMerges {
		if id, ok := t.toID[encodeBytes(word)]; ok {
			return append(out, Token{ID: id, Start: w.start, End: w.end})
		}
	}
	if t.rawUTF8 && strings.Trim(word, "\n") == "" { // a run of newlines: looked up whole (llama.cpp's gemma4 fix)
		if id, ok := t.toID[word]; ok {
			return append(out, Token{ID: id, Start: w.start, End: w.end})
		}
	}
	syms := t.symbols(word)
	q := mergeQueue[bpeBigram]{items: make([]bpeBigram, 0, len(syms)), less: bpeFirst}
	tryAdd := func(l, r int) {
		if l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0 {
			return
		}
		if m, ok := t.merges[[2]int32{syms[l].id, syms[r].id}]; ok {
			q.push(bpeBigram{left: l, right: r, lid: syms[l].id, rid: syms[r].id, rank: m.rank, result: m.result})
		}
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	for q.len() > 0 {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.end == l.start || r.end == r.start || l.next != bg.right || l.id != bg.lid || r.id != bg.rid {
			continue
		}
		l.id, l.end = bg.result, r.end
		r.start = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		tryAdd(l.prev, bg.left)
		tryAdd(bg.left, l.next)
	}
	first := len(out)
	var ends []int32
	for i := 0; i != -1; i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, Token{ID: s.id, Start: w.start + s.start, End: w.start + s.end})
			ends = append(ends, int32(s.end))
			continue
		}
		for j := s.start; j < s.end; j++ { // not a token: one token per byte that is one
			if id := t.byteTok[word[j]]; id >= 0 {
				out = append(out, Token{ID: id, Start: w.start + j, End: w.start + j + 1})
				ends = append(ends, int32(j+1))
			}
		}
	}
	if len(word) <= maxCachedLen {
		ids := make([]int32, 0, len(out)-first)
		for _, tk := range out[first:] {
			ids = append(ids, tk.ID)
		}
		t.cache.store(word, cachedWord{ids, ends})
	}
	return out
}

func encodeBytes(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = byteToRune[s[i]]
	}
	return string(r)
}
