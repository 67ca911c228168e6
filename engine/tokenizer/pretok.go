package tokenizer

import (
	"fmt"
	"strings"

	"github.com/dlclark/regexp2/v2"
)

// The pre-tokenizer regexes of llama.cpp's llm_tokenizer_bpe (with $ written
// as \z: end of piece only, as in the Rust regex engine Hugging Face uses).
// Each regex refines the pieces left by the one before; text a regex does
// not match stays a piece of its own.
const (
	reGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	reLlama3 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// reTekken is Mistral's tekken split as llama.cpp writes it: tokenizer.json's
	// upper- and lower-case letter classes become "a letter that is not a-z"
	// and "a letter that is not A-Z", so a letter outside ASCII counts as both.
	reTekken = `[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// The character classes of DeepSeek's pre-tokenizer, as code point ranges
// (written as numbers so no editor or tool can normalize them).
var (
	deepseekLetters = [][2]rune{
		{'A', 'Z'}, {'a', 'z'}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
		{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
		{0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
		{0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
		{0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
		{0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
		{0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
		{0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
		{0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
		{0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
		{0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
		{0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
		{0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
		{0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
		{0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
		{0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
	}
	deepseekPunct = [][2]rune{{'!', '/'}, {':', '~'}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}}
	cjk           = [][2]rune{{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}}
	reCJK         = codeClass(cjk) + `+`
)

// codeClass writes a regex character class of code point ranges, escaping
// each bound.
func codeClass(ranges [][2]rune) string {
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range ranges {
		writeClassRune(&b, r[0])
		if r[1] != r[0] {
			b.WriteByte('-')
			writeClassRune(&b, r[1])
		}
	}
	b.WriteByte(']')
	return b.String()
}

func writeClassRune(b *strings.Builder, r rune) {
	if r < 0x80 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
		fmt.Fprintf(b, `\x%02x`, r)
		return
	}
	b.WriteRune(r)
}

// preTokenizers are the supported tokenizer.ggml.pre names: their
// regexes, whether a piece in the vocabulary skips the merges, and
// whether llama.cpp adds BOS when the file does not say
// (tokenizer.ggml.add_bos_token).
var preTokenizers = map[string]struct {
	regexes      []string
	ignoreMerges bool
	addBOS       bool
}{
	"default":        {regexes: []string{`[\p{P}\$\+<=>\^~\|]+`, reGPT2, `\p{N}+`, `[0-9][0-9][0-9]`}},
	"gpt-2":          {regexes: []string{reGPT2}},
	"mpt":            {regexes: []string{reGPT2}},
	"olmo":           {regexes: []string{reGPT2}},
	"phi-2":          {regexes: []string{reGPT2}},
	"llama3":         {regexes: []string{reLlama3}, ignoreMerges: true, addBOS: true},
	"llama-v3":       {regexes: []string{reLlama3}, ignoreMerges: true, addBOS: true},
	"llama-bpe":      {regexes: []string{reLlama3}, ignoreMerges: true, addBOS: true},
	"dbrx":           {regexes: []string{reLlama3}},
	"smaug-bpe":      {regexes: []string{reLlama3}},
	"qwen2":          {regexes: []string{reQwen2}},
	"qwen2.5":        {regexes: []string{reQwen2}},
	"stablelm2":      {regexes: []string{reQwen2}},
	"falcon":         {regexes: []string{`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, reGPT2, `[0-9][0-9][0-9]`}},
	"starcoder":      {regexes: []string{`\p{N}`, reGPT2}},
	"refact":         {regexes: []string{`\p{N}`, reGPT2}},
	"command-r":      {regexes: []string{`\p{N}`, reGPT2}},
	"smollm":         {regexes: []string{`\p{N}`, reGPT2}},
	"tekken":         {regexes: []string{reTekken}, ignoreMerges: true, addBOS: true},
	"gemma4":         {regexes: []string{`[^\n]+|[\n]+`}}, // spaces already ▁; BPE over whole lines
	"deepseek-coder": {regexes: []string{`[\r\n]`, `\s?\p{L}+`, `\s?\p{P}+`, reCJK, `\p{N}`}},
	"deepseek-llm": {regexes: []string{
		`[\r\n]`,
		`\s?` + codeClass(deepseekLetters) + `+`,
		`\s?` + codeClass(deepseekPunct) + `+`,
		`\s+\z`,
		reCJK,
		`\p{N}+`,
	}},
}

// PreTokenizers lists the supported tokenizer.ggml.pre names.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	return names
}

type preTokenizer struct {
	name    string
	regexes []*regexp2.Regexp
	gpt2    bool // use the hand-written GPT-2 splitter (same result, faster)
}

func newPreTokenizer(name string) (*preTokenizer, bool, error) {
	if name == "" {
		name = "default"
	}
	spec, ok := preTokenizers[name]
	if !ok {
		return nil, false, fmt.Errorf("tokenizer.ggml.pre %q is not supported (supported: %s)", name, strings.Join(sortedNames(), ", "))
	}
	p := &preTokenizer{name: name}
	for _, expr := range spec.regexes {
		re, err := regexp2.Compile(expr)
		if err != nil {
			return nil, false, fmt.Errorf("pre-tokenizer %s: %w", name, err)
		}
		p.regexes = append(p.regexes, re)
	}
	p.gpt2 = len(spec.regexes) == 1 && spec.regexes[0] == reGPT2
	return p, spec.ignoreMerges, nil
}

func sortedNames() []string {
	n := PreTokenizers()
	for i := 1; i < len(n); i++ {
		for j := i; j > 0 && n[j] < n[j-1]; j-- {
			n[j], n[j-1] = n[j-1], n[j]
		}
	}
	return n
}

type span struct{ start, end int }

// split returns the pieces of text as byte spans, in order, covering it all.
func (p *preTokenizer) split(text string) []span {
	if p.gpt2 {
		return splitGPT2(text, nil)
	}
	return p.splitRegex(text)
}

func (p *preTokenizer) splitRegex(text string) []span {
	// Match on runes, each invalid byte being one U+FFFD, and map rune
	// indexes back to byte offsets: spans always fall on the input's bytes.
	runes := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text)+1)
	for i, r := range text {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(text))
	pieces := []span{{0, len(runes)}} // in rune indexes
	for _, re := range p.regexes {
		var next []span
		for _, pc := range pieces {
			idx, err := re.FindAllRunesIndex(runes[pc.start:pc.end], -1)
			if err != nil { // only on timeout, which is not set: keep the piece whole
				next = append(next, pc)
				continue
			}
			at := 0
			for _, m := range idx {
				if m[0] > at {
					next = append(next, span{pc.start + at, pc.start + m[0]})
				}
				if m[1] > m[0] {
					next = append(next, span{pc.start + m[0], pc.start + m[1]})
				}
				at = m[1]
			}
			if at < pc.end-pc.start {
				next = append(next, span{pc.start + at, pc.end})
			}
		}
		pieces = next
	}
	for i := range pieces {
		pieces[i] = span{offs[pieces[i].start], offs[pieces[i].end]}
	}
	return pieces
}
