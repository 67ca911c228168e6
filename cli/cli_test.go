package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"stepthrough/engine/reftest"
	"stepthrough/engine/trace"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Run(context.Background(), Env{Stdout: &o, Stderr: &e}, args[0], args[1:])
	return o.String(), e.String(), code
}

func stories(t *testing.T) string { return reftest.Path(t, "models", "stories260K.gguf") }

func TestTokenize(t *testing.T) {
	m := stories(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--text", "Once upon a time"}, "1 403 407 261 378\n"},
		{[]string{"--text", "Once upon a time", "--no-bos"}, "403 407 261 378\n"},
		{[]string{"--text", "", "--no-bos"}, "\n"},
		{[]string{"--text", "<s>", "--no-bos"}, "410 504 419 505\n"}, // ▁ < s >: special-token text is not parsed
	}
	for _, tt := range tests {
		out, errOut, code := run(t, append([]string{"tokenize", "--model", m}, tt.args...)...)
		if code != 0 || out != tt.want {
			t.Errorf("tokenize %v = %q (exit %d, %q), want %q", tt.args, out, code, errOut, tt.want)
		}
	}
	out, _, _ := run(t, "tokenize", "--model", m, "--text", "世", "--pieces")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// BOS, the added ▁, then 世's three bytes as byte tokens with one-byte spans
	want := []string{"1\t\"\"\t0:0\t\"<s>\"\tadded", "410\t\" \"\t0:0\t\"▁\"",
		"231\t\"\\xe4\"\t0:1\t\"<0xE4>\"", "187\t\"\\xb8\"\t1:2\t\"<0xB8>\"", "153\t\"\\x96\"\t2:3\t\"<0x96>\""}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("--pieces:\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
}

func TestLogitsCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "l.f32")
	stdout, errOut, code := run(t, "logits", "--model", stories(t), "--prompt", "Once upon a time", "--out", out)
	if code != 0 || stdout != "1 403 407 261 378\n" {
		t.Fatalf("logits: %q %q exit %d", stdout, errOut, code)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(reftest.Path(t, "models", "stories260K", "once-upon.logits.f32"))
	if len(got) != len(want) {
		t.Fatalf("%d bytes, want %d", len(got), len(want))
	}
	for i := 0; i < len(got); i += 4 {
		a := math.Float32frombits(binary.LittleEndian.Uint32(got[i:]))
		b := math.Float32frombits(binary.LittleEndian.Uint32(want[i:]))
		if math.Abs(float64(a-b)) > 1e-4 {
			t.Fatalf("logit %d: %g, llama.cpp %g", i/4, a, b)
		}
	}
}

func TestGenerateCommand(t *testing.T) {
	m := stories(t)
	out, _, code := run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "5", "--ids", "--temperature", "0")
	if code != 0 || out != "432 383 286 261 376\n" {
		t.Errorf("generate --ids = %q exit %d", out, code)
	}
	out, _, code = run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "8", "--temperature", "0")
	if code != 0 || out != ", there was a little girl\n" {
		t.Errorf("generate = %q exit %d", out, code)
	}
}

func TestBenchAndInspectJSON(t *testing.T) {
	m := stories(t)
	out, errOut, code := run(t, "bench", "--model", m, "-p", "16", "-n", "4", "-r", "2", "-t", "2", "--json")
	if code != 0 {
		t.Fatalf("bench: %s", errOut)
	}
	var b BenchResult
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	if b.Model != "stories260K.gguf" || b.Backend != "cpu" || b.Threads != 2 || b.PPTokens != 16 || b.TGTokens != 4 || !(b.PPTPS > 0) || !(b.TGTPS > 0) {
		t.Errorf("bench result %+v", b)
	}
	out, errOut, code = run(t, "inspect", "--model", m, "--json")
	if code != 0 {
		t.Fatalf("inspect: %s", errOut)
	}
	var in Inspection
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatal(err)
	}
	if in.Architecture != "llama" || in.Config.Layers != 5 || len(in.Tensors) != 48 || in.Tokenizer.Tokens != 512 || in.KVBytesPerTok != 1280 || in.BytesByType["F32"] == 0 {
		t.Errorf("inspection %+v", in)
	}
}

// bench -d measures at a depth of context, as llama-bench's -d does: the
// table names it as llama-bench does, the JSON carries it, and a depth the
// model's context cannot hold or a batch beside it is refused by name.
func TestBenchDepth(t *testing.T) {
	m := stories(t)
	out, errOut, code := run(t, "bench", "--model", m, "-p", "8", "-n", "4", "-d", "100", "-r", "1", "-t", "2")
	if code != 0 || !strings.Contains(out, "pp8 @ d100") || !strings.Contains(out, "tg4 @ d100") {
		t.Errorf("bench -d 100: %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "bench", "--model", m, "-p", "0", "-n", "3", "-d", "20", "-r", "1", "--json")
	var b BenchResult
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Depth != 20 || b.TGTokens != 3 || !(b.TGTPS > 0) {
		t.Errorf("bench -d 20 --json: %d %+v %s", code, b, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-d", "5000"}, "needs 5128 positions; the model's context is"},
		{[]string{"-d", "-1"}, "-d >= 0"},
		{[]string{"-d", "8", "--batch", "1,2"}, "does not go with --batch"},
	} {
		_, errOut, code := run(t, append([]string{"bench", "--model", m}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("bench %v: exit %d, %q; want an error with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// bench --batch takes prompts longer than one pass (512 tokens): each is
// prefilled in passes, so generation can be measured after a long context.
func TestBenchBatchLongPrompt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.gguf")
	if _, e, code := run(t, "synth", "--arch", "llama", "--embd", "64", "--layers", "1", "--heads", "2", "--ffn", "64", "--vocab", "600", "--ctx", "1024", "--out", p); code != 0 {
		t.Fatalf("synth: %s", e)
	}
	out, errOut, code := run(t, "bench", "--model", p, "--batch", "1,2", "-p", "600", "-n", "2", "-r", "1", "-t", "2", "--json")
	var b BatchBenchResult
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || len(b.Rows) != 2 || !(b.Rows[1].TGTPS > 0) {
		t.Errorf("bench --batch 1,2 -p 600: %d %+v %s", code, b, errOut)
	}
}

func TestSynthThenRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.gguf")
	if _, e, code := run(t, "synth", "--arch", "gpt2", "--embd", "64", "--layers", "2", "--heads", "2", "--ffn", "128", "--vocab", "600", "--ctx", "64", "--type", "q8_0", "--out", p); code != 0 {
		t.Fatalf("synth: %s", e)
	}
	if out, e, code := run(t, "generate", "--model", p, "--prompt", "the cat", "-n", "3", "--ids"); code != 0 || len(strings.Fields(out)) != 3 {
		t.Errorf("generate on synth model: %q %q", out, e)
	}
}

// synth writes a real model's shape (here cut to two layers), and inspect
// names the family and how it differs from llama.
func TestSynthShapeThenInspect(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.gguf")
	if _, e, code := run(t, "synth", "--shape", "gemma3-270m", "--layers", "2", "--vocab", "1000", "--out", p); code != 0 {
		t.Fatalf("synth: %s", e)
	}
	out, e, code := run(t, "inspect", "--model", p)
	for _, want := range []string{"architecture:  gemma3", "head size 256", "family:        gemma3; differs from llama in:", "2 of 2 layers attend to only the last 512 positions", "embedding × √640"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect: no %q in\n%s%s", want, out, e)
		}
	}
	if out, e, code := run(t, "generate", "--model", p, "--prompt", "the cat", "-n", "2", "--ids"); code != 0 || len(strings.Fields(out)) != 2 {
		t.Errorf("generate on a gemma3 shape: %q %q", out, e)
	}
	if _, e, code := run(t, "synth", "--shape", "gemma9", "--out", p); code != 2 || !strings.Contains(e, "qwen3-0.6b") {
		t.Errorf("unknown shape: exit %d, %q", code, e)
	}
}

// Errors are one line on stderr with a non-zero exit status.
func TestErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"generate"}, 2, "--model is required"},
		{[]string{"generate", "--model", "x", "-n", "-1"}, 2, "-n must be at least 0"},
		{[]string{"tokenize", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"tokenize", "--model", "/nonexistent.gguf", "--text", "x"}, 1, "no such file"},
		{[]string{"inspect", "--model", bad}, 1, "gguf: at byte"},
		{[]string{"synth", "--out", "x", "--type", "q9"}, 2, "unknown tensor type"},
		{[]string{"nosuch"}, 2, "unknown command"},
		{[]string{"generate", "--model", "x", "--temperature", "-1"}, 2, "invalid temperature -1: must be 0 or in [0.001, 100]"},
		{[]string{"generate", "--model", "x", "--top-p", "1.5"}, 2, "invalid top-p 1.5: must be in [0, 1]"},
		{[]string{"generate", "--model", "x", "--min-p", "NaN"}, 2, "invalid min-p NaN"},
		{[]string{"generate", "--model", "x", "--seed", "abc"}, 2, "invalid seed abc"},
		{[]string{"generate", "--model", "x", "--sampler-order", "top-k,bogus"}, 2, "invalid sampler-order \"bogus\": an unknown step"},
		{[]string{"generate", "--model", "x", "--top-k", "x"}, 2, "invalid top-k x: not a whole number"},
	}
	for _, tt := range tests {
		_, errOut, code := run(t, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", tt.args, code, errOut, tt.code, tt.want)
		}
	}
}

// A fixed seed reproduces a run exactly; without one, a seed is reported
// and reusing it reproduces that run.
func TestGenerateSeeds(t *testing.T) {
	m := stories(t)
	args := []string{"generate", "--model", m, "--prompt", "Once upon a time", "-n", "20", "--ids"}
	a, errA, _ := run(t, append(args, "--seed", "42")...)
	b, errB, _ := run(t, append(args, "--seed", "42")...)
	if a != b || errA != "seed: 42\n" || errB != errA {
		t.Errorf("seed 42 twice: %q %q / %q %q", a, b, errA, errB)
	}
	c, errC, _ := run(t, args...)
	var seed string
	if _, err := fmt.Sscanf(errC, "seed: %s", &seed); err != nil {
		t.Fatalf("stderr %q has no seed line", errC)
	}
	d, _, _ := run(t, append(args, "--seed", seed)...)
	if c != d {
		t.Errorf("reported seed %s does not reproduce: %q vs %q", seed, c, d)
	}
	o1, _, _ := run(t, append(args, "--seed", "7", "--temperature", "1.5", "--top-k", "0", "--top-p", "0.9")...)
	o2, _, _ := run(t, append(args, "--seed", "7", "--temperature", "1.5", "--top-k", "0", "--top-p", "0.9", "--sampler-order", "transformers")...)
	if o1 == o2 {
		t.Errorf("sampler order made no difference at temperature 1.5: %q", o1)
	}
}

func TestGenerateTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	out, e, code := run(t, "generate", "--model", stories(t), "--prompt", "Once upon a time", "-n", "3", "--ids", "--seed", "1", "--trace", p)
	if code != 0 {
		t.Fatalf("generate --trace: %s", e)
	}
	f, _ := os.Open(p)
	defer f.Close()
	steps, err := trace.ReadJSONL(f)
	if err != nil || len(steps) != 3 {
		t.Fatalf("trace: %d steps, %v", len(steps), err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, strconv.Itoa(int(s.Sample.Chosen)))
	}
	if strings.Join(got, " ")+"\n" != out {
		t.Errorf("trace chose %v, generate printed %q", got, out)
	}
}

// TestMain lets tests run the CLI in a child process (to set the loader's
// environment before the process first loads Vulkan).
func TestMain(m *testing.M) {
	if os.Getenv("STEPTHROUGH_CLI_CHILD") == "1" {
		args := strings.Split(os.Getenv("STEPTHROUGH_CLI_ARGS"), "\x1f")
		os.Exit(Run(context.Background(), Env{Stdout: os.Stdout, Stderr: os.Stderr}, args[0], args[1:]))
	}
	os.Exit(m.Run())
}

func child(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "STEPTHROUGH_CLI_CHILD=1", "STEPTHROUGH_CLI_ARGS="+strings.Join(args, "\x1f"))...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// Without a Vulkan driver, or without a loader at all, --backend vulkan
// says so in one line and the CPU computes the same tokens.
func TestVulkanFallback(t *testing.T) {
	m := stories(t)
	args := []string{"generate", "--model", m, "--prompt", "Once upon a time", "-n", "6", "--ids", "--temperature", "0", "--backend", "vulkan"}
	want, _, _ := run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "6", "--ids", "--temperature", "0", "--backend", "cpu")
	for _, env := range [][]string{{"VK_ICD_FILENAMES=/nonexistent/icd.json", "VK_DRIVER_FILES=/nonexistent/icd.json"}, {"STEPTHROUGH_VULKAN_LIB=/nonexistent/libvulkan.so.1", "LD_LIBRARY_PATH=/nonexistent"}} {
		out, errOut, code := child(t, env, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 0 || out != want || len(lines) != 2 || !strings.HasPrefix(lines[0], "vulkan unavailable (") || !strings.HasSuffix(lines[0], "using the CPU") {
			t.Errorf("%v: exit %d, stdout %q (want %q), stderr %q", env, code, out, want, errOut)
		}
	}
	if _, e, code := run(t, "generate", "--model", m, "--backend", "gpu"); code != 2 || !strings.Contains(e, "invalid backend") {
		t.Errorf("--backend gpu: exit %d %q", code, e)
	}
}

func TestCompareCommand(t *testing.T) {
	m := stories(t)
	out, e, code := run(t, "compare", "--model", m, "--prompt", "Once upon a time", "-n", "6", "--lane", "greedy", "--lane", "temperature=1.5,top-k=0,top-p=1,min-p=0,seed=2", "--lane", "beam=3")
	if code != 0 || !strings.Contains(out, "diverge at step") || !strings.Contains(out, `"," (432)`) || !strings.Contains(out, "saved") || !strings.Contains(out, "lane 3 beam:") {
		t.Errorf("compare: exit %d %s\n%s", code, e, out)
	}
	out, _, code = run(t, "compare", "--model", m, "--prompt", "Once upon a time", "-n", "4", "--lane", "greedy", "--lane", "greedy", "--json")
	var res struct {
		Divergence int
		Lanes      []struct{ Tokens []int32 }
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Divergence != -1 || len(res.Lanes) != 2 || len(res.Lanes[0].Tokens) != 4 {
		t.Errorf("compare --json: %s", out)
	}
	if _, e, code := run(t, "compare", "--model", m, "--lane", "greedy"); code != 2 || !strings.Contains(e, "2 to 6") {
		t.Errorf("one lane: %d %s", code, e)
	}
	if _, e, code := run(t, "compare", "--model", m, "--lane", "greedy", "--lane", "beam=20"); code != 2 || !strings.Contains(e, "beam width") {
		t.Errorf("bad beam: %d %s", code, e)
	}
}

// bench --batch measures each batch size; wrong sizes are refused in one
// line (exit 2).
func TestBenchBatch(t *testing.T) {
	m := stories(t)
	out, errOut, code := run(t, "bench", "--model", m, "-p", "8", "-n", "4", "-r", "1", "-t", "2", "--batch", "1,3,8", "--json")
	if code != 0 {
		t.Fatalf("bench --batch: %s", errOut)
	}
	var b BatchBenchResult
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 3 || b.Rows[0].Batch != 1 || b.Rows[2].Batch != 8 || b.Rows[0].Gain != 1 || b.PPTokens != 8 || b.TGTokens != 4 {
		t.Fatalf("bench --batch result %+v", b)
	}
	for _, r := range b.Rows {
		if !(r.PPTPS > 0) || !(r.TGTPS > 0) || !(r.TPOTMs > 0) || !(r.Gain > 0) {
			t.Errorf("row %+v", r)
		}
	}
	for _, bad := range []string{"0", "1,x", "300", ""} {
		_, errOut, code := run(t, "bench", "--model", m, "--batch", bad, "-r", "1")
		if bad == "" {
			continue // an empty list is plain bench
		}
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
			t.Errorf("--batch %q: exit %d, %q", bad, code, errOut)
		}
	}
}

// loadgen runs the same load under each setting and reports its measured
// figures; impossible loads are refused in one line.
func TestLoadgen(t *testing.T) {
	m := stories(t)
	out, errOut, code := run(t, "loadgen", "--model", m, "--users", "6", "--prompt-tokens", "9", "--max-tokens", "12", "--min-tokens", "3",
		"--max-seqs", "4", "--policy", "continuous,static", "--chunked", "on,off", "--cache", "contiguous,paged", "--block-size", "4", "-t", "2", "--json")
	if code != 0 {
		t.Fatalf("loadgen: %s", errOut)
	}
	var r LoadgenResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 8 || r.Hardware == "" || r.Runs[2].Options.ChunkedPrefill || r.Runs[4].Options.Policy != "static" || !r.Runs[1].Options.Paged || r.KVBytesPerToken != 1280 {
		t.Fatalf("loadgen result %+v", r)
	}
	for _, run := range r.Runs {
		s := run.Summary
		if s.Requests != 6 || s.PromptTokens != 54 || s.Generated < 18 || s.Generated > 72 || !(s.TokensPerSecond > 0) || s.TTFT.P50 <= 0 || s.TTFT.P95 < s.TTFT.P50 || s.Steps == 0 || s.PeakKVHeld == 0 || s.PeakKVUsed > s.PeakKVHeld {
			t.Errorf("%s chunked=%v: %+v", run.Options.Policy, run.Options.ChunkedPrefill, s)
		}
	}
	for _, bad := range [][]string{{"--users", "0"}, {"--max-tokens", "0"}, {"--policy", "fastest"}, {"--chunked", "maybe"}, {"--min-tokens", "50"}, {"--cache", "virtual"}, {"--cache", "paged", "--block-size", "0"}} {
		_, errOut, code := run(t, append([]string{"loadgen", "--model", m}, bad...)...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
	out, _, code = run(t, "loadgen", "--model", m, "--users", "3", "--max-tokens", "4", "-t", "2")
	if code != 0 || !strings.Contains(out, "| continuous | on |") || !strings.Contains(out, "TTFT p50 / p95 ms") {
		t.Errorf("loadgen table:\n%s", out)
	}
}

// bench --suite measures every listed model at pp128, pp512, tg64 and a
// batch of 8, in one table.
func TestBenchSuite(t *testing.T) {
	m := stories(t)
	out, errOut, code := run(t, "bench", "--suite", m+","+m, "-r", "1", "-t", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --suite: %s", errOut)
	}
	var rows []SuiteRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Model != "stories260K.gguf" || !(r.PP128 > 0) || !(r.PP512 > 0) || !(r.TG64 > 0) || !(r.Batch8 > 0) || !(r.Batch8x > 0) || r.Hardware == "" {
			t.Errorf("row %+v", r)
		}
	}
	if _, errOut, code := run(t, "bench", "--suite", "missing.gguf", "-r", "1"); code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("a missing file: exit %d, %q", code, errOut)
	}
}

// train-lesson --family needs the main models' report beside it (the
// README shows both) and says so before it trains, not half an hour later.
func TestTrainFamilyNeedsTheMainReport(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := run(t, "train-lesson", "--family", "--out", dir)
	if code == 0 || !strings.Contains(errOut, "report.json") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, %q: want one line naming report.json", code, errOut)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("it wrote %d files before failing", len(entries))
	}
}

// train-lesson --readme-only only renders the README from the reports in
// --out, with --copying or --family too: it never starts a training run.
func TestTrainReadmeOnlyNeverTrains(t *testing.T) {
	for _, flag := range []string{"--copying", "--family"} {
		dir := t.TempDir()
		_, errOut, code := run(t, "train-lesson", flag, "--readme-only", "--out", dir)
		if code == 0 || !strings.Contains(errOut, "report.json") {
			t.Errorf("%s --readme-only in an empty directory: exit %d, %q: want an error naming report.json", flag, code, errOut)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s --readme-only wrote %d files", flag, len(entries))
		}
	}
}

// train-lesson --copying refuses a share of repeats out of range, or a
// tokenizer file that is not there, in one line and before it trains.
func TestTrainCopyingRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{{"--repeats", "-1"}, {"--repeats", "NaN"}, {"--repeats", "11"}, {"--tokenizer", "missing.gguf"}, {"--init", "missing.gguf"}} {
		dir := t.TempDir()
		_, errOut, code := run(t, append([]string{"train-lesson", "--copying", "--out", dir}, args...)...)
		if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, %q: want one line", args, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "lesson-v3.gguf")); err == nil {
			t.Errorf("%v: it trained a model", args)
		}
	}
}
