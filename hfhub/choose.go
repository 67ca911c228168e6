package hfhub

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"stepthrough/engine/quant"
)

// File is a file of a repository or of its snapshot in the cache.
type File struct {
	Name string // its path in the repository
	Size int64  // bytes; 0 when unknown
}

// DefaultQuant is the tag taken when the repository has it and none is
// asked for: 8 bits keep a small model's answers close to its full
// precision.
const DefaultQuant = "Q8_0"

// KVRoom is the memory Choose leaves beside a file's weights for the KV
// cache and activations: serve's API cache defaults to 512 MiB, and as
// much again is left for the Explorer's sessions.
const KVRoom = 1 << 30

var (
	// tagPattern finds the quantization tag at the end of a GGUF file's
	// name (its extension and split suffix removed), after '-', '_' or '.'.
	tagPattern = regexp.MustCompile(`(?i)(?:^|[-_.])((?:UD-)?(?:I?Q[0-9]+(?:_[0-9A-Z]+)*|BF16|F16|F32|FP16|FP32|MXFP4(?:_MOE)?|TQ[0-9]_[0-9]))$`)
	// splitPattern is llama.cpp's gguf-split naming of one part.
	splitPattern = regexp.MustCompile(`(?i)-([0-9]{5})-of-([0-9]{5})\.gguf$`)
)

// IsGGUF reports whether a repository's file is a GGUF model Choose may
// take: a .gguf that is neither a multimodal projector (mmproj) nor one
// part of a split file.
func IsGGUF(name string) bool {
	base := path.Base(name)
	return strings.EqualFold(path.Ext(base), ".gguf") && !strings.HasPrefix(strings.ToLower(base), "mmproj") && !IsSplit(name)
}

// IsSplit reports whether name is one part of a split GGUF
// (NAME-00001-of-00003.gguf), which the engine does not load.
func IsSplit(name string) bool { return splitPattern.MatchString(name) }

// Tag is the quantization tag a GGUF file's name ends with, as written
// ("Q4_K_M" of "Qwen3-0.6B-Q4_K_M.gguf", "UD-Q4_K_XL", "f16"); "" when its
// name has none.
func Tag(name string) string {
	base := path.Base(name)
	base = splitPattern.ReplaceAllString(base, ".gguf")
	if strings.EqualFold(path.Ext(base), ".gguf") {
		base = base[:len(base)-len(".gguf")]
	}
	m := tagPattern.FindStringSubmatch(base)
	if m == nil {
		return ""
	}
	return m[1]
}

// tagIs reports whether a file's tag is the one asked for, ignoring case
// and unsloth's "UD-" prefix ("Q4_K_XL" finds "UD-Q4_K_XL").
func tagIs(tag, asked string) bool {
	return tag != "" && (strings.EqualFold(tag, asked) || strings.EqualFold(trimUD(tag), trimUD(asked)))
}

func trimUD(tag string) string {
	if len(tag) > 3 && strings.EqualFold(tag[:3], "UD-") {
		return tag[3:]
	}
	return tag
}

// Runs reports whether a tag names weights of a type the engine runs:
// a type of package quant (Q8_0, F16, BF16, …) or a llama.cpp mix of one
// (Q4_K_M, Q5_K_S, UD-Q4_K_XL: mostly Q4_K). Choose's default takes only
// these; the header check before a download is what decides.
func Runs(tag string) bool {
	t := strings.ToUpper(trimUD(tag))
	t = strings.NewReplacer("FP16", "F16", "FP32", "F32").Replace(t)
	if _, err := quant.ParseType(t); err == nil {
		return true
	}
	for _, mix := range []string{"_S", "_M", "_L", "_XL"} {
		if base, ok := strings.CutSuffix(t, mix); ok && strings.Contains(base, "_K") {
			_, err := quant.ParseType(base)
			return err == nil
		}
	}
	return false
}

// Choice is the file Choose took and why.
type Choice struct {
	File File
	Why  string
}

// ErrNoMatch is Choose finding no file for what was asked; its message
// lists what the repository has.
var ErrNoMatch = errors.New("no matching file")

// Choose picks the GGUF file to pull from a repository's files. With a
// tag, the one file whose name ends with that tag (case-insensitively);
// without, Q8_0 when the repository has it and it fits, else the smallest
// file of a type the engine runs that fits. A file fits when its size and
// KVRoom fit in ram, the machine's memory in bytes (0: unknown, nothing
// is ruled out). Split files are never taken; a refusal lists the
// quantizations there are.
func Choose(files []File, tag string, ram uint64) (Choice, error) {
	var whole []File
	for _, f := range files {
		if IsGGUF(f.Name) {
			whole = append(whole, f)
		}
	}
	slices.SortFunc(whole, func(a, b File) int { return cmp.Or(cmp.Compare(a.Size, b.Size), strings.Compare(a.Name, b.Name)) })
	if tag != "" {
		return chooseTag(files, whole, tag)
	}
	if len(whole) == 0 {
		return Choice{}, fmt.Errorf("%w: no single-file GGUF model here (%s)", ErrNoMatch, available(files))
	}
	fits := func(f File) bool { return ram == 0 || uint64(f.Size)+KVRoom <= ram }
	note := ""
	for _, f := range whole {
		if tagIs(Tag(f.Name), DefaultQuant) {
			if fits(f) {
				return Choice{f, DefaultQuant + ", the default"}, nil
			}
			note = fmt.Sprintf("; %s, %s, does not fit in %s of memory with %s for the KV cache", DefaultQuant, Size(f.Size), Size(int64(ram)), Size(KVRoom))
			break
		}
	}
	runs := slices.DeleteFunc(slices.Clone(whole), func(f File) bool { return !Runs(Tag(f.Name)) })
	if len(runs) == 0 {
		return Choice{}, fmt.Errorf("%w: none of the quantizations here is of a type the engine runs (%s; the engine runs %s and their K-quant mixes): name one with :QUANT or --file to have its header checked", ErrNoMatch, available(files), typeNames())
	}
	if !fits(runs[0]) {
		return Choice{}, fmt.Errorf("%w: the smallest quantization the engine runs, %s (%s), does not fit in %s of memory with %s for the KV cache (%s)", ErrNoMatch, label(runs[0].Name), Size(runs[0].Size), Size(int64(ram)), Size(KVRoom), available(files))
	}
	return Choice{runs[0], "the smallest file of a type the engine runs" + cmp.Or(note, "; no "+DefaultQuant+" here")}, nil
}

// chooseTag is Choose for an asked tag.
func chooseTag(files, whole []File, tag string) (Choice, error) {
	var match []string
	var pick File
	for _, f := range whole {
		if tagIs(Tag(f.Name), tag) {
			match, pick = append(match, f.Name), f
		}
	}
	switch {
	case len(match) == 1:
		return Choice{pick, "tagged " + Tag(pick.Name) + " as asked"}, nil
	case len(match) > 1:
		return Choice{}, fmt.Errorf("%w: %d files are tagged %s (%s): name one with --file", ErrNoMatch, len(match), tag, strings.Join(match, ", "))
	}
	for _, f := range files {
		if IsSplit(f.Name) && tagIs(Tag(f.Name), tag) {
			m := splitPattern.FindStringSubmatch(f.Name)
			return Choice{}, fmt.Errorf("%w: the %s file is split in %s parts (%s): stepthrough loads single-file GGUF models; choose another (%s)", ErrNoMatch, tag, strings.TrimLeft(m[2], "0"), f.Name, available(files))
		}
	}
	return Choice{}, fmt.Errorf("%w: no %s file here (%s)", ErrNoMatch, tag, available(files))
}

// available lists a repository's GGUF quantizations by size: each tag
// (or file name) with its size, split ones said so.
func available(files []File) string {
	var list []string
	split := map[string]bool{}
	for _, f := range files {
		switch {
		case IsGGUF(f.Name):
			list = append(list, fmt.Sprintf("%s (%s)", label(f.Name), Size(f.Size)))
		case IsSplit(f.Name) && !split[label(f.Name)]:
			split[label(f.Name)] = true
			list = append(list, label(f.Name)+" (split)")
		}
	}
	if len(list) == 0 {
		return "it has no GGUF file"
	}
	slices.Sort(list)
	return "it has " + strings.Join(list, ", ")
}

// label is a file's tag, or its name when it has none.
func label(name string) string { return cmp.Or(Tag(name), path.Base(name)) }

// typeNames lists the tensor types the engine runs, as quant names them.
func typeNames() string {
	var names []string
	for t := range quant.Type(64) {
		if t.Known() {
			names = append(names, t.String())
		}
	}
	return strings.Join(names, ", ")
}

// Size writes a byte count in binary units ("1.5 GiB").
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}
