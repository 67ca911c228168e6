package speculative

import (
	"fmt"
	"strconv"
	"strings"

	"stepthrough/engine/model"
)

// SelfPrefix starts the name of a self-speculative draft: "self:N" is the
// target's own first N layers (model.FirstLayers), sharing its weights.
const SelfPrefix = "self:"

// SelfLayers reads a draft name: for "self:N" it returns N and true; any
// other name is a model file (false). A malformed N is an error.
func SelfLayers(name string) (int, bool, error) {
	rest, ok := strings.CutPrefix(name, SelfPrefix)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, true, fmt.Errorf("draft %q: write self:N, N the number of the target's first layers the draft runs", name)
	}
	return n, true, nil
}

// LoadDraft opens the draft a name gives for target: its first N layers
// for "self:N", else the model file at that path, refused unless it shares
// the target's tokenizer. Close it when done (a self draft's Close does
// nothing).
func LoadDraft(target *model.Model, name string) (*model.Model, error) {
	n, self, err := SelfLayers(name)
	switch {
	case err != nil:
		return nil, err
	case self:
		return target.FirstLayers(n)
	}
	dm, err := model.Load(name)
	if err != nil {
		return nil, fmt.Errorf("draft: %w", err)
	}
	if err := SameVocabulary(target.Tokenizer, dm.Tokenizer); err != nil {
		dm.Close()
		return nil, fmt.Errorf("draft %s: %w", name, err)
	}
	return dm, nil
}
