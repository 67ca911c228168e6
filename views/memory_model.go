package views

// MemoryPage is the memory and cost calculator.
type MemoryPage struct {
	Sources, Types                           []string
	Source, Type, KV, Context, Batch, Memory string
	Price, TPS                               string
	Measured                                 string // how the throughput was measured, when it was
	Error                                    string
	Shape                                    []Metric
	Figures                                  []MemoryFigure
}

// MemoryFigure is a computed quantity and its working.
type MemoryFigure struct {
	Name, Formula string
}
