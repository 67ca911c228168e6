package serve

import "stepthrough/engine"

func batchItem(q *seq, toks []int32) engine.BatchItem {
	return engine.BatchItem{Session: q.sess, Tokens: toks}
}
