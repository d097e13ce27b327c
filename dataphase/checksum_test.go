package dataphase

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// TestChecksumVectors protects the RFC 1071 arithmetic every PDU checksum
// relies on: big-endian 16-bit words, end-around carry, an odd trailing byte
// padded with zero, and the final complement.
func TestChecksumVectors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		sum  uint16 // the folded ones'-complement sum, before the complement
	}{
		{"empty", nil, 0x0000},
		{"rfc1071 example", []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0xddf2},
		{"rfc1071 example odd tail", []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7, 0xab}, 0x88f3},
		{"one byte", []byte{0xab}, 0xab00},
		{"three bytes", []byte{0x12, 0x34, 0x56}, 0x6834},
		{"one word", []byte{0x12, 0x34}, 0x1234},
		{"carry once", []byte{0xff, 0xff, 0x00, 0x01}, 0x0001},
		{"all ones", []byte{0xff, 0xff, 0xff, 0xff}, 0xffff},
		{"all ones odd", []byte{0xff, 0xff, 0xff, 0xff, 0xff}, 0xff00},
		{"negative zero stays", []byte{0xff, 0xff}, 0xffff},
		{"many carries", []byte{0xff, 0xfe, 0xff, 0xfe, 0xff, 0xfe, 0xff, 0xfe}, 0xfffb},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := Checksum(tt.in), ^tt.sum; got != want {
				t.Errorf("Checksum(% x) = %#04x, want %#04x", tt.in, got, want)
			}
			if got := ChecksumValid(tt.in); got != (tt.sum == 0xffff) {
				t.Errorf("ChecksumValid(% x) = %v, want %v", tt.in, got, tt.sum == 0xffff)
			}
		})
	}
}

// TestChecksumRFC1071Example follows RFC 1071 section 3 to the end: storing
// the complement of 0xddf2 next to the data makes the whole buffer verify.
func TestChecksumRFC1071Example(t *testing.T) {
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7, 0, 0}
	ck := Checksum(b)
	if ck != 0x220d {
		t.Fatalf("checksum %#04x, want 0x220d", ck)
	}
	binary.BigEndian.PutUint16(b[8:], ck)
	if !ChecksumValid(b) {
		t.Fatalf("% x does not verify", b)
	}
	if Checksum(b) != 0 {
		t.Fatalf("checksum over a verifying buffer is %#04x, want 0", Checksum(b))
	}
}

// TestChecksumRandom checks on random buffers of every length up to 300 that
// Checksum matches an independent 32-bit little-endian implementation, that
// Checksum and ChecksumValid agree (valid iff the checksum over the buffer is
// 0), that a sealed buffer verifies, and that flipping any one bit breaks it.
func TestChecksumRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1071, 9097))
	for n := 0; n <= 300; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if got, want := Checksum(b), golden.Checksum(b); got != want {
			t.Fatalf("len %d: Checksum %#04x, 32-bit LE reference %#04x (% x)", n, got, want, b)
		}
		if ChecksumValid(b) != (Checksum(b) == 0) {
			t.Fatalf("len %d: ChecksumValid %v but Checksum %#04x (% x)", n, ChecksumValid(b), Checksum(b), b)
		}
		if n < 2 {
			continue
		}
		// Seal at a random even offset, as every PDU's field is.
		off := rng.IntN(n/2) * 2
		binary.BigEndian.PutUint16(b[off:], 0)
		binary.BigEndian.PutUint16(b[off:], Checksum(b))
		if !ChecksumValid(b) {
			t.Fatalf("len %d: sealed at %d does not verify (% x)", n, off, b)
		}
		bit := rng.IntN(n * 8)
		b[bit/8] ^= 1 << (bit % 8)
		if ChecksumValid(b) {
			t.Fatalf("len %d: still verifies with bit %d flipped (% x)", n, bit, b)
		}
	}
}

// TestChecksumNoAllocs keeps the per-datagram checksum free of allocations.
func TestChecksumNoAllocs(t *testing.T) {
	b := make([]byte, StatusLen)
	if n := race.AllocsPerRun(100, func() {
		_ = Checksum(b)
		_ = ChecksumValid(b)
	}); n != 0 {
		t.Fatalf("Checksum/ChecksumValid: %v allocations, want 0", n)
	}
}
