package netlab

// delayLine holds the packets the relay has read and not yet written back,
// in preallocated slots, ordered by release time in a binary heap of slot
// numbers. Nothing in it allocates after newDelayLine. It is used by one
// goroutine.
type delayLine struct {
	slotSize int
	buf      []byte  // slots × slotSize
	lens     []int32 // bytes held in each slot
	free     []int32 // stack of free slots
	heap     []dlEntry
	ord      uint64 // insertion counter: equal release times leave in arrival order
}

// dlEntry is a packet waiting in the delay line.
type dlEntry struct {
	at     int64  // release time, ns
	ord    uint64 // tie-break
	seq    uint64 // matching packets: their arrival index, from 1; 0 for others
	slot   int32
	copies int32 // 1, or 2 for a duplicated packet
}

// newDelayLine preallocates slots of slotSize bytes.
func newDelayLine(slots, slotSize int) *delayLine {
	d := &delayLine{
		slotSize: slotSize,
		buf:      make([]byte, slots*slotSize),
		lens:     make([]int32, slots),
		free:     make([]int32, slots),
		heap:     make([]dlEntry, 0, slots),
	}
	for i := range d.free {
		d.free[i] = int32(slots - 1 - i)
	}
	return d
}

// slot returns the whole buffer of slot s.
func (d *delayLine) slot(s int32) []byte {
	o := int(s) * d.slotSize
	return d.buf[o : o+d.slotSize : o+d.slotSize]
}

// take reserves a free slot to read a packet into; ok is false when every
// slot is in use.
func (d *delayLine) take() (s int32, ok bool) {
	n := len(d.free)
	if n == 0 {
		return -1, false
	}
	s = d.free[n-1]
	d.free = d.free[:n-1]
	return s, true
}

// giveBack returns slot s, taken but not pushed (the packet was lost).
func (d *delayLine) giveBack(s int32) { d.free = append(d.free, s) }

// push queues the n bytes read into slot s for release at at.
func (d *delayLine) push(s int32, n int, at int64, seq uint64, copies int32) {
	d.lens[s] = int32(n)
	d.ord++
	d.heap = append(d.heap, dlEntry{at: at, ord: d.ord, seq: seq, slot: s, copies: copies})
	d.up(len(d.heap) - 1)
}

// len is the number of packets waiting.
func (d *delayLine) len() int { return len(d.heap) }

// next returns the earliest release time; ok is false when empty.
func (d *delayLine) next() (at int64, ok bool) {
	if len(d.heap) == 0 {
		return 0, false
	}
	return d.heap[0].at, true
}

// pop removes the earliest packet; its bytes stay valid until release.
func (d *delayLine) pop() (dlEntry, []byte) {
	e := d.heap[0]
	last := len(d.heap) - 1
	d.heap[0] = d.heap[last]
	d.heap = d.heap[:last]
	if last > 0 {
		d.down(0)
	}
	return e, d.slot(e.slot)[:d.lens[e.slot]]
}

// release frees the slot of a popped entry.
func (d *delayLine) release(e dlEntry) { d.free = append(d.free, e.slot) }

func (a dlEntry) before(b dlEntry) bool {
	return a.at < b.at || (a.at == b.at && a.ord < b.ord)
}

func (d *delayLine) up(i int) {
	h := d.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (d *delayLine) down(i int) {
	h := d.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
