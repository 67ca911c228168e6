package tokenizer

// utf8Len is llama.cpp's unicode_len_utf8: the length a lead byte announces
// (stray continuation bytes count as one).
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

type spmSymbol struct {
	start, end int // byte range in the escaped text
	prev, next int
}

type spmBigram struct {
	left, right int
	score       float32
	size        int
}

// spmFirst orders SentencePiece's merges: the best score, then the
// leftmost.
func spmFirst(a, b *spmBigram) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.left < b.left
}

// encodeSPM follows llama.cpp's llm_tokenizer_spm: escape spaces as ▁ (with
// a leading ▁ when add_space_prefix), start from UTF-8 characters, merge the
// adjacent pair whose concatenation is the highest-scoring token (leftmost
// on ties) until none is left, then emit tokens, or <0xXX> byte tokens for
// symbols that are not tokens.
func (t *Tokenizer) encodeSPM(text string, from, to int, spacePrefix bool, out []Token) []Token {
	// escaped text with, per escaped byte, the input span it came from
	esc := make([]byte, 0, to-from+(to-from)/4+3)
	var srcStart, srcEnd []int
	add := func(b []byte, s, e int) {
		for _, c := range b {
			esc = append(esc, c)
			srcStart = append(srcStart, s)
			srcEnd = append(srcEnd, e)
		}
	}
	if spacePrefix {
		add([]byte("▁"), from, from)
	}
	for i := from; i < to; i++ {
		if text[i] == ' ' {
			add([]byte("▁"), i, i+1)
		} else {
			add([]byte{text[i]}, i, i+1)
		}
	}
	if !t.spmSplittable {
		return t.spmSegment(esc, srcStart, srcEnd, 0, len(esc), out)
	}
	// No token has ▁ after another character, so no merge can cross the
	// start of a ▁ run: segments there are independent, and cacheable.
	seg := 0
	for p := 1; p <= len(esc); p++ {
		if p < len(esc) && !(esc[p] == 0xe2 && p+3 <= len(esc) && string(esc[p:p+3]) == "▁" && (p < 3 || string(esc[p-3:p]) != "▁")) {
			continue
		}
		out = t.spmSegment(esc, srcStart, srcEnd, seg, p, out)
		seg = p
	}
	return out
}

func (t *Tokenizer) spmSegment(esc []byte, srcStart, srcEnd []int, from, to int, out []Token) []Token {
	if c, ok := t.cache.load(esc[from:to]); ok {
		at := from
		for i, id := range c.ids {
			end := from + int(c.ends[i])
			out = append(out, Token{ID: id, Start: srcStart[at], End: srcEnd[end-1]})
			at = end
		}
		return out
	}
	first := len(out)
	var ends []int32
	var syms []spmSymbol
	for off := from; off < to; {
		n := min(utf8Len(esc[off]), to-off)
		syms = append(syms, spmSymbol{start: off, end: off + n, prev: len(syms) - 1, next: len(syms) + 1})
		off += n
	}
	syms[len(syms)-1].next = -1
	q := mergeQueue[spmBigram]{less: spmFirst}
	tryAdd := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		id, ok := t.toID[string(esc[syms[l].start:syms[r].end])]
		if !ok {
			return
		}
		var score float32
		if t.v.Scores != nil {
			score = t.v.Scores[id]
		}
		q.push(spmBigram{left: l, right: r, score: score, size: syms[r].end - syms[l].start})
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	for q.len() > 0 {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.end == l.start || r.end == r.start || (l.end-l.start)+(r.end-r.start) != bg.size || l.next != bg.right {
			continue
		}
		l.end = r.end
		r.start = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		tryAdd(l.prev, bg.left)
		tryAdd(bg.left, l.next)
	}
	for i := 0; i != -1 && i < len(syms); i = syms[i].next {
		s := syms[i]
		if id, ok := t.toID[string(esc[s.start:s.end])]; ok {
			out = append(out, Token{ID: id, Start: srcStart[s.start], End: srcEnd[s.end-1]})
			ends = append(ends, int32(s.end-from))
			continue
		}
		for j := s.start; j < s.end; j++ {
			id := t.byteTok[esc[j]]
			if id < 0 {
				id = t.v.UNK
			}
			out = append(out, Token{ID: id, Start: srcStart[j], End: srcEnd[j]})
			ends = append(ends, int32(j+1-from))
		}
	}
	if to-from <= maxCachedLen {
		ids := make([]int32, 0, len(out)-first)
		for _, tk := range out[first:] {
			ids = append(ids, tk.ID)
		}
		t.cache.store(string(esc[from:to]), cachedWord{ids, ends})
	}
	return out
}
