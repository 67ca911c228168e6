package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"stepthrough/engine/gguf"
)

// Token is one token of an encoded text.
type Token struct {
	ID int32
	// Start and End are the byte span of the input text this token covers.
	// Tokens that cover no input (an added BOS, SentencePiece's added
	// leading space) have Start == End.
	Start, End int
	// Added is true for tokens the tokenizer added itself (BOS, EOS).
	Added bool
}

// Tokenizer encodes and decodes text for one vocabulary. It is safe for
// concurrent use.
type Tokenizer struct {
	v       *Vocab
	toID    map[string]int32
	byteTok [256]int32 // SPM: <0xXX> tokens; BPE: the token of each byte's unicode char
	pieces  [][]byte   // the bytes each token stands for when decoded

	spmSplittable bool // no token has ▁ after another character

	// user-defined tokens, longest first: always split out of raw text
	userTokens []int32
	// control and user-defined tokens, longest first: split out of text
	// when special text is parsed (EncodeSpecial)
	specialTokens []int32

	types []TokenType    // effective types, after classifySpecial
	eog   map[int32]bool // tokens that end generation
	eot   int32          // the end-of-turn token (metadata or found by text), -1 when none

	// BPE
	merges       map[[2]int32]merge
	pre          *preTokenizer
	ignoreMerges bool
	rawUTF8      bool // gemma4: spaces escaped to ▁, symbols are UTF-8 characters, not GPT-2 byte runes

	cache wordCache // both kinds: recent words and their tokens
}

type merge struct {
	rank   int32
	result int32
}

// New builds a tokenizer for a vocabulary.
func New(v *Vocab) (*Tokenizer, error) {
	t := &Tokenizer{v: v, toID: make(map[string]int32, len(v.Tokens))}
	for i, s := range v.Tokens {
		if _, dup := t.toID[s]; !dup { // first wins, as in most vocabularies' intent
			t.toID[s] = int32(i)
		}
	}
	for i := range t.byteTok {
		t.byteTok[i] = -1
	}
	switch v.Model {
	case "llama":
		t.spmSplittable = true
		for b := 0; b < 256; b++ {
			t.byteTok[b] = t.byteToken(byte(b))
		}
		for _, tok := range v.Tokens {
			if i := strings.Index(tok, "▁"); i >= 0 && strings.TrimLeft(tok, "▁") != "" && strings.Contains(strings.TrimLeft(tok, "▁"), "▁") {
				t.spmSplittable = false
				break
			}
		}
	case "gpt2", "gemma4":
		for b := 0; b < 256; b++ {
			if v.Model == "gemma4" { // raw UTF-8 symbols; bytes fall back to <0xXX>
				t.byteTok[b] = t.byteToken(byte(b))
			} else if id, ok := t.toID[string(byteToRune[b])]; ok {
				t.byteTok[b] = id
			}
		}
		t.rawUTF8 = v.Model == "gemma4"
		pre, ignore, err := newPreTokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		t.pre, t.ignoreMerges = pre, ignore
		t.merges = make(map[[2]int32]merge, len(v.Merges))
		for rank, m := range v.Merges {
			// The separator is the first space after the first character, so
			// a merge of a space-like piece still splits correctly.
			sp := strings.IndexByte(m[min(1, len(m)):], ' ')
			if sp < 0 {
				return nil, fmt.Errorf("tokenizer.ggml.merges[%d] = %q has no space", rank, m)
			}
			sp += min(1, len(m))
			l, r := m[:sp], m[sp+1:]
			lid, ok1 := t.toID[l]
			rid, ok2 := t.toID[r]
			res, ok3 := t.toID[l+r]
			if !ok1 || !ok2 || !ok3 {
				continue // a merge that can never produce a token changes no output
			}
			key := [2]int32{lid, rid}
			if _, dup := t.merges[key]; !dup {
				t.merges[key] = merge{rank: int32(rank), result: res}
			}
		}
	default:
		return nil, fmt.Errorf("tokenizer model %q is not supported", v.Model)
	}
	t.classifySpecial()
	for i := range v.Tokens {
		if t.Type(int32(i)) == TypeUserDefined && v.Tokens[i] != "" {
			t.userTokens = append(t.userTokens, int32(i))
		}
	}
	for i := range v.Tokens {
		if ty := t.Type(int32(i)); (ty == TypeUserDefined || ty == TypeControl) && v.Tokens[i] != "" {
			t.specialTokens = append(t.specialTokens, int32(i))
		}
	}
	longestFirst := func(a, b int32) int { return len(v.Tokens[b]) - len(v.Tokens[a]) }
	slices.SortStableFunc(t.userTokens, longestFirst)
	slices.SortStableFunc(t.specialTokens, longestFirst)
	t.pieces = make([][]byte, len(v.Tokens))
	for i := range v.Tokens {
		t.pieces[i] = t.decodePiece(int32(i))
	}
	return t, nil
}

// byteToken is the token of byte b by SentencePiece's convention: its
// <0xXX> token, else a token of that one byte (-1: none).
func (t *Tokenizer) byteToken(b byte) int32 {
	if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
		return id
	}
	if id, ok := t.toID[string([]byte{b})]; ok {
		return id
	}
	return -1
}

// FromGGUF builds the tokenizer described by a model file's metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// Vocab returns the vocabulary (do not modify it).
func (t *Tokenizer) Vocab() *Vocab { return t.v }

// Len is the vocabulary size.
func (t *Tokenizer) Len() int { return len(t.v.Tokens) }

// Piece is the vocabulary string of a token (e.g. "▁Once", "Ġthe", "<0x0A>").
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.v.Tokens) {
		return ""
	}
	return t.v.Tokens[id]
}

// Type is a token's type as the tokenizer treats it: the file's type
// (normal when the file has none), except for end-of-turn,
// end-of-generation and fill-in-the-middle tokens recognised by their text,
// which are control tokens as in llama.cpp (see special.go).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeNormal
	}
	return t.types[id]
}

// EOT is the end-of-turn token (from the metadata, or recognised by its
// text), or -1.
func (t *Tokenizer) EOT() int32 { return t.eot }

// Bytes is what a token contributes to decoded text: exact bytes, which
// may be part of a UTF-8 character. Control tokens contribute nothing.
func (t *Tokenizer) Bytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Display is what a token stands for on screen: its bytes, or for a
// control token (which contributes no text: BOS, a chat role marker, the
// end of a turn) its name in the vocabulary, so "<|user|>" is visible.
func (t *Tokenizer) Display(id int32) string {
	if b := t.Bytes(id); len(b) > 0 || t.Type(id) != TypeControl {
		return string(b)
	}
	return t.Piece(id)
}

// IsEOG reports whether generation should stop at this token: EOS, the
// end-of-turn and end-of-message tokens, and the other end-of-generation
// tokens llama.cpp recognises by their text (see special.go).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// Decode concatenates the bytes of the tokens. A leading space that a
// SentencePiece tokenizer added as a prefix is kept, as llama.cpp does.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		b.Write(t.Bytes(id))
	}
	return b.String()
}

func (t *Tokenizer) decodePiece(id int32) []byte {
	s := t.v.Tokens[id]
	switch t.Type(id) {
	case TypeControl, TypeUnused:
		return nil
	case TypeUnknown:
		if t.v.Model == "llama" {
			return []byte("\xe2\x96\x85") // ▅, as llama.cpp renders <unk>
		}
	case TypeByte:
		if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			var b byte
			if _, err := fmt.Sscanf(s[3:5], "%02X", &b); err == nil {
				return []byte{b}
			}
		}
	case TypeUserDefined:
		if t.v.Model != "llama" {
			return []byte(s)
		}
	}
	if t.v.Model != "gpt2" {
		return []byte(strings.ReplaceAll(s, "▁", " "))
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}

// Encode tokenizes text. With addSpecial, BOS/EOS are added as the model's
// metadata asks. Special-token text in the input is not parsed: "<s>" is
// tokenized as plain characters.
func (t *Tokenizer) Encode(text string, addSpecial bool) []Token {
	return t.encode(text, addSpecial, t.userTokens)
}

// EncodeSpecialTokens is Encode with special text parsed, as llama.cpp's
// parse_special: the text of a control token (a chat template's role
// markers, "<|end|>") becomes that token. Only text the application wrote,
// such as a rendered chat template, should be encoded this way; a user's
// own text goes through Encode, so it cannot forge a turn.
func (t *Tokenizer) EncodeSpecialTokens(text string, addSpecial bool) []Token {
	return t.encode(text, addSpecial, t.specialTokens)
}

// EncodeTemplate is EncodeSpecialTokens for a rendered chat template that
// holds text its messages supplied: a control token's text is parsed only
// where it lies wholly outside every range of plain (byte offsets,
// [start, end), sorted and not overlapping), so markers a user typed stay
// plain characters while the template's own become tokens. The ranges do
// not split the text otherwise: plain text and the template text around it
// are tokenized together, as the same text would be with nothing parsed.
func (t *Tokenizer) EncodeTemplate(text string, addSpecial bool, plain [][2]int) []Token {
	return t.encodeExcept(text, addSpecial, t.specialTokens, plain)
}

// HasControlText reports whether s holds the text of a control token (one
// that Encode leaves as characters but EncodeSpecialTokens parses).
func (t *Tokenizer) HasControlText(s string) bool {
	for _, fr := range t.partition(s, t.specialTokens, nil) {
		if fr.id >= 0 && t.types[fr.id] != TypeUserDefined {
			return true
		}
	}
	return false
}

// EncodeSpecial is EncodeSpecialTokens returning only the ids.
func (t *Tokenizer) EncodeSpecial(text string, addSpecial bool) []int32 {
	return ids(t.EncodeSpecialTokens(text, addSpecial))
}

func (t *Tokenizer) encode(text string, addSpecial bool, specials []int32) []Token {
	return t.encodeExcept(text, addSpecial, specials, nil)
}

func (t *Tokenizer) encodeExcept(text string, addSpecial bool, specials []int32, plain [][2]int) []Token {
	var out []Token
	if addSpecial && t.v.AddBOS && t.v.BOS >= 0 {
		out = append(out, Token{ID: t.v.BOS, Added: true})
	}
	prevSpecial := true
	for _, fr := range t.partition(text, specials, plain) {
		if fr.id >= 0 {
			out = append(out, Token{ID: fr.id, Start: fr.start, End: fr.end})
			prevSpecial = true
			continue
		}
		if t.v.Model == "llama" {
			out = t.encodeSPM(text, fr.start, fr.end, prevSpecial && t.v.AddSpacePrefix, out)
		} else {
			out = t.encodeBPE(text, fr.start, fr.end, out)
		}
		prevSpecial = false
	}
	if addSpecial && t.v.AddEOS && t.v.EOS >= 0 {
		out = append(out, Token{ID: t.v.EOS, Start: len(text), End: len(text), Added: true})
	}
	return out
}

type fragment struct {
	id         int32 // a user-defined token, or -1 for raw text
	start, end int
}

// partition splits user-defined tokens (e.g. runs of spaces some
// vocabularies define) out of the raw text, longest token first, as
// llama.cpp's tokenizer_st_partition does when special text is not parsed.
// A control token's text overlapping a range of plain is left as text; a
// user-defined token is split out everywhere, as Encode does.
func (t *Tokenizer) partition(text string, specials []int32, plain [][2]int) []fragment {
	frags := []fragment{{-1, 0, len(text)}}
	if text == "" {
		return nil
	}
	for _, id := range specials {
		tok := t.v.Tokens[id]
		var next []fragment
		for _, fr := range frags {
			if fr.id >= 0 {
				next = append(next, fr)
				continue
			}
			at, from := fr.start, fr.start // at: the fragment's text not yet split off; from: where to search
			for {
				i := strings.Index(text[from:fr.end], tok)
				if i < 0 {
					break
				}
				s, e := from+i, from+i+len(tok)
				if t.types[id] != TypeUserDefined && overlaps(plain, s, e) {
					from = s + 1
					continue
				}
				if s > at {
					next = append(next, fragment{-1, at, s})
				}
				next = append(next, fragment{id, s, e})
				at, from = e, e
			}
			if at < fr.end {
				next = append(next, fragment{-1, at, fr.end})
			}
		}
		frags = next
	}
	return frags
}

// overlaps reports whether [s, e) meets any of the sorted ranges.
func overlaps(ranges [][2]int, s, e int) bool {
	i, _ := slices.BinarySearchFunc(ranges, s, func(r [2]int, s int) int { return cmp.Compare(r[1], s+1) })
	return i < len(ranges) && ranges[i][0] < e
}

// EncodeIDs is Encode returning only the ids.
func (t *Tokenizer) EncodeIDs(text string, addSpecial bool) []int32 {
	return ids(t.Encode(text, addSpecial))
}

func ids(toks []Token) []int32 {
	out := make([]int32, len(toks))
	for i, tk := range toks {
		out[i] = tk.ID
	}
	return out
}

// The GPT-2 byte↔unicode map: printable bytes map to themselves, the rest
// to U+0100 upwards in byte order (space becomes Ġ).
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()
