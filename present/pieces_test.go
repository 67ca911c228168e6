package present

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/trace"
	"stepthrough/session"
	"stepthrough/views"
)

// A random-weight model pads its vocabulary with unused entries that
// write no text, and with random weights they score high: the panels name
// them "(empty piece)" and say why, never a bare "". A newline in the
// prompt is drawn as ↵, its chip's title saying "newline", not as an
// empty box.
func TestEmptyPiecesAndNewlinesAreShownAndExplained(t *testing.T) {
	reg := synthRegistry(t, "random.gguf", model.SynthOptions{Arch: "llama", Embd: 32, Layers: 1, Heads: 2, FFN: 64, Vocab: 2048, Context: 64, Type: quant.F32, Seed: 1})
	se := session.New("s", "", reg)
	defer se.Close()
	r := run("the cat\nsaw a dog")
	r.Model = "random.gguf"
	if err := se.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	sn := snapOf(se)
	step := sn.Cursor.Steps[0]
	tok := sn.tokenizePanel(step, trace.Stage{}).(*views.TokenizePanel)
	var newline *views.Token
	for i, x := range tok.Tokens {
		if x.Show == "" || strings.ContainsAny(x.Show, "\n\t\r") {
			t.Errorf("token %d (id %d) draws %q", i, x.ID, x.Show)
		}
		if x.Show == "↵" {
			newline = &tok.Tokens[i]
		}
	}
	if newline == nil || newline.Note != "↵ newline" {
		t.Fatalf("no chip draws the newline as ↵ explained: %+v", newline)
	}
	var chips bytes.Buffer
	if err := tok.Component().Render(context.Background(), &chips); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(chips.String(), "· ↵ newline") {
		t.Error("the newline chip's title does not say newline")
	}
	for _, p := range []views.Panel{sn.softmaxPanel(step, trace.Stage{}), sn.logitsPanel(step, trace.Stage{})} {
		var top []views.Bar
		switch x := p.(type) {
		case *views.SoftmaxPanel:
			top = x.Top
		case *views.LogitsPanel:
			top = x.Top
		}
		empty := 0
		for _, b := range top {
			if b.Piece == `""` {
				t.Errorf("id %d is labelled \"\"", b.ID)
			}
			if b.Piece == views.EmptyPiece {
				empty++
			}
		}
		var html bytes.Buffer
		if err := p.Component().Render(context.Background(), &html); err != nil {
			t.Fatal(err)
		}
		if empty == 0 {
			t.Fatalf("%T: no empty piece among the top %d of a random-weight model; the test needs one", p, len(top))
		}
		if !strings.Contains(html.String(), `data-testid="empty-piece-note"`) || !strings.Contains(html.String(), "writes no text") {
			t.Errorf("%T lists %d empty pieces and does not say why", p, empty)
		}
	}
}
