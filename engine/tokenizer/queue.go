package tokenizer

// mergeQueue is the binary heap both merge loops pop from (SentencePiece's
// best score first, BPE's lowest rank first): container/heap's algorithm,
// typed, so a push boxes nothing.
type mergeQueue[T any] struct {
	items []T
	less  func(a, b *T) bool
}

func (q *mergeQueue[T]) len() int { return len(q.items) }

func (q *mergeQueue[T]) push(x T) {
	q.items = append(q.items, x)
	for j := len(q.items) - 1; j > 0; {
		i := (j - 1) / 2
		if !q.less(&q.items[j], &q.items[i]) {
			break
		}
		q.items[i], q.items[j] = q.items[j], q.items[i]
		j = i
	}
}

func (q *mergeQueue[T]) pop() T {
	n := len(q.items) - 1
	q.items[0], q.items[n] = q.items[n], q.items[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && q.less(&q.items[j2], &q.items[j]) {
			j = j2
		}
		if !q.less(&q.items[j], &q.items[i]) {
			break
		}
		q.items[i], q.items[j] = q.items[j], q.items[i]
		i = j
	}
	x := q.items[n]
	q.items = q.items[:n]
	return x
}
