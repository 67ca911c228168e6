package tokenizer

// Special tokens the file does not mark as such. Many GGUF files type their
// end-of-turn or fill-in-the-middle tokens as normal or user-defined;
// llama.cpp recognises them by their text when it loads the vocabulary,
// makes them control tokens (so their text in a prompt is not parsed as
// the token) and stops generation at the end-of-generation ones. These
// lists and rules follow llama.cpp's loader, so the same file tokenizes
// and stops the same way here.

const (
	fimPre = iota
	fimSuf
	fimMid
	fimPad
	fimRep
	fimSep
)

// eotTexts name an end-of-turn token when the metadata sets none.
var eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}

// fimTexts name each fill-in-the-middle token when the metadata sets none.
var fimTexts = [6][]string{
	fimPre: {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
	fimSuf: {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
	fimMid: {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
	fimPad: {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
	fimRep: {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	fimSep: {"<|file_sep|>"},
}

// eogTexts are tokens that end generation wherever they are in the
// vocabulary (with EOS, EOT, EOM and the FIM pad, repo and separator).
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
	"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>"}

// alwaysShown are gpt-oss's channel tokens, which are rendered as text.
var alwaysShown = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}

// classifySpecial computes each token's effective type and the set of
// end-of-generation tokens.
func (t *Tokenizer) classifySpecial() {
	v := t.v
	n := len(v.Tokens)
	t.types = make([]TokenType, n)
	for i := range t.types {
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
	}
	// the id a text names: the last of duplicates, as a map filled in
	// order keeps it
	last := make(map[string]int32, 64)
	want := map[string]bool{}
	for _, list := range append([][]string{eotTexts, eogTexts, alwaysShown, {"<|eom_id|>"}}, fimTexts[:]...) {
		for _, s := range list {
			want[s] = true
		}
	}
	for i, s := range v.Tokens {
		if want[s] {
			last[s] = int32(i)
		}
	}
	control := func(id int32) { t.types[id] = TypeControl }
	// the first text of a list found in the vocabulary (lowest id when
	// several are: llama.cpp's pick among them is unordered)
	find := func(texts []string) int32 {
		best := int32(-1)
		for _, s := range texts {
			if id, ok := last[s]; ok && (best < 0 || id < best) {
				best = id
			}
		}
		return best
	}
	eot, eom := v.EOT, v.EOM
	if eot < 0 {
		if eot = find(eotTexts); eot >= 0 {
			control(eot)
		}
	}
	if eom < 0 {
		if eom = find([]string{"<|eom_id|>"}); eom >= 0 {
			control(eom)
		}
	}
	fim := v.FIM
	for k := range fim {
		if fim[k] < 0 {
			if fim[k] = find(fimTexts[k]); fim[k] >= 0 {
				control(fim[k])
			}
		}
	}
	t.eog = map[int32]bool{}
	for _, id := range []int32{fim[fimPad], fim[fimRep], fim[fimSep]} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := last[s]; ok {
			t.eog[id] = true
			control(id)
		}
	}
	for _, s := range alwaysShown {
		if id, ok := last[s]; ok {
			t.types[id] = TypeUserDefined
		}
	}
	for _, id := range []int32{v.EOS, eot, eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	t.eot = eot
	t.fixHarmony(last)
}

// fixHarmony applies llama.cpp's two exceptions: in the o200k harmony and
// solar-open vocabularies "<|end|>" ends a message, not generation; in
// vocabularies with "<|tool_response>" (gemma 4), "</s>" is ordinary text.
func (t *Tokenizer) fixHarmony(last map[string]int32) {
	has := func(s string) bool { id, ok := last[s]; return ok && t.eog[id] }
	if end, ok := last["<|end|>"]; ok && t.eog[end] &&
		((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))) {
		delete(t.eog, end)
		t.types[end] = TypeUserDefined
	}
	if s, ok := last["</s>"]; ok && t.eog[s] && has("<|tool_response>") {
		delete(t.eog, s)
		t.types[s] = TypeNormal
	}
}
