package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// TrainOptions say how a vocabulary is trained.
type TrainOptions struct {
	// Pre is the pre-tokenizer (a tokenizer.ggml.pre name; "" is gpt-2).
	// "qwen2" splits numbers into single digits, so sums can be worked
	// digit by digit.
	Pre string
	// Control tokens are appended after the merges, the first being BOS
	// and EOS; their text is never learnt from and, as in llama.cpp, is
	// parsed in input only when special text is parsed.
	Control []string
	// UserDefined tokens are appended after the control tokens; their text
	// is always split out of the input (as llama.cpp does for
	// USER_DEFINED tokens), e.g. tool-call tags.
	UserDefined []string
}

// TrainBPE learns a byte-level BPE vocabulary of vocabSize tokens from
// texts, the way GPT-2's tokenizer was made: split with the GPT-2
// pre-tokenizer, start from the 256 bytes (as GPT-2's byte↔unicode
// characters), and repeatedly merge the most frequent adjacent pair
// (ties: the pair of lowest token ids) into a new token. The specials are
// appended as control tokens. The merges, in order, are the ranks the
// tokenizer applies, so a student can read how every token was built.
func TrainBPE(texts []string, vocabSize int, o TrainOptions) (*Vocab, error) {
	specials := append(append([]string(nil), o.Control...), o.UserDefined...)
	if vocabSize < 256+len(specials) {
		return nil, fmt.Errorf("train bpe: vocabulary %d is smaller than the 256 bytes and %d specials", vocabSize, len(specials))
	}
	pre := o.Pre
	if pre == "" {
		pre = "gpt-2"
	}
	p, ignore, err := newPreTokenizer(pre)
	if err != nil {
		return nil, fmt.Errorf("train bpe: %w", err)
	}
	if ignore {
		return nil, fmt.Errorf("train bpe: pre-tokenizer %s ignores merges", pre)
	}
	counts := map[string]int{}
	for _, t := range texts {
		for _, piece := range splitOut(t, specials) {
			for _, sp := range p.split(piece) {
				counts[piece[sp.start:sp.end]]++
			}
		}
	}
	type word struct {
		syms  []int32
		count int
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic order
	words := make([]word, len(keys))
	for i, k := range keys {
		syms := make([]int32, len(k))
		for j := 0; j < len(k); j++ {
			syms[j] = int32(k[j])
		}
		words[i] = word{syms, counts[k]}
	}
	v := &Vocab{Model: "gpt2", Pre: pre, BOS: -1, EOS: -1, UNK: -1, EOT: -1, PAD: -1, EOM: -1, FIM: [6]int32{-1, -1, -1, -1, -1, -1}}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteToRune[b]))
		v.Types = append(v.Types, TypeNormal)
	}
	for len(v.Tokens) < vocabSize-len(specials) {
		pairs := map[[2]int32]int{}
		for _, w := range words {
			for j := 0; j+1 < len(w.syms); j++ {
				pairs[[2]int32{w.syms[j], w.syms[j+1]}] += w.count
			}
		}
		best, bestN := [2]int32{}, 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1])) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break // nothing left worth merging
		}
		id := int32(len(v.Tokens))
		v.Merges = append(v.Merges, v.Tokens[best[0]]+" "+v.Tokens[best[1]])
		v.Tokens = append(v.Tokens, v.Tokens[best[0]]+v.Tokens[best[1]])
		v.Types = append(v.Types, TypeNormal)
		for i := range words {
			s := words[i].syms
			out := s[:0]
			for j := 0; j < len(s); j++ {
				if j+1 < len(s) && s[j] == best[0] && s[j+1] == best[1] {
					out = append(out, id)
					j++
					continue
				}
				out = append(out, s[j])
			}
			words[i].syms = out
		}
	}
	for _, sp := range o.Control {
		v.Tokens = append(v.Tokens, sp)
		v.Types = append(v.Types, TypeControl)
	}
	for _, sp := range o.UserDefined {
		v.Tokens = append(v.Tokens, sp)
		v.Types = append(v.Types, TypeUserDefined)
	}
	if len(o.Control) > 0 {
		v.BOS = int32(len(v.Tokens) - len(specials))
		v.EOS = v.BOS
	}
	return v, nil
}

// splitOut returns the pieces of text between occurrences of any special.
func splitOut(text string, specials []string) []string {
	pieces := []string{text}
	for _, sp := range specials {
		if sp == "" {
			continue
		}
		var next []string
		for _, p := range pieces {
			for _, part := range strings.Split(p, sp) {
				if part != "" {
					next = append(next, part)
				}
			}
		}
		pieces = next
	}
	return pieces
}
