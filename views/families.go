package views

// FamiliesPage is two models side by side on one prompt: the same text
// through both tokenizers, each model's next-token distribution, and how
// each pass differs from llama's.
type FamiliesPage struct {
	Models        []string
	A, B, Prompt  string
	Error         string
	Sides         []FamilySide
	SameTokenizer bool // both cut the prompt into the same pieces
}

// FamilySide is one model's column.
type FamilySide struct {
	Model, Label string
	Tokens       []FamilyToken
	Top          []Bar // the next token's most likely candidates (probabilities at temperature 1)
	Features     []FamilyFeature
	Backend      string
}

// FamilyToken is one token of the prompt.
type FamilyToken struct {
	ID    int32
	Piece string
	Added bool // BOS, added by the tokenizer
}

// FamilyFeature is one way the model differs from llama; Only marks those
// the other model does not have.
type FamilyFeature struct {
	MapFeature
	Only bool
}
