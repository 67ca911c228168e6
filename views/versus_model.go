package views

// Versus is the current stage beside its value under another weight
// type: the same tokens through the model converted to it (spec.View.Vs),
// each vector of the stage under both types and their difference, the
// next-token probabilities under both from the logits on, and how far the
// residual stream has drifted after each layer so far.
type Versus struct {
	Type  string // the type compared with (Q4_0)
	Own   string // the run's model's type ("F32", or its file's type)
	Model string // the model that computed the other values (lesson.gguf@Q4_0)
	What  string // what is compared here, in words
	Rows  []VersusRow
	// the next-token distributions at temperature 1 (from the logits on)
	Tops          []VersusTop
	HaveDist      bool
	OwnTop, VsTop string  // the likeliest token under each
	KL            float64 // KL(own ‖ other), nats
	Drift         []VersusDrift
}

// VersusRow is one vector of the stage under both types and their
// difference (other − own), with how far apart they are: the relative
// error ‖other − own‖ / ‖own‖, the cosine similarity and the largest
// difference of one value.
type VersusRow struct {
	Label                  string // the vector, in words
	Own, Other, Diff       VecRow
	RelErr, Cosine, MaxAbs float64
}

// VersusTop is one token's next-token probability under both types.
type VersusTop struct {
	Piece      string
	Own, Other float64
}

// VersusDrift is the residual stream after one block of a layer, at the
// pass's last position, under the other type against the run's.
type VersusDrift struct {
	Layer          int    // from 1
	Block          string // "attention" or "MLP"
	RelErr, Cosine float64
	Level          int // DriftLevel(RelErr)
}

// The drift levels the model map marks, by relative error: below 1 %,
// below 10 %, and above.
const (
	DriftSmall = 1
	DriftSome  = 2
	DriftLarge = 3
)

// DriftLevel is the map's mark for a relative error.
func DriftLevel(rel float64) int {
	switch {
	case rel < 0.01:
		return DriftSmall
	case rel < 0.1:
		return DriftSome
	}
	return DriftLarge
}

// VersusPicker is the control that chooses the type to compare with.
type VersusPicker struct {
	Types  []string // the types offered
	Chosen string   // "" for none
}
