package model

import "reflect"

// PassWork estimates the multiply-adds of one forward pass of n tokens
// after pos0 cached ones: each layer's weight matrices once per token,
// attention's scores and weighted sums over the positions each token
// sees, and the output matrix for the logitRows rows whose logits are
// wanted. It is what a server budgets a request's CPU by: a core does a
// few billion a second (more on wide models, fewer on tiny ones).
func (m *Model) PassWork(n, pos0, logitRows int) int64 {
	c := m.Config
	N, P := int64(n), int64(pos0)
	seen := N*P + N*(N+1)/2 // Σ over the new tokens of the positions each attends to
	attention := int64(c.Layers) * 2 * int64(c.QDim()) * seen
	output := int64(logitRows) * int64(c.Vocab) * int64(c.Embd)
	return N*m.layerMatrices() + attention + output
}

// LensWork is what the logit lens adds to a pass that keeps rows rows of
// it: the output matrix applied after every layer to each row.
func (m *Model) LensWork(rows int) int64 {
	c := m.Config
	return int64(rows) * int64(c.Layers) * int64(c.Vocab) * int64(c.Embd)
}

// layerMatrices counts the elements of the layers' weight matrices: the
// multiply-adds one token costs in them.
func (m *Model) layerMatrices() int64 {
	var n int64
	for i := range m.Weights.Layers {
		v := reflect.ValueOf(&m.Weights.Layers[i]).Elem()
		for j := range v.NumField() {
			if t, ok := v.Field(j).Interface().(*Tensor); ok && t != nil && len(t.Dims) == 2 {
				n += int64(t.Cols()) * int64(t.Rows())
			}
		}
	}
	return n
}
