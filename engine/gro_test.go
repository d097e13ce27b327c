package engine

import (
	"encoding/binary"
	"testing"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// The arithmetic of a GRO message: n segments of seg bytes but a shorter
// last one; no segment size (or one not below the length) is one datagram.
func TestGROSegments(t *testing.T) {
	cases := []struct {
		l, seg int
		want   []int // the lengths
	}{
		{40300, 1000, append(repeat(40, 1000), 300)},
		{3000, 1000, repeat(3, 1000)},
		{1001, 1000, []int{1000, 1}},
		{1222, 0, []int{1222}},    // no UDP_GRO control message
		{1222, 1222, []int{1222}}, // a GSO message of one segment
		{800, 1000, []int{800}},   // the segment size above the length
		{0, 0, []int{0}},          // an empty datagram
		{0, 1000, []int{0}},
		{65507, 1, nil}, // 65,507 one-byte segments, checked by count
	}
	for _, c := range cases {
		n := groSegments(c.l, c.seg)
		if c.want == nil {
			if n != c.l {
				t.Errorf("l %d seg %d: %d segments, want %d", c.l, c.seg, n, c.l)
			}
			continue
		}
		if n != len(c.want) {
			t.Errorf("l %d seg %d: %d segments, want %d", c.l, c.seg, n, len(c.want))
			continue
		}
		next := 0
		for i := 0; i < n; i++ {
			off, sl := groSegment(c.l, c.seg, i)
			if off != next || sl != c.want[i] {
				t.Errorf("l %d seg %d: segment %d at %d, %d bytes; want at %d, %d bytes", c.l, c.seg, i, off, sl, next, c.want[i])
			}
			next += sl
		}
		if next != c.l {
			t.Errorf("l %d seg %d: segments cover %d bytes", c.l, c.seg, next)
		}
	}
}

// A read asks for as many messages as fit the room at 64 datagrams each,
// at least one, at most the scratch's.
func TestGROReadCount(t *testing.T) {
	for _, c := range []struct{ room, want int }{
		{1, 1}, {50, 1}, {63, 1}, {64, 1}, {127, 1}, {128, 2}, {255, 3}, {256, 4}, {1000, groScratchMsgs},
	} {
		if got := groReadCount(c.room); got != c.want {
			t.Errorf("room %d: %d messages, want %d", c.room, got, c.want)
		}
	}
	if groScratchMsgs*groFitSegs != dataphase.MaxRecv {
		t.Errorf("the scratch holds %d messages of %d: not a full batch", groScratchMsgs, groFitSegs)
	}
}

// groMessage builds a message of segments of the given lengths (all but
// the last equal), each starting with its sequence number from seq.
func groMessage(seq uint32, lens []int) []byte {
	var p []byte
	for i, l := range lens {
		s := make([]byte, l)
		if l >= 4 {
			binary.BigEndian.PutUint32(s, seq+uint32(i))
		}
		for j := 4; j < l; j++ {
			s[j] = byte(j)
		}
		p = append(p, s...)
	}
	return p
}

// checkSeg verifies datagram i of b: length l, sequence number seq, the
// pattern after it.
func checkSeg(t *testing.T, b *dataphase.RecvBatch, i int, seq uint32, l int) {
	t.Helper()
	d := b.Dgrams[i]
	if d.Len != l {
		t.Fatalf("datagram %d: length %d, want %d", i, d.Len, l)
	}
	p := b.Data(i)
	if got := binary.BigEndian.Uint32(p); got != seq {
		t.Fatalf("datagram %d: sequence %d, want %d", i, got, seq)
	}
	for j := 4; j < len(p); j++ {
		if p[j] != byte(j) {
			t.Fatalf("datagram %d: byte %d is %d", i, j, p[j])
		}
	}
}

// A message straddling the batch's end: what does not fit goes to the
// remainder, which the next batch starts with, in order, with the
// message's time and TOS; a message read after it queues behind.
func TestGROExpandAndRest(t *testing.T) {
	lens1 := append(repeat(40, 1000), 300)
	lens2 := repeat(30, 500)
	m1, m2 := groMessage(0, lens1), groMessage(41, lens2)
	d1 := dataphase.InDatagram{Time: clock.Time(111), TOS: 0xb8, HasTOS: true}
	d2 := dataphase.InDatagram{Time: clock.Time(222)}
	var b dataphase.RecvBatch
	var r groRest
	const limit = 25
	// One read returned both messages: 25 fit, the rest is kept.
	next := expandGRO(&b, limit, m1, len(m1), 1000, d1, 0)
	if next != limit || b.N != limit {
		t.Fatalf("expanded to %d, batch %d", next, b.N)
	}
	r.save(m1, len(m1), 1000, d1, next)
	if next := expandGRO(&b, limit, m2, len(m2), 500, d2, 0); next != 0 {
		t.Fatalf("a full batch took %d datagrams", next)
	}
	r.save(m2, len(m2), 500, d2, 0)
	all := append(append([]int(nil), lens1...), lens2...)
	times := func(seq int) dataphase.InDatagram {
		if seq < len(lens1) {
			return d1
		}
		return d2
	}
	seq := 0
	check := func() {
		for i := 0; i < b.N; i++ {
			checkSeg(t, &b, i, uint32(seq), all[seq])
			w := times(seq)
			if d := b.Dgrams[i]; d.Time != w.Time || d.TOS != w.TOS || d.HasTOS != w.HasTOS {
				t.Fatalf("datagram %d (seq %d): %+v, want the message's %+v", i, seq, d, w)
			}
			seq++
		}
	}
	check()
	for round := 0; r.pending(); round++ {
		if round > 10 {
			t.Fatal("the remainder does not drain")
		}
		b.N = 0
		r.deliver(&b, limit)
		check()
	}
	if seq != len(all) {
		t.Fatalf("delivered %d datagrams of %d", seq, len(all))
	}
	if len(r.dgrams) != 0 || r.next != 0 {
		t.Fatalf("drained remainder %d/%d", r.next, len(r.dgrams))
	}
	// Reused without growing.
	c := cap(r.dgrams)
	r.save(m1, len(m1), 1000, d1, 1)
	if cap(r.dgrams) != c || len(r.dgrams) != 40 {
		t.Fatalf("reuse: %d datagrams, capacity %d (was %d)", len(r.dgrams), cap(r.dgrams), c)
	}
}

// A plain datagram (no segment size) is one datagram, kept up to
// RecvSlotLen bytes; bytes past what the read copied read as zeros.
func TestGROExpandPlainAndShort(t *testing.T) {
	var b dataphase.RecvBatch
	m := groMessage(7, []int{1222})
	if next := expandGRO(&b, dataphase.MaxRecv, m, len(m), 0, dataphase.InDatagram{}, 0); next != 1 || b.N != 1 {
		t.Fatalf("plain: next %d, batch %d", next, b.N)
	}
	checkSeg(t, &b, 0, 7, 1222)
	// A message of two segments of which the read copied only part of
	// the second one's kept bytes.
	m = groMessage(9, []int{1000, 1000})
	for i := range b.Buf(1) {
		b.Buf(1)[i] = 0xff // stale bytes of an earlier datagram
	}
	b.N = 0
	expandGRO(&b, dataphase.MaxRecv, m[:1010], 2000, 1000, dataphase.InDatagram{}, 0)
	if b.N != 2 || b.Dgrams[1].Len != 1000 {
		t.Fatalf("truncated: batch %d, %+v", b.N, b.Dgrams[1])
	}
	p := b.Data(1)
	if binary.BigEndian.Uint32(p) != 10 {
		t.Fatalf("second segment starts %x", p[:4])
	}
	for j := 10; j < len(p); j++ {
		if p[j] != 0 {
			t.Fatalf("byte %d past the copy is %#x, want 0", j, p[j])
		}
	}
}
