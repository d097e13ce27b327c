package engine

import "github.com/udpstp/udpstp/dataphase"

// Filler: the bytes after the header the core writes. A Load PDU is a
// 32-byte header and up to ~9 KB (65 KB in theory) of payload nobody reads,
// so the executor sends the payload from shared memory instead of copying
// it: a second iovec per datagram, pointing at zeros or at a random pool.
// Off Linux the socket writes one datagram at a time, and copies the same
// two parts into one buffer (socket_other.go): randomFiller.datagram says
// what they are, for both.

// fillPoolLen covers the longest UDP payload (65,527 bytes), so one iovec
// always suffices for the filler.
const fillPoolLen = 1 << 16

// freshFill is how many filler bytes of each random-filled datagram are
// written fresh per datagram (into the slot, right after the header), so
// that two datagrams never carry the same payload even when their pool
// windows coincide.
const freshFill = 8

// xorshift is Marsaglia's xorshift64 generator: three shifts and xors per
// 64 bits, cheap enough for 1 Mpps (a naive generator saturated the Engine
// Thread in the prototype). Not for anything that needs unpredictability:
// random filler only defeats compression on the path.
type xorshift uint64

func newXorshift(seed uint64) xorshift {
	if seed == 0 {
		seed = 0x9e3779b97f4a7c15
	}
	return xorshift(seed)
}

func (x *xorshift) next() uint64 {
	v := uint64(*x)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*x = xorshift(v)
	return v
}

// fillRandom fills p from x, 8 bytes per step.
func (x *xorshift) fillRandom(p []byte) {
	for len(p) >= 8 {
		v := x.next()
		p[0], p[1], p[2], p[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		p[4], p[5], p[6], p[7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		p = p[8:]
	}
	if len(p) > 0 {
		v := x.next()
		for i := range p {
			p[i] = byte(v >> (8 * i))
		}
	}
}

// randomFiller is a Socket's source of random filler: a pool filled once at
// open, windows into it picked per datagram at pseudo-random offsets, and
// fresh bytes for the start of each datagram's filler.
type randomFiller struct {
	rng  xorshift
	pool *[fillPoolLen]byte
}

// init allocates and fills the pool (about 25 µs for 64 KiB).
func (f *randomFiller) init(seed uint64) {
	f.rng = newXorshift(seed)
	f.pool = new([fillPoolLen]byte)
	f.rng.fillRandom(f.pool[:])
}

// window returns n pool bytes at a pseudo-random offset.
func (f *randomFiller) window(n int) []byte {
	off := 0
	if span := fillPoolLen - n; span > 0 {
		off = int(f.rng.next() % uint64(span+1))
	}
	return f.pool[off : off+n]
}

// datagram returns the two parts of datagram i of b: head, the start of
// its slot (its header, and with RandomFill the fresh filler bytes written
// right after the header, in the slot's spare room: a slot is SlotLen
// bytes, Slot returns only its header, but its capacity runs on, and the
// executor owns the buffer), and fill, the rest of its Len bytes, from
// zeroFill or from f's pool. A header longer than the datagram is cut to
// Len. It allocates nothing.
func (f *randomFiller) datagram(b *dataphase.SendBuffer, i int) (head, fill []byte) {
	d := b.Dgrams[i]
	l, h := int(d.Len), int(d.HdrLen)
	head = b.Slot(i)
	if h > l { // a header longer than the datagram: send what Len allows
		head, h = head[:l], l
	}
	n := l - h
	if b.RandomFill && n > 0 {
		if k := min(n, freshFill); h+k <= dataphase.SlotLen {
			head = head[:h+k]
			f.rng.fillRandom(head[h:])
			n -= k
		}
	}
	switch {
	case n == 0:
	case b.RandomFill:
		fill = f.window(n)
	default:
		fill = zeroFill[:n]
	}
	return head, fill
}

// zeroFill is the filler of ordinary datagrams. The kernel only reads it;
// nothing writes it, so its pages stay the shared zero page.
var zeroFill [fillPoolLen]byte
