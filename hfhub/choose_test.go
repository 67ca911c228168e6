package hfhub

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTag(t *testing.T) {
	for _, tc := range []struct{ name, tag string }{
		{"Qwen3-0.6B-Q8_0.gguf", "Q8_0"},
		{"qwen2.5-0.5b-instruct-q4_k_m.gguf", "q4_k_m"},
		{"gemma-3-270m-it-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"},
		{"SmolLM2-135M-Instruct.Q8_0.gguf", "Q8_0"},
		{"Llama-3.2-1B-Instruct-f16.gguf", "f16"},
		{"model-BF16.gguf", "BF16"},
		{"model_IQ4_XS.gguf", "IQ4_XS"},
		{"sub/dir/model-Q5_K_S.GGUF", "Q5_K_S"},
		{"big-Q8_0-00001-of-00003.gguf", "Q8_0"},
		{"qwen2.5-0.5b-instruct-fp16.gguf", "fp16"},
		{"model.gguf", ""},
		{"Qwen3-8B.gguf", ""}, // "Qwen3" is no tag: no digit after its Q
		{"README.md", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tag(tc.name); got != tc.tag {
				t.Errorf("Tag(%q) = %q, want %q", tc.name, got, tc.tag)
			}
		})
	}
}

// Runs names the tags whose weights the engine's types hold; Choose's
// default takes no other.
func TestRuns(t *testing.T) {
	for tag, want := range map[string]bool{
		"Q8_0": true, "q4_k_m": true, "Q5_K_S": true, "UD-Q4_K_XL": true, "F16": true, "bf16": true, "fp16": true, "Q6_K": true, "Q4_0": true,
		"Q3_K_M": false, "Q2_K": false, "IQ4_XS": false, "MXFP4": false, "TQ1_0": false, "": false, "Q8_0_L": false,
	} {
		if got := Runs(tag); got != want {
			t.Errorf("Runs(%q) = %v, want %v", tag, got, want)
		}
	}
}

func TestChoose(t *testing.T) {
	const gib = 1 << 30
	repo := []File{
		{"m-Q2_K.gguf", 1 * gib}, {"m-Q4_K_M.gguf", 2 * gib}, {"m-Q8_0.gguf", 4 * gib}, {"m-F16.gguf", 8 * gib},
		{"mmproj-m-F16.gguf", gib / 2}, {"README.md", 100}, {"m-BF16-00001-of-00002.gguf", 5 * gib}, {"m-BF16-00002-of-00002.gguf", 3 * gib},
	}
	noQ8 := []File{{"m-Q2_K.gguf", 1 * gib}, {"m-Q4_K_M.gguf", 2 * gib}, {"m-Q6_K.gguf", 3 * gib}}
	for _, tc := range []struct {
		name    string
		files   []File
		tag     string
		ram     uint64
		want    Choice
		wantErr string
	}{
		{"default Q8_0", repo, "", 16 * gib, Choice{File{"m-Q8_0.gguf", 4 * gib}, "Q8_0, the default"}, ""},
		{"memory unknown", repo, "", 0, Choice{File{"m-Q8_0.gguf", 4 * gib}, "Q8_0, the default"}, ""},
		{"Q8_0 too big", repo, "", 4 * gib, Choice{File{"m-Q4_K_M.gguf", 2 * gib}, "the smallest file of a type the engine runs; Q8_0, 4.0 GiB, does not fit in 4.0 GiB of memory with 1.0 GiB for the KV cache"}, ""},
		{"no Q8_0: the smallest it runs", noQ8, "", 16 * gib, Choice{File{"m-Q4_K_M.gguf", 2 * gib}, "the smallest file of a type the engine runs; no Q8_0 here"}, ""},
		{"nothing fits", noQ8, "", 2 * gib, Choice{}, "the smallest quantization the engine runs, Q4_K_M (2.0 GiB), does not fit in 2.0 GiB of memory"},
		{"nothing it runs", []File{{"m-Q2_K.gguf", gib}, {"m-IQ4_XS.gguf", gib}}, "", 0, Choice{}, "none of the quantizations here is of a type the engine runs (it has IQ4_XS (1.0 GiB), Q2_K (1.0 GiB); the engine runs F32, F16, Q4_0"},
		{"asked, any case", repo, "q4_k_m", 1, Choice{File{"m-Q4_K_M.gguf", 2 * gib}, "tagged Q4_K_M as asked"}, ""},
		{"asked without UD-", []File{{"m-UD-Q4_K_XL.gguf", gib}}, "Q4_K_XL", 0, Choice{File{"m-UD-Q4_K_XL.gguf", gib}, "tagged UD-Q4_K_XL as asked"}, ""},
		{"asked, missing", repo, "Q5_K_M", 0, Choice{}, "no Q5_K_M file here (it has BF16 (split), F16 (8.0 GiB), Q2_K (1.0 GiB), Q4_K_M (2.0 GiB), Q8_0 (4.0 GiB))"},
		{"asked, split", repo, "bf16", 0, Choice{}, "the bf16 file is split in 2 parts (m-BF16-00001-of-00002.gguf): stepthrough loads single-file GGUF models"},
		{"asked, two files", []File{{"a-Q8_0.gguf", 1}, {"b-Q8_0.gguf", 2}}, "Q8_0", 0, Choice{}, "2 files are tagged Q8_0 (a-Q8_0.gguf, b-Q8_0.gguf): name one with --file"},
		{"no GGUF", []File{{"model.safetensors", 9}}, "", 0, Choice{}, "no single-file GGUF model here (it has no GGUF file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Choose(tc.files, tc.tag, tc.ram)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want ErrNoMatch saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Choose (-want +got):\n%s", d)
			}
		})
	}
}

func TestMemTotal(t *testing.T) {
	for _, tc := range []struct {
		text    string
		want    uint64
		wantErr string
	}{
		{"MemTotal:       24573400 kB\nMemFree: 1 kB\n", 24573400 << 10, ""},
		{"MemFree: 1 kB\n", 0, "no MemTotal line"},
		{"MemTotal: lots\n", 0, "not a size in kB"},
		{"MemTotal: 99999999999999999999 kB\n", 0, "not a size in kB"},
	} {
		got, err := memTotal("meminfo", bufioScanner(tc.text))
		if got != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("memTotal(%q) = %d, %v; want %d, %q", tc.text, got, err, tc.want, tc.wantErr)
		}
	}
}
