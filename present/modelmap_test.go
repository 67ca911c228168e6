package present

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"stepthrough/engine/reftest"
	"stepthrough/engine/trace"
	"stepthrough/models"
	"stepthrough/models/modelstest"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/views"
)

// getter answers an action's fields from a map.
func getter(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The model map is drawn from the loaded model and the step: a part per
// layer's attention and MLP, per sampler filter; its hover sentences carry
// the engine's numbers (shape, cache bytes, candidate counts); a click
// (goto) lands on the part's stage; a bad goto is refused in one line.
func TestModelMapFromTheModel(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("m", "", reg)
	defer se.Close()
	r := run("Once upon a time")
	r.Sampler.Seed, r.Sampler.SeedSet = 3, true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	c := snapOf(se).Model.Config
	e := Explorer(se)
	L := e.Map.Layout()
	parts := map[string]views.MapPart{}
	for _, p := range L.Parts {
		parts[p.Key] = p
	}
	st := snapOf(se).Cursor.Steps[0]
	want := []string{"tokenize", "embed", "norm", "logits", "softmax", "sample", "kv"}
	for i := range c.Layers {
		want = append(want, fmt.Sprintf("attention-%d", i+1), fmt.Sprintf("mlp-%d", i+1))
	}
	for i := range st.Sampler {
		want = append(want, fmt.Sprintf("sampler-%d", i+1))
	}
	if len(parts) != len(want) {
		t.Errorf("%d parts, want %d", len(parts), len(want))
	}
	for _, k := range want {
		if _, ok := parts[k]; !ok {
			t.Errorf("no part %q", k)
		}
	}
	if !parts["tokenize"].Here || parts["embed"].Done || parts["norm"].Stage != "" {
		t.Errorf("tokenize %+v, embed %+v, norm %+v", parts["tokenize"], parts["embed"], parts["norm"])
	}
	if a := L.Fill(strings.ReplaceAll(L.AttnTitle, "{L}", "2")); !strings.HasPrefix(a, "Layer 2 attention") || !strings.Contains(a, fmt.Sprintf("%d query heads (%d K/V heads) of %d values", c.Heads, c.KVHeads, c.HeadDim)) ||
		!strings.Contains(a, fmt.Sprintf("each of the %d new positions weighs the visible keys by softmax(q·k/√%d)", st.N, c.HeadDim)) {
		t.Errorf("attention title %q", a)
	}
	last := st.Layers[len(st.Layers)-1]
	if k := L.Fill(parts["kv"].Title); !strings.Contains(k, fmt.Sprintf("%d positions cached, %d bytes in use", last.KVLen, last.KVBytesUsed)) {
		t.Errorf("kv title %q (engine: %d positions, %d bytes)", k, last.KVLen, last.KVBytesUsed)
	}
	for i, f := range st.Sampler {
		p := parts[fmt.Sprintf("sampler-%d", i+1)]
		if !f.Skipped && !strings.Contains(L.Fill(p.Title), fmt.Sprintf("candidates %d in, %d kept", f.BeforeCount, f.AfterCount)) {
			t.Errorf("sampler %d title %q, engine %d → %d", i+1, L.Fill(p.Title), f.BeforeCount, f.AfterCount)
		}
	}
	if m := L.Fill(L.MLPTitle); !strings.Contains(m, fmt.Sprintf("[%d × %d] → [%d × %d]", st.N, c.Embd, st.N, c.FFN)) {
		t.Errorf("mlp title %q", m)
	}
	for _, tc := range []struct {
		fields       map[string]string
		stage        trace.Kind
		layer, sstep int
		where        string
	}{
		{map[string]string{"stage": "mlp", "layer": "2"}, trace.StageMLP, 1, -1, fmt.Sprintf("layer 2 of %d · MLP", c.Layers)},
		{map[string]string{"stage": "sampler", "filter": "2"}, trace.StageSampler, -1, 1, fmt.Sprintf("sampler step 2 of %d · %s", len(st.Sampler), st.Sampler[1].Step)},
		{map[string]string{"stage": "kv"}, trace.StageKV, -1, -1, "KV cache append"},
		{map[string]string{"stage": "attention", "layer": "1"}, trace.StageAttention, 0, -1, fmt.Sprintf("layer 1 of %d · attention", c.Layers)},
	} {
		if err := se.Act(ctx, "goto", getter(tc.fields)); err != nil {
			t.Fatalf("goto %v: %v", tc.fields, err)
		}
		e := Explorer(se)
		L := e.Map.Layout()
		if e.Current.Name != string(tc.stage) || e.Current.Layer != tc.layer || e.Current.SamplerStep != tc.sstep || L.Where != tc.where {
			t.Errorf("goto %v: at %+v, map says %q", tc.fields, e.Current, L.Where)
		}
		if L.Flow == "" {
			t.Errorf("goto %v: no flow from the stage before", tc.fields)
		}
	}
	for _, bad := range []map[string]string{{"stage": "nope"}, {"stage": "mlp", "layer": "99"}, {"stage": "mlp", "layer": "-1"}, {"stage": "sampler", "filter": "x"}, {}} {
		if err := se.Act(ctx, "goto", getter(bad)); err == nil {
			t.Errorf("goto %v accepted", bad)
		}
	}
}

// No spoilers: the token a step draws appears in the generated text only
// from that step's sample stage on.
func TestGeneratedTextWaitsForTheDraw(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("g", "", reg)
	defer se.Close()
	r := run("Once upon a time")
	r.Sampler.Seed, r.Sampler.SeedSet = 3, true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the prompt's step, then one decode step
		seen := false
		for {
			e := Explorer(se)
			step := e.Step
			if e.Current.Name == string(trace.StageSample) {
				seen = true
			}
			if want := step + map[bool]int{true: 1, false: 0}[seen]; len(e.Generated) != want {
				t.Fatalf("step %d at %s: %d generated tokens shown, want %d", step, e.Current.Label, len(e.Generated), want)
			}
			if e.Current.Index == len(e.Stages)-1 {
				break
			}
			if err := se.Act(ctx, "step", nil); err != nil {
				t.Fatal(err)
			}
		}
		if !seen {
			t.Fatal("no sample stage")
		}
		if err := se.Act(ctx, "step", nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The KV cache table: on the prompt's step every position is new; on a
// decode step one row is appended and the rest were read, not
// recomputed; the bytes per position are the engine's bytes over its
// rows.
func TestKVTable(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("k", "", reg)
	defer se.Close()
	r := run("Once upon a time")
	r.Sampler.Seed, r.Sampler.SeedSet = 3, true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	for step := range 2 {
		if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "kv"})); err != nil {
			t.Fatal(err)
		}
		k, ok := Explorer(se).Panel.(*views.KVPanel)
		if !ok {
			t.Fatalf("step %d: no KV panel", step)
		}
		st := snapOf(se).Cursor.Steps[step]
		newRows := 0
		for _, p := range k.Positions {
			if p.New != (p.Pos >= st.Pos0) {
				t.Errorf("step %d: position %d new=%v (step starts at %d)", step, p.Pos, p.New, st.Pos0)
			}
			if p.New {
				newRows++
			}
		}
		if k.Appended != st.N || newRows != st.N || k.Saved != st.Pos0 || k.Len != st.Pos0+st.N {
			t.Errorf("step %d: appended %d, %d new rows, saved %d, len %d; the step fed %d tokens from %d", step, k.Appended, newRows, k.Saved, k.Len, st.N, st.Pos0)
		}
		if k.RowBytes == 0 || k.RowBytes*len(k.Layers)*k.Len != k.BytesUsed {
			t.Errorf("step %d: %d bytes per row × %d layers × %d positions ≠ %d bytes in use", step, k.RowBytes, len(k.Layers), k.Len, k.BytesUsed)
		}
		for _, l := range k.Layers[:k.LayersDrawn] {
			if len(l.NewK) != 1 || len(l.NewV) != 1 || len(l.NewK[0].Values) != snapOf(se).Model.Config.KVDim() || len(l.NewV[0].Values) != snapOf(se).Model.Config.KVDim() {
				t.Errorf("step %d layer %d: K rows %d, V rows %d", step, l.Layer, len(l.NewK), len(l.NewV))
			}
		}
		if err := se.Act(ctx, "next-token", nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The attention row's arithmetic: exp(score − max) ÷ Σ is the engine's
// weight for every key; the arcs are that row; the head grid has a strip
// per head.
func TestAttentionRowArithmetic(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("a", "", reg)
	defer se.Close()
	if err := se.Run(ctx, run("Tom had a big dog. The dog was")); err != nil {
		t.Fatal(err)
	}
	for _, layer := range []string{"1", "3"} {
		if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "attention", "layer": layer})); err != nil {
			t.Fatal(err)
		}
		a := Explorer(se).Panel.(*views.AttentionPanel)
		if len(a.Math) == 0 || len(a.Math) != len(a.Arcs) || len(a.HeadRows) != snapOf(se).Model.Config.Heads {
			t.Fatalf("layer %s: %d terms, %d arcs, %d head rows", layer, len(a.Math), len(a.Arcs), len(a.HeadRows))
		}
		var sum float64
		for j, m := range a.Math {
			sum += m.W
			if d := m.Exp/a.MathSum - m.W; d > 1e-5 || d < -1e-5 {
				t.Errorf("layer %s key %d: exp/Σ %g, engine weight %g", layer, j, m.Exp/a.MathSum, m.W)
			}
			if float64(a.Arcs[j]) != m.W || a.HeadRows[a.Head].Values[j] != a.Arcs[j] {
				t.Errorf("layer %s key %d: arc %g, head row %g, weight %g", layer, j, a.Arcs[j], a.HeadRows[a.Head].Values[j], m.W)
			}
		}
		if sum < 0.9999 || sum > 1.0001 {
			t.Errorf("layer %s: weights sum to %g", layer, sum)
		}
		// one colour scale for weights in every view: a weight of 0.15
		// is the same colour on layer 1 and layer 3
		if a.Min != 0 || a.Max != 1 {
			t.Errorf("layer %s: the heatmap's weights scale %g to %g, want 0 to 1", layer, a.Min, a.Max)
		}
	}
	// a decode step has one row, whose largest weight is below 1: the
	// scale stays 0 to 1
	if err := se.Act(ctx, "next-token", getter(nil)); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "attention", "layer": "2"})); err != nil {
		t.Fatal(err)
	}
	a := Explorer(se).Panel.(*views.AttentionPanel)
	if len(a.Cells) != 1 || a.Min != 0 || a.Max != 1 {
		t.Errorf("decode step: %d rows, scale %g to %g, want one row and 0 to 1", len(a.Cells), a.Min, a.Max)
	}
}

// The tokenized text: byte tokens that only together make a character are
// one group under it; the added BOS is marked and named, not "".
func TestTokenGroups(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("t", "", reg)
	defer se.Close()
	if err := se.Run(context.Background(), run("a 猫 and 🐱!")); err != nil {
		t.Fatal(err)
	}
	p := Explorer(se).Panel.(*views.TokenizePanel)
	var chars []string
	n := 0
	for _, g := range p.Groups {
		n += len(g.Tokens)
		if g.Bytes {
			if len(g.Tokens) < 2 {
				t.Errorf("a byte group of %d token", len(g.Tokens))
			}
			chars = append(chars, g.Text)
		}
	}
	if n != len(p.Tokens) {
		t.Errorf("groups hold %d tokens of %d", n, len(p.Tokens))
	}
	joined := strings.Join(chars, "|")
	if !strings.Contains(joined, "猫") || !strings.Contains(joined, "🐱") {
		t.Errorf("byte groups %q: want 猫 and 🐱 each under its byte tokens", joined)
	}
	first := p.Tokens[0]
	if p.BOS && (!first.Added || first.Show == "" || first.Show == `""`) {
		t.Errorf("BOS shown as %q", first.Show)
	}
	t.Logf("groups: %q; first token %q", joined, first.Show)
}

// The embed picture: the lit row of the table is the row the engine
// looked up; on GPT-2 the input is that row plus the position row; the
// map holds every distinct prompt token and neighbours from the table.
func TestEmbedLookup(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("e", "", reg)
	defer se.Close()
	if err := se.Run(context.Background(), run("Tom had a big dog. The dog was")); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(context.Background(), "goto", getter(map[string]string{"stage": "embed"})); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se).Panel.(*views.EmbedPanel)
	lit := e.Table[e.Lit].Values
	if len(lit) != len(e.TokenRow.Values) {
		t.Fatalf("lit row %d values, looked-up row %d", len(lit), len(e.TokenRow.Values))
	}
	for i := range lit {
		if d := lit[i] - e.TokenRow.Values[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("value %d: table %g, the engine's lookup %g", i, lit[i], e.TokenRow.Values[i])
		}
		if len(e.PosRow.Values) > 0 {
			if d := e.TokenRow.Values[i] + e.PosRow.Values[i] - e.Input.Values[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("value %d: token %g + position %g ≠ input %g", i, e.TokenRow.Values[i], e.PosRow.Values[i], e.Input.Values[i])
			}
		}
	}
	if snapOf(se).Model.Config.Arch == "gpt2" && len(e.PosRow.Values) == 0 {
		t.Error("GPT-2 without its position row")
	}
	prompt, other := 0, 0
	for _, p := range e.PCA {
		if p.Prompt {
			prompt++
		} else {
			other++
		}
	}
	ids := map[int32]bool{}
	for _, id := range snapOf(se).tokenIDs(snapOf(se).Cursor.Steps[0]) {
		ids[id] = true
	}
	if prompt != min(len(ids), maxMapTokens) || other == 0 {
		t.Errorf("map: %d prompt tokens (want %d), %d neighbours", prompt, min(len(ids), maxMapTokens), other)
	}
	// the first token's neighbours by brute force
	q := snapOf(se).tableRow(e.ID)
	best, bestCos := int32(-1), -2.0
	for j := range snapOf(se).Model.Config.Vocab {
		if int32(j) == e.ID {
			continue
		}
		r := snapOf(se).tableRow(int32(j))
		var dot float64
		for i := range r {
			dot += float64(r[i]) * float64(q[i])
		}
		if c := dot / (l2(r) * l2(q)); c > bestCos {
			best, bestCos = int32(j), c
		}
	}
	if got := snapOf(se).nearest([]int32{e.ID}, 1); len(got) != 1 || len(got[0]) != 1 || got[0][0] != best {
		t.Errorf("nearest to %d: %v, brute force %d", e.ID, got, best)
	}
}

// The map's drawing is the run's (one key for every step), its numbers
// the step's: the prompt's step feeds every prompt token, a decode step one.
func TestModelMapKeyAndNumbers(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("n", "", reg)
	defer se.Close()
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	e0 := Explorer(se)
	if err := se.Act(ctx, "next-token", nil); err != nil {
		t.Fatal(err)
	}
	e1 := Explorer(se)
	n0, n1 := e0.Map.Layout().Fill("{T} {C}"), e1.Map.Layout().Fill("{T} {C}")
	st := snapOf(se).Cursor.Steps[0]
	if e0.Map.Key != e1.Map.Key || n0 != fmt.Sprintf("%d %d", st.N, st.N) || n1 != fmt.Sprintf("1 %d", st.N+1) {
		t.Errorf("keys %q, %q; numbers %q then %q", e0.Map.Key, e1.Map.Key, n0, n1)
	}
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	if Explorer(se).Map.Key == e0.Map.Key {
		t.Error("a new run kept the drawing's key")
	}
}

// The MLP picture: on SwiGLU (stories260K) silu(gate) · up is the
// engine's activation; on GELU (the lesson model) after-the-nonlinearity
// is the engine's; the residual add is before + output = after.
func TestMLPUnits(t *testing.T) {
	dir := filepath.Dir(reftest.Path(t, "models", "stories260K.gguf"))
	reg := registry.New([]string{dir})
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	t.Cleanup(reg.Close)
	for _, model := range []string{"stories260K.gguf", "lesson.gguf"} {
		se := session.New("m", "", reg)
		r := run("Once upon a time")
		r.Model = model
		if err := se.Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if err := se.Act(context.Background(), "goto", getter(map[string]string{"stage": "mlp", "layer": "1"})); err != nil {
			t.Fatal(err)
		}
		m := Explorer(se).Panel.(*views.MLPPanel)
		L := layerOf(snapOf(se).Cursor.Steps[0], 0)
		act := L.MLP.Act[len(L.MLP.Act)-1]
		if len(m.Pre.Values) != m.Shown || m.Shown == 0 || m.FFN != len(act) {
			t.Fatalf("%s: pre %d values, shown %d, ffn %d", model, len(m.Pre.Values), m.Shown, m.FFN)
		}
		for i := range m.Shown {
			want := act[i]
			got := m.Post.Values[i]
			if len(m.Up.Values) > 0 {
				got *= m.Up.Values[i]
			}
			if d := got - want; d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s unit %d: %g, the engine's activation %g", model, i, got, want)
			}
		}
		for i := range m.Out.Values {
			if d := m.ResidBefore.Values[i] + m.Out.Values[i] - m.ResidAfter.Values[i]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("%s value %d: %g + %g ≠ %g", model, i, m.ResidBefore.Values[i], m.Out.Values[i], m.ResidAfter.Values[i])
			}
		}
		se.Close()
	}
}

// The hovers' arithmetic holds with the engine's numbers: a softmax row's
// exp((z − max)/T) ÷ Σ is its probability; a filter's p after is p going
// in ÷ the kept total; the KV row is 2 × values × bytes.
func TestHoverArithmetic(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("h", "", reg)
	defer se.Close()
	r := run("She was very")
	r.Sampler.Seed, r.Sampler.SeedSet = 3, true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "softmax"})); err != nil {
		t.Fatal(err)
	}
	sm := Explorer(se).Panel.(*views.SoftmaxPanel)
	for _, b := range sm.Top {
		if p := math.Exp((b.Logit-sm.ZMax)/sm.Temperature) / sm.Norm; math.Abs(p-b.Value) > 1e-5 {
			t.Errorf("%s: exp((%g − %g)/%g) ÷ %g = %g, the engine's p %g", b.Piece, b.Logit, sm.ZMax, sm.Temperature, sm.Norm, p, b.Value)
		}
	}
	checked := 0
	for i := range snapOf(se).Cursor.Steps[0].Sampler {
		if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "sampler", "filter": fmt.Sprint(i + 1)})); err != nil {
			t.Fatal(err)
		}
		sp := Explorer(se).Panel.(*views.SamplerPanel)
		if sp.KeptMass <= 0 {
			continue
		}
		checked++
		for _, b := range sp.Kept {
			if math.Abs(b.Before/sp.KeptMass-b.Value) > 1e-5 {
				t.Errorf("step %d %s %s: %g ÷ %g, the engine's p after %g", i+1, sp.Name, b.Piece, b.Before, sp.KeptMass, b.Value)
			}
		}
	}
	if checked == 0 {
		t.Error("no filter step's hover was checked")
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "sample"})); err != nil {
		t.Fatal(err)
	}
	smp := Explorer(se).Panel.(*views.SamplePanel)
	for _, c := range smp.CDF { // the draw's point lies in the chosen token's stretch
		if c.Chosen && !(c.From <= smp.U && smp.U < c.To) {
			t.Errorf("u %g outside the chosen token's %g–%g", smp.U, c.From, c.To)
		}
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "kv"})); err != nil {
		t.Fatal(err)
	}
	kv := Explorer(se).Panel.(*views.KVPanel)
	if kv.KVDim == 0 || kv.RowBytes%(2*kv.KVDim) != 0 || kv.RowBytes/(2*kv.KVDim) < 1 {
		t.Errorf("KV row: %d bytes for 2 × %d values", kv.RowBytes, kv.KVDim)
	}
}
