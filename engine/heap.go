package engine

import "github.com/udpstp/udpstp/clock"

// heapNode is what an item of a deadlineHeap carries: its key and its
// place in the heap (-1 when it is not in one), so that a key can change
// or an item leave in O(log n) without a search.
type heapNode struct {
	key clock.Time
	pos int
	// tie orders items of equal keys by when they were pushed: Bursts of
	// many Test Connections fall due at the same instants (dataphase's
	// shared grid), and serving them in the same order each turn keeps
	// each one's lateness steady instead of varying with the heap's shape.
	tie uint64
}

// heapItem is an item of a deadlineHeap: a pointer that knows its node.
type heapItem interface{ node() *heapNode }

// deadlineHeap is an indexed binary min-heap on deadlines: an Engine
// Thread of the pool keeps one entry per Test Connection, keyed by when it
// next needs a turn, so a turn finds the due ones without looking at the
// others. Its slice grows only when items are added (a command), never in
// a turn's steady state.
type deadlineHeap[T heapItem] struct {
	s      []T
	pushes uint64
}

func (h *deadlineHeap[T]) len() int { return len(h.s) }

// min returns the item with the earliest key; ok is false when the heap is
// empty.
func (h *deadlineHeap[T]) min() (x T, ok bool) {
	if len(h.s) == 0 {
		return x, false
	}
	return h.s[0], true
}

// minKey returns the earliest key, clock.Never when the heap is empty.
func (h *deadlineHeap[T]) minKey() clock.Time {
	if len(h.s) == 0 {
		return clock.Never
	}
	return h.s[0].node().key
}

// push adds x with key k; x must not be in a heap.
func (h *deadlineHeap[T]) push(x T, k clock.Time) {
	n := x.node()
	h.pushes++
	n.key, n.pos, n.tie = k, len(h.s), h.pushes
	h.s = append(h.s, x)
	h.up(n.pos)
}

// set changes x's key (x in the heap) and restores the order.
func (h *deadlineHeap[T]) set(x T, k clock.Time) {
	n := x.node()
	old := n.key
	n.key = k
	switch {
	case k < old:
		h.up(n.pos)
	case k > old:
		h.down(n.pos)
	}
}

// remove takes x out of the heap; it does nothing if x is not in it.
func (h *deadlineHeap[T]) remove(x T) {
	n := x.node()
	i := n.pos
	if i < 0 || i >= len(h.s) {
		return
	}
	last := len(h.s) - 1
	if i != last {
		h.swap(i, last)
	}
	var zero T
	h.s[last] = zero
	h.s = h.s[:last]
	n.pos = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h *deadlineHeap[T]) less(i, j int) bool {
	a, b := h.s[i].node(), h.s[j].node()
	return a.key < b.key || a.key == b.key && a.tie < b.tie
}

func (h *deadlineHeap[T]) swap(i, j int) {
	h.s[i], h.s[j] = h.s[j], h.s[i]
	h.s[i].node().pos = i
	h.s[j].node().pos = j
}

func (h *deadlineHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *deadlineHeap[T]) down(i int) {
	n := len(h.s)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// lastWithin returns the latest key that is at most limit, clock.Never if
// none is: the end of a group of deadlines that one turn can serve. It
// visits only the items within the limit and their children (a depth-first
// walk that skips every subtree whose root is past the limit), at most
// maxVisit of them, with a stack on its own stack frame.
func (h *deadlineHeap[T]) lastWithin(limit clock.Time, maxVisit int) clock.Time {
	best := clock.Never
	if len(h.s) == 0 || h.s[0].node().key > limit {
		return best
	}
	var stack [128]int32
	sp := 0
	stack[sp] = 0
	sp++
	for sp > 0 && maxVisit > 0 {
		sp--
		i := int(stack[sp])
		maxVisit--
		k := h.s[i].node().key
		if k > limit {
			continue
		}
		if best == clock.Never || k > best {
			best = k
		}
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h.s) && sp < len(stack) {
				stack[sp] = int32(c)
				sp++
			}
		}
	}
	return best
}
