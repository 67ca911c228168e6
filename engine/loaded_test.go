package engine

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/vulkan"
)

// loadOn prepares m on a backend; "vulkan" skips (or fails under
// REQUIRE_VULKAN=1) when Load fell back to the CPU, and runs under the
// validation layer.
func loadOn(t *testing.T, m *model.Model, backend string) *Loaded {
	t.Helper()
	if backend == "vulkan" {
		t.Setenv("STEPTHROUGH_VK_VALIDATION", "1")
	}
	l, err := Load(m, Options{Threads: 2, Backend: backend, Context: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	if backend == "vulkan" {
		if l.Backend().Name != "vulkan" {
			if os.Getenv("REQUIRE_VULKAN") == "1" {
				t.Fatalf("REQUIRE_VULKAN=1: %s", l.Backend().Note)
			}
			t.Skipf("no Vulkan: %s", l.Backend().Note)
		}
		t.Cleanup(func() {
			if n, first := vulkan.ValidationErrors(); n > 0 {
				t.Errorf("validation layer reported %d errors; first: %s", n, first)
			}
		})
	}
	return l
}

func newSession(t *testing.T, l *Loaded, ctx int) *Session {
	t.Helper()
	s, err := l.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func eval(t *testing.T, s *Session, ids ...int32) []float32 {
	t.Helper()
	l, err := s.Eval(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(l)
}

// Sessions of one loaded model share its weights but not their state: two
// sessions stepped in turn give exactly the logits each gives alone; a fork
// continues exactly as its parent would and leaves the parent alone;
// truncating rolls the cache back so the next pass equals a fresh prefill,
// bit for bit; CopyFrom takes another session's place.
func TestSessionsShareOneModel(t *testing.T) {
	m := stories(t)
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			l := loadOn(t, m, backend)
			a, b := m.Tokenizer.EncodeIDs("Once upon a time", true), m.Tokenizer.EncodeIDs("The cat sat", true)
			aloneA := eval(t, newSession(t, l, 0), a...)
			aloneB := eval(t, newSession(t, l, 0), b...)
			s1, s2 := newSession(t, l, 0), newSession(t, l, 64)
			if s2.Capacity() != 64 {
				t.Errorf("capacity %d, want 64", s2.Capacity())
			}
			if got := eval(t, s1, a...); !slices.Equal(got, aloneA) {
				t.Error("interleaved session 1 differs from running alone")
			}
			if got := eval(t, s2, b...); !slices.Equal(got, aloneB) {
				t.Error("interleaved session 2 differs from running alone")
			}

			// fork after the prompt: both continue with the same token alike
			f, err := s1.Fork()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !slices.Equal(f.Tokens(), s1.Tokens()) {
				t.Errorf("fork tokens %v, parent %v", f.Tokens(), s1.Tokens())
			}
			next := eval(t, s1, 300)
			if got := eval(t, f, 300); !slices.Equal(got, next) {
				t.Error("the fork's next logits differ from its parent's")
			}
			// the fork goes its own way; the parent is untouched
			eval(t, f, 301, 302)
			after := eval(t, s1, 303)

			// roll back the parent past its last two tokens and redo them
			// against a fresh prefill of the same tokens
			s1.Truncate(len(a))
			if s1.Pos() != len(a) {
				t.Fatalf("after truncate pos %d, want %d", s1.Pos(), len(a))
			}
			eval(t, s1, 300)
			redo := eval(t, s1, 303)
			fresh := newSession(t, l, 0)
			eval(t, fresh, a...)
			eval(t, fresh, 300)
			if want := eval(t, fresh, 303); !slices.Equal(redo, want) || !slices.Equal(redo, after) {
				t.Error("logits after a rollback differ from a fresh prefill")
			}

			// CopyFrom: s2 takes s1's place
			if err := s2.CopyFrom(s1); err != nil {
				t.Fatal(err)
			}
			if got, want := eval(t, s2, 42), eval(t, s1, 42); !slices.Equal(got, want) || !slices.Equal(s2.Tokens(), s1.Tokens()) {
				t.Error("CopyFrom: the copy continues differently")
			}
			if _, err := l.NewSession(100000); err == nil {
				t.Error("a session larger than the loaded context: want error")
			}
		})
	}
}

// Sessions on one loaded model may run on many goroutines at once (the
// server's tabs): each still gets exactly its own logits.
func TestSessionsConcurrent(t *testing.T) {
	m := stories(t)
	l := loadOn(t, m, "cpu")
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	want := greedyText(t, m, prompt, 24)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := l.NewSession(0)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer s.Close()
			var got []int32
			if err := s.Greedy(context.Background(), prompt, 24, func(id int32) error { got = append(got, id); return nil }); err != nil {
				errs <- err.Error()
				return
			}
			if !slices.Equal(got, want) {
				errs <- "a concurrent session's greedy text differs from a lone session's"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// Both backends answer a pass past the context and a pass on a closed
// model with the engine's own errors.
func TestBackendErrors(t *testing.T) {
	m := stories(t)
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			l := loadOn(t, m, backend)
			s := newSession(t, l, 8)
			ids := make([]int32, 9)
			for i := range ids {
				ids[i] = int32(i + 1)
			}
			if _, err := s.Eval(context.Background(), ids); !errors.Is(err, ErrContextFull) {
				t.Errorf("a pass past the context: %v, want ErrContextFull", err)
			}
			s2 := newSession(t, l, 0)
			l.Close()
			if _, err := s2.Eval(context.Background(), ids[:2]); !errors.Is(err, ErrClosed) {
				t.Errorf("a pass on a closed model: %v, want ErrClosed", err)
			}
		})
	}
}

// Every family loads on Vulkan (no fallback to the CPU).
func TestFamiliesLoadOnVulkan(t *testing.T) {
	for _, o := range []model.SynthOptions{
		{Arch: "qwen3", Embd: 32, Layers: 1, Heads: 2, HeadDim: 16, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32},
		{Arch: "gemma3", Embd: 32, Layers: 2, Heads: 2, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32, Tied: true, Window: 4, FinalSoftcap: 30},
		{Arch: "phi3", Embd: 32, Layers: 1, Heads: 2, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32, RopeFactors: true},
	} {
		t.Run(o.Arch, func(t *testing.T) {
			m, err := model.Random(o)
			if err != nil {
				t.Fatal(err)
			}
			loadOn(t, m, "vulkan") // fails under REQUIRE_VULKAN=1 if it fell back
		})
	}
}
