package session

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"stepthrough/models/modelstest"
)

// Follow moves a session to another server's view of the same run without
// replaying it, and shows exactly what opening that view afresh shows;
// another run opens afresh.
func TestFollow(t *testing.T) {
	ctx := context.Background()
	eng := modelstest.Lesson(t)
	lead, follower, fresh := New("a", "", eng), New("b", "", eng), New("c", "", eng)
	defer lead.Close()
	defer follower.Close()
	defer fresh.Close()
	if err := lead.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	if err := follower.Follow(ctx, lead.Spec()); err != nil {
		t.Fatal(err)
	}
	for _, act := range []string{"next-token", "next-token", "step", "step", "back", "next-token"} {
		if err := lead.Act(ctx, act, nil); err != nil {
			t.Fatal(err)
		}
		if err := follower.Follow(ctx, lead.Spec()); err != nil {
			t.Fatal(err)
		}
		if err := fresh.Open(ctx, lead.Spec()); err != nil {
			t.Fatal(err)
		}
		a, b, c := lead.Snapshot(), follower.Snapshot(), fresh.Snapshot()
		if !reflect.DeepEqual(a.Spec, b.Spec) || !reflect.DeepEqual(b.Spec, c.Spec) || !slices.Equal(a.Gen, b.Gen) || !slices.Equal(b.Gen, c.Gen) {
			t.Fatalf("after %s: leader %+v %v, follower %+v %v, opened afresh %+v %v", act, a.Spec.View, a.Gen, b.Spec.View, b.Gen, c.Spec.View, c.Gen)
		}
	}
	other := run("The capital of France is")
	if err := follower.Follow(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := follower.Settings().Prompt; got != other.Prompt {
		t.Errorf("following another run kept the prompt %q", got)
	}
}
