package present

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"stepthrough/engine/memcalc"
	"stepthrough/engine/model"
	"stepthrough/hfhub"
	"stepthrough/views"
)

// The Models page: the models offered, where each came from and what it
// needs, and the small models this machine's memory suggests pulling.

// ModelsPage is the page around its rows: with a Hugging Face cache (hub;
// cache its folder) the machine's memory (mem bytes) and the suggested
// pulls; needKey when a pull asks for the API key first.
func ModelsPage(rows []views.ModelRow, hub bool, cache string, mem uint64, needKey bool) views.ModelsPage {
	p := views.ModelsPage{Rows: rows, CanPull: hub, NeedKey: needKey}
	if hub {
		p.Cache = cache
		p.Memory = hfhub.Size(int64(mem))
		p.Suggestions = suggestions(mem)
	}
	return p
}

// ModelFile is an offered model as the registry knows it.
type ModelFile struct {
	Name, Path string
	Embedded   bool
	Size       int64 // the file's bytes (when SizeKnown)
	SizeKnown  bool
	Summary    model.Summary // its header's (when Summarized)
	Summarized bool
}

// memoryRunTokens is the run the Models page's memory column sizes the KV
// cache for: a long conversation, where a model's full context (40,960
// tokens for Qwen3) would ask for gigabytes no run here holds.
const memoryRunTokens = 4096

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ModelRows describe every offered model from its header alone; cache is
// the Hugging Face cache's folder ("" without one), whose models the page
// may delete.
func ModelRows(files []ModelFile, cache string) []views.ModelRow {
	var rows []views.ModelRow
	for _, f := range files {
		r := views.ModelRow{Name: f.Name, Family: "?", Params: "?", Type: "?", Size: "?", Memory: "?"}
		switch {
		case f.Embedded:
			r.Source, r.Where = "embedded", "compiled into the binary (a lesson's model)"
		case cache != "" && strings.HasPrefix(f.Path, cache+string(filepath.Separator)):
			r.Source, r.Where, r.Deletable = "Hugging Face cache", f.Path, true
		case strings.Contains(f.Name, ":") || strings.Count(f.Name, "/") > 0:
			r.Source, r.Where = "Hugging Face cache", f.Path
		default:
			r.Source, r.Where = "models folder", f.Path
		}
		var size int64
		if f.SizeKnown {
			size = f.Size
			r.Size = hfhub.Size(size)
		}
		if f.Summarized {
			sm := f.Summary
			r.Family, r.Params, r.Type = cmp.Or(sm.Arch, "?"), model.HumanCount(sm.Params), sm.Type
			modelMemory(&r, f.Name, sm, size)
		}
		rows = append(rows, r)
	}
	return rows
}

// modelMemory fills r's memory column: the weights (size bytes) and the
// KV cache of a memoryRunTokens run (and at the full context), when the
// header sizes the cache.
func modelMemory(r *views.ModelRow, name string, sm model.Summary, size int64) {
	if sm.Context <= 0 || sm.Layers <= 0 || sm.KVHeads <= 0 || sm.HeadDim <= 0 || size <= 0 {
		return
	}
	sh := memcalc.Shape{Name: name, Layers: sm.Layers, Heads: sm.KVHeads, KVHeads: sm.KVHeads, HeadDim: sm.HeadDim}
	kvAt := func(tokens int) int64 {
		return int64(memcalc.Find(memcalc.Calculate(sh, memcalc.Inputs{KVBytes: 4, Context: tokens, Batch: 1}), "KV cache per user").Value)
	}
	run := min(sm.Context, memoryRunTokens)
	r.Memory = hfhub.Size(size + kvAt(run))
	r.MemoryWorking = fmt.Sprintf("%s of weights + %s of KV cache for %s tokens", hfhub.Size(size), hfhub.Size(kvAt(run)), thousands(run))
	if sm.Context > run {
		r.MemoryWorking += fmt.Sprintf("; %s at its full context of %s tokens", hfhub.Size(size+kvAt(sm.Context)), thousands(sm.Context))
	}
}

// suggestion is a small model to suggest, with its files' published
// sizes (Q8_0 and Q4_K_M), which Choose judges as a pull would.
type suggestion struct {
	repo, title string
	files       []hfhub.File
}

var suggested = []suggestion{
	{"bartowski/SmolLM2-135M-Instruct-GGUF", "SmolLM2 135M Instruct (Hugging Face)", []hfhub.File{{Name: "SmolLM2-135M-Instruct-Q8_0.gguf", Size: 145e6}, {Name: "SmolLM2-135M-Instruct-Q4_K_M.gguf", Size: 105e6}}},
	{"unsloth/gemma-3-270m-it-GGUF", "Gemma 3 270M instruct (Google)", []hfhub.File{{Name: "gemma-3-270m-it-Q8_0.gguf", Size: 292e6}, {Name: "gemma-3-270m-it-Q4_K_M.gguf", Size: 253e6}}},
	{"unsloth/Qwen3-0.6B-GGUF", "Qwen3 0.6B (Alibaba)", []hfhub.File{{Name: "Qwen3-0.6B-Q8_0.gguf", Size: 639e6}, {Name: "Qwen3-0.6B-Q4_K_M.gguf", Size: 397e6}}},
	{"bartowski/Llama-3.2-1B-Instruct-GGUF", "Llama 3.2 1B Instruct (Meta)", []hfhub.File{{Name: "Llama-3.2-1B-Instruct-Q8_0.gguf", Size: 1.32e9}, {Name: "Llama-3.2-1B-Instruct-Q4_K_M.gguf", Size: 808e6}}},
}

// suggestions are the suggested models with the quantization pull would
// take in mem bytes of memory; one that fits in none is left out.
func suggestions(mem uint64) []views.ModelSuggestion {
	var out []views.ModelSuggestion
	for _, sg := range suggested {
		ch, err := hfhub.Choose(sg.files, "", mem)
		if err != nil {
			continue
		}
		tag := strings.ToUpper(hfhub.Tag(ch.File.Name))
		out = append(out, views.ModelSuggestion{Ref: sg.repo + ":" + tag, Title: sg.title, Why: fmt.Sprintf("%s, %s", hfhub.Size(ch.File.Size), ch.Why)})
	}
	return out
}

// PullState is a pull from the Hugging Face Hub as it stands.
type PullState struct {
	Ref         string
	Done, Total int64 // bytes there and to come
	Fetched     int64 // of Done, those this pull fetched
	Elapsed     time.Duration
	Ended       bool
	Result      *hfhub.Result // once ended well
	Err         error         // once ended badly
}

// PullStatus is the pull as the page shows it: its progress while it
// runs, then how it ended; Announce is what a screen reader says.
func PullStatus(p PullState) views.PullStatus {
	s := views.PullStatus{Ref: p.Ref, State: "running", Done: p.Done, Total: p.Total}
	if !p.Ended {
		s.Text = progressWords(p.Fetched, s.Done, s.Total, p.Elapsed)
		if s.Total == 0 {
			s.Text = "Listing the repository's files and checking the file's header…"
		}
		s.Announce = "Pulling " + p.Ref + "."
		return s
	}
	switch {
	case errors.Is(p.Err, context.Canceled):
		s.State, s.Text = "cancelled", fmt.Sprintf("Cancelled after %s of %s; the bytes fetched are kept, and the next pull continues from them.", hfhub.Size(s.Done), hfhub.Size(s.Total))
	case p.Err != nil:
		s.State, s.Text = "failed", p.Err.Error()
	default:
		r := p.Result
		s.State, s.Name, s.Done, s.Total = "done", r.Name, r.Size, r.Size
		s.Text = fmt.Sprintf("%s (%s, %s) is in the cache, offered as %s.", r.File, hfhub.Size(r.Size), r.Why, r.Name)
		if r.Fetched == 0 && r.Resumed == 0 {
			s.Text = fmt.Sprintf("%s (%s, %s) was in the cache already, offered as %s.", r.File, hfhub.Size(r.Size), r.Why, r.Name)
		}
	}
	s.Announce = "Pull of " + p.Ref + " " + s.State + ". " + s.Text
	return s
}

// progressWords is a pull's progress in words: "1.5 GiB of 4.0 GiB
// (38%), 21.3 MiB/s, about 2m0s left"; the rate counts this pull's bytes.
func progressWords(fetched, done, total int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s of %s (%.0f%%)", hfhub.Size(done), hfhub.Size(total), 100*float64(done)/float64(max(total, 1)))
	if elapsed < time.Second/2 || fetched <= 0 {
		return s
	}
	rate := float64(fetched) / elapsed.Seconds()
	left := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%s, %s/s, about %s left", s, hfhub.Size(int64(rate)), left)
}
