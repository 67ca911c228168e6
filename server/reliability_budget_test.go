package server

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// The reliability suite, third pass: work bounded by time and memory,
// not only by passes, and a fair share of the work slots per address,
// each against a real server on loopback (newAbuseServer). Figures go to
// the test log.

// cpuTime is the CPU the process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("no getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapMiB is the heap in use after a collection.
func heapMiB() float64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// synthDir writes a random-weight model of the given shape as NAME.gguf
// in a new directory, for a server's ModelsDirs.
func synthDir(t *testing.T, name string, o model.SynthOptions) string {
	t.Helper()
	w, err := model.Synthesize(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := w.WriteFile(filepath.Join(dir, name+".gguf")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// explore runs an Explorer message on session sid from an address and
// returns the fragment it answers with.
func (a abuseServer) explore(t *testing.T, sid, from string, msg map[string]string) string {
	t.Helper()
	c := a.ws(t, "/ws?sid="+sid, as(from))
	defer c.Close()
	b, _ := json.Marshal(msg)
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, reply, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("%s: no answer: %v", msg["action"], err)
	}
	return string(reply)
}

// Finding 5: the logit lens of a 1M-token vocabulary kept a row of the
// vocabulary per layer and step that the memory budget did not count
// (4.41 GB peak), and 1.34 GB stayed in the heap after the sessions
// expired. Now the lens is in the run's estimate: a run whose lens alone
// is over the budget is refused with the reason, one within it holds no
// more than it reserved, and the heap comes back when its session goes.
func TestReliabilityLensOnAHugeVocabulary(t *testing.T) {
	const vocab = 1 << 18 // 262,144 tokens, width 16, 4 layers: the lens is on (its product is 16.8M per position)
	dir := synthDir(t, "wide", model.SynthOptions{Arch: "llama", Embd: 16, Layers: 4, Heads: 2, FFN: 32, Vocab: vocab, Context: 512, Type: quant.F32, Tied: true, Seed: 1})
	a := newAbuseServer(t, Config{ModelsDirs: []string{dir}, MemoryBudget: 64 << 20})
	prompt := strings.Repeat("Lily saw a dog and a cat. ", 12)[:300]
	run := func(maxTokens string) (string, string) {
		se, err := a.s.sessions.New("198.51.100.21")
		if err != nil {
			t.Fatal(err)
		}
		return se.ID(), a.explore(t, se.ID(), "198.51.100.21", map[string]string{"action": "run", "model": "wide.gguf", "prompt": prompt, "max_tokens": maxTokens, "temperature": "0"})
	}
	// 32 new tokens: 33 steps × 4 layers × a 1 MiB row of the lens alone
	// is twice the budget
	if _, reply := run("32"); !strings.Contains(reply, "more than the 64 MiB all runs on this server may hold (--memory-budget)") {
		t.Fatalf("a run whose lens is over the memory budget: %.300s", errText(reply))
	}
	a.s.sessions.CloseAll()
	heap0, rss0, cpu0 := heapMiB(), rssMiB(t), cpuTime(t)
	sid, reply := run("8")
	if e := errText(reply); e != "" {
		t.Fatalf("a run within the budget: %s", e)
	}
	a.explore(t, sid, "198.51.100.21", map[string]string{"action": "end"})
	reserved := float64(a.s.sessions.Reserved()) / (1 << 20)
	held, peak := heapMiB()-heap0, rssMiB(t)
	if held > reserved {
		t.Errorf("the run holds %.0f MiB of heap but reserved %.0f MiB", held, reserved)
	}
	a.s.sessions.CloseAll()
	after := heapMiB()
	if after-heap0 > 16 {
		t.Errorf("the heap stays %.0f MiB above where it was before the run (%.0f → %.0f MiB)", after-heap0, heap0, after)
	}
	t.Logf("lens over %d tokens, 8 new: %v CPU; holds %.0f MiB of heap, reserved %.0f MiB; heap %.0f → %.0f MiB after the session; RSS %.0f → %.0f MiB (peak) → %.0f MiB",
		vocab, cpuTime(t)-cpu0, held, reserved, heap0, after, rss0, peak, rssMiB(t))
}

// errText is the error a fragment shows, or "".
func errText(fragment string) string {
	_, rest, ok := strings.Cut(fragment, `data-testid="error"`)
	if !ok {
		return ""
	}
	_, rest, _ = strings.Cut(rest, ">")
	msg, _, _ := strings.Cut(rest, "<")
	return strings.TrimSpace(msg)
}
