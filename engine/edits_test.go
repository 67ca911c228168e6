package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/intervene"
)

// A session's edits apply to every later pass until changed, on both
// backends: the edited logits move; a fork continues with its parent's
// edits, bit for bit; a set the model cannot take is refused and the
// edits stay; no edits gives the plain logits back, bit for bit; a
// batched pass, which applies none, refuses an edited session.
func TestSetEdits(t *testing.T) {
	m := stories(t)
	prompt := []int32{1, 17, 42, 99, 7}
	off := &intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.MLP, Pos: -1, Op: intervene.Zero}}}
	bad := &intervene.Set{Edits: []intervene.Edit{{Layer: m.Config.Layers, Site: intervene.MLP, Pos: -1, Op: intervene.Zero}}}
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			l := loadOn(t, m, backend)
			s := newSession(t, l, 32)
			plain := eval(t, s, prompt...)
			setEdits(t, s, off)
			s.Reset()
			eval(t, s, prompt[:2]...)
			f, err := s.Fork()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			edited, forked := eval(t, s, prompt[2:]...), eval(t, f, prompt[2:]...)
			if slices.Equal(plain, edited) {
				t.Error("switching layer 2's MLP off changed no logit")
			}
			if diff := cmp.Diff(edited, forked); diff != "" {
				t.Errorf("the fork's pass differs from its parent's (-parent +fork):\n%s", diff)
			}
			if err := s.SetEdits(bad); err == nil || s.Edits() != off {
				t.Errorf("an edit past the last layer: error %v, edits now %v", err, s.Edits())
			}
			if err := l.Batch(context.Background(), []BatchItem{{Session: f, Tokens: prompt[:1]}}, make([][]float32, 1)); err == nil {
				t.Error("a batch took a session with edits")
			}
			setEdits(t, s, nil)
			s.Reset()
			if diff := cmp.Diff(plain, eval(t, s, prompt...)); diff != "" {
				t.Errorf("the pass without edits differs from the plain one (-plain +got):\n%s", diff)
			}
		})
	}
}

func setEdits(t *testing.T, s *Session, set *intervene.Set) {
	t.Helper()
	if err := s.SetEdits(set); err != nil {
		t.Fatal(err)
	}
}

// ResolveEdits reads each source on the intact model, whatever edits its
// session has (they are set aside, then back), and leaves the session
// empty: a mean ablation is MeanOver's, a steering SteerEdit's, a patch
// the source run's residual stream; with no source the set is as it was.
func TestResolveEdits(t *testing.T) {
	m := stories(t)
	l := loadOn(t, m, "cpu")
	ctx := context.Background()
	off := &intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Zero}}}
	steer := &intervene.Steer{Layer: 1, Toward: "happy day", Away: "sad night", Strength: 4}
	from := []int32{1, 17, 42, 99}
	ref := newSession(t, l, 0)
	mean, err := ref.MeanOver(ctx, "Once upon a time", off)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ref.SteerEdit(ctx, *steer)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ref.Residuals(ctx, 2, from)
	if err != nil {
		t.Fatal(err)
	}
	patch := intervene.Edit{Layer: 2, Site: intervene.Resid, Pos: 3, Op: intervene.Replace, Vector: rows[3]}
	cases := []struct {
		name string
		src  EditSources
		want *intervene.Set
	}{
		{"none", EditSources{}, off},
		{"mean", EditSources{MeanOver: "Once upon a time"}, mean},
		{"steer", EditSources{Steer: steer}, off.Plus(st)},
		{"patch", EditSources{Patch: &PatchSource{Layer: 2, Pos: 3, From: from}}, off.Plus(patch)},
		{"all", EditSources{MeanOver: "Once upon a time", Steer: steer, Patch: &PatchSource{Layer: 2, Pos: 3, From: from}}, mean.Plus(st).Plus(patch)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, l, 0)
			prev := &intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.MLP, Pos: -1, Op: intervene.Zero}}}
			setEdits(t, s, prev)
			eval(t, s, 1, 2)
			got, err := s.ResolveEdits(ctx, off, c.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("edits (-want +got):\n%s", diff)
			}
			if s.Pos() != 0 || s.Edits() != prev {
				t.Errorf("after: %d positions, edits %v; want 0 and %v", s.Pos(), s.Edits(), prev)
			}
			loaded, err := l.ResolveEdits(ctx, off, c.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, loaded); diff != "" {
				t.Errorf("Loaded.ResolveEdits (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := l.ResolveEdits(ctx, off, EditSources{Patch: &PatchSource{Layer: 0, Pos: 4, From: from}}); err == nil {
		t.Error("a patch from position 5 of 4 tokens was made")
	}
}
