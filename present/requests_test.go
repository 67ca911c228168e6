package present

import (
	"testing"

	"stepthrough/views"
)

// Each generated token shows its batch step and shortened batch-mates
// where the request kept them, its probability where known (never for
// the end of generation), and the Explorer's link when one is given.
func TestRequestTokens(t *testing.T) {
	m, err := smallModel(t).Get("m.gguf")
	if err != nil {
		t.Fatal(err)
	}
	eog := int32(-1)
	for id := range int32(m.Tokenizer.Len()) {
		if m.Tokenizer.IsEOG(id) {
			eog = id
			break
		}
	}
	if eog < 0 {
		t.Fatal("the tokenizer has no end of generation")
	}
	var p views.RequestPage
	steps := []RequestStep{{Pass: 3, Mates: []string{"cmpl-0123456789abcdef", "short-12"}}}
	RequestTokens(&p, m.Tokenizer, []int32{5, eog}, steps, []float64{-0.5, -0.1}, func(i int) string { return "/?token=" + string(rune('0'+i)) })
	if !p.Logprobs || len(p.Tokens) != 2 {
		t.Fatalf("tokens: %+v", p.Tokens)
	}
	first, last := p.Tokens[0], p.Tokens[1]
	if first.Pass != 3 || len(first.Mates) != 2 || first.Mates[0] != "cmpl-012345…" || first.Mates[1] != "short-12" || first.Logprob != -0.5 || first.Softmax != "/?token=0" {
		t.Errorf("first token: %+v", first)
	}
	if !last.End || last.Pass != -1 || last.P != 0 || last.Softmax != "/?token=1" {
		t.Errorf("end of generation: %+v", last)
	}
}

// A request's JSON is indented; a stream's events stay as they came.
func TestRequestPageIndentsJSON(t *testing.T) {
	p := RequestPage(Request{ID: "cmpl-1", Chat: true, Raw: `{"a":1}`, Response: `{"b":2}`, Streamed: true})
	if p.Request != "{\n  \"a\": 1\n}" || p.Response != `{"b":2}` || p.Endpoint != "POST /v1/chat/completions" {
		t.Errorf("page: %+v", p)
	}
	if p := RequestPage(Request{Response: `{"b":2}`}); p.Response != "{\n  \"b\": 2\n}" || p.Endpoint != "POST /v1/completions" {
		t.Errorf("not streamed: %+v", p)
	}
}
