package hfhub

import (
	"fmt"
	"strings"
)

// Ref is what "stepthrough pull" is given: a repository and, optionally,
// the quantization tag of the file to take from it.
type Ref struct {
	Repo  string // ORG/REPO
	Quant string // as written; "" takes the default (Choose)
}

// String writes the reference as ParseRef reads it.
func (r Ref) String() string {
	if r.Quant == "" {
		return r.Repo
	}
	return r.Repo + ":" + r.Quant
}

// ParseRef reads ORG/REPO[:QUANT], as llama.cpp's -hf and ollama's
// hf.co/ORG/REPO:QUANT write it (a leading hf.co/ or
// https://huggingface.co/ before ORG/REPO is dropped). The repository's name follows the Hub's rules (letters,
// digits, '-', '_' and '.', at most 96 of them on each side of the one
// '/', neither "--" nor ".." inside, no '-' or '.' at either end); the
// tag is letters, digits, '_', '-' and '.'. Every refusal names the
// argument.
func ParseRef(s string) (Ref, error) {
	rest := strings.TrimPrefix(s, "https://")
	for _, host := range []string{"hf.co/", "huggingface.co/"} {
		if after, ok := strings.CutPrefix(rest, host); ok && strings.Contains(after, "/") { // hf.co/x alone is an owner's repository
			rest = after
			break
		}
	}
	repo, quant, hasQuant := strings.Cut(rest, ":")
	if err := checkRepo(repo); err != nil {
		return Ref{}, fmt.Errorf("%.120q: %w", s, err)
	}
	if hasQuant {
		if err := checkTag(quant); err != nil {
			return Ref{}, fmt.Errorf("%.120q: %w", s, err)
		}
	}
	return Ref{Repo: repo, Quant: quant}, nil
}

// checkRepo applies the Hub's rules for a repository id with an owner.
func checkRepo(repo string) error {
	org, name, ok := strings.Cut(repo, "/")
	if !ok || strings.Contains(name, "/") {
		return fmt.Errorf("a repository is written ORG/REPO (one '/')")
	}
	for _, part := range []string{org, name} {
		switch {
		case part == "" || len(part) > 96:
			return fmt.Errorf("each side of ORG/REPO is 1 to 96 characters")
		case strings.Contains(part, "--") || strings.Contains(part, ".."):
			return fmt.Errorf("%q: a repository name has no \"--\" or \"..\"", part)
		case strings.IndexFunc(part, func(r rune) bool { return !nameRune(r) }) >= 0:
			return fmt.Errorf("%q: a repository name is letters, digits, '-', '_' and '.'", part)
		case strings.ContainsRune("-.", rune(part[0])) || strings.ContainsRune("-.", rune(part[len(part)-1])):
			return fmt.Errorf("%q: a repository name neither starts nor ends with '-' or '.'", part)
		}
	}
	if strings.HasSuffix(name, ".git") {
		return fmt.Errorf("%q: name the repository without .git", name)
	}
	return nil
}

// checkTag accepts a quantization tag as file names write it (Q4_K_M,
// UD-Q4_K_XL, bf16).
func checkTag(tag string) error {
	if tag == "" || len(tag) > 64 {
		return fmt.Errorf("a quantization tag (after ':') is 1 to 64 characters")
	}
	if strings.IndexFunc(tag, func(r rune) bool { return !nameRune(r) }) >= 0 {
		return fmt.Errorf("quantization tag %q: letters, digits, '_', '-' and '.' only", tag)
	}
	return nil
}

func nameRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.'
}
