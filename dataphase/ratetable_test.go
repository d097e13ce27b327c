package dataphase

import (
	"fmt"
	"math"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

func sr(t1, p1, b1, t2, p2, b2, a2 uint32) SendingRate {
	return SendingRate{t1, p1, b1, t2, p2, b2, a2}
}

// Expected rows and rates come from the printed output of OB-UDPST 9.0.0's
// udpst -S in its variants (testdata/obudpst/srates_*.txt).
func TestRateTableRows(t *testing.T) {
	def := TableOptions{}
	noJ := TableOptions{NoJumbo: true}
	trad := TableOptions{TraditionalMTU: true}
	noJT := TableOptions{NoJumbo: true, TraditionalMTU: true}
	tests := []struct {
		o    TableOptions
		idx  int
		row  SendingRate
		mbps float64
	}{
		{def, 0, sr(0, 0, 0, 50000, 0, 0, 1222|RandomSize), 0.1064},
		{def, 1, sr(0, 0, 0, 1000, 0, 0, 97), 1},
		{def, 9, sr(0, 0, 0, 1000, 0, 0, 1097), 9},
		{def, 10, sr(0, 0, 0, 1000, 1222, 1, 0), 10},
		{def, 100, sr(100, 1222, 1, 0, 0, 0, 0), 100},
		{def, 101, sr(100, 1222, 1, 1000, 0, 0, 97), 101},
		{def, 555, sr(100, 1222, 5, 1000, 1222, 5, 597), 555},
		{def, 999, sr(100, 1222, 9, 1000, 1222, 9, 1097), 999},
		{def, 1000, sr(100, 1222, 10, 0, 0, 0, 0), 1000},
		{def, 1001, sr(100, 1347, 10, 0, 0, 0, 0), 1100},
		{def, 1062, sr(100, 8972, 10, 0, 0, 0, 0), 7200},
		{def, 1063, sr(100, 8972, 11, 0, 0, 0, 0), 7920},
		{def, 1152, sr(100, 8972, 100, 0, 0, 0, 0), 72000},
		{noJ, 1000, sr(100, 1222, 10, 0, 0, 0, 0), 1000},
		{noJ, 1001, sr(100, 1222, 11, 0, 0, 0, 0), 1100},
		{noJ, 1089, sr(100, 1222, 99, 0, 0, 0, 0), 9900},
		{noJ, 1090, sr(100, 1222, 100, 0, 0, 0, 0), 10000},
		{noJ, 1152, sr(100, 1222, 100, 0, 0, 0, 0), 10000},
		{trad, 0, sr(0, 0, 0, 50000, 0, 0, 1472|RandomSize), 0.1264},
		{trad, 11, sr(0, 0, 0, 1000, 0, 0, 1347), 11},
		{trad, 12, sr(0, 0, 0, 1000, 1472, 1, 0), 12},
		{trad, 960, sr(100, 1472, 8, 0, 0, 0, 0), 960},
		{trad, 1000, sr(100, 1472, 8, 1000, 1472, 3, 472), 1000},
		{trad, 1001, sr(100, 1347, 10, 0, 0, 0, 0), 1100},
		{trad, 1152, sr(100, 8972, 100, 0, 0, 0, 0), 72000},
		{noJT, 1000, sr(100, 1472, 8, 1000, 1472, 3, 472), 1000},
		{noJT, 1001, sr(100, 1472, 9, 0, 0, 0, 0), 1080},
		{noJT, 1091, sr(100, 1472, 99, 0, 0, 0, 0), 11880},
		{noJT, 1092, sr(100, 1472, 100, 0, 0, 0, 0), 12000},
		{noJT, 1152, sr(100, 1472, 100, 0, 0, 0, 0), 12000},
	}
	tables := map[TableOptions][]SendingRate{}
	for _, tt := range tests {
		name := fmt.Sprintf("%+v/%d", tt.o, tt.idx)
		tab, ok := tables[tt.o]
		if !ok {
			tab = BuildRateTable(tt.o)
			tables[tt.o] = tab
		}
		if got := tab[tt.idx]; got != tt.row {
			t.Errorf("%s: row = %+v, want %+v", name, got, tt.row)
		}
		for _, v6 := range []bool{false, true} {
			if got := tab[tt.idx].L3Mbps(v6); math.Abs(got-tt.mbps) > 1e-9 {
				t.Errorf("%s ipv6=%v: L3Mbps = %v, want %v", name, v6, got, tt.mbps)
			}
		}
	}
}

// Every variant has RateRows rows and, up to HighSpeedRow, row n is n Mbps;
// above it the rate never decreases. The rate adjustment relies on both.
func TestRateTableShape(t *testing.T) {
	for _, o := range []TableOptions{{}, {NoJumbo: true}, {TraditionalMTU: true}, {NoJumbo: true, TraditionalMTU: true}} {
		tab := BuildRateTable(o)
		if len(tab) != RateRows {
			t.Fatalf("%+v: %d rows, want %d", o, len(tab), RateRows)
		}
		prev := 0.0
		for i := range tab {
			got := tab[i].L3Mbps(false)
			if i > 0 && i <= HighSpeedRow && got != float64(i) {
				t.Errorf("%+v: row %d = %v Mbps, want %d", o, i, got, i)
			}
			if got < prev {
				t.Errorf("%+v: row %d = %v Mbps, below row %d (%v)", o, i, got, i-1, prev)
			}
			if tab[i].BurstSize1 > MaxBurst || tab[i].BurstSize2 > MaxBurst {
				t.Errorf("%+v: row %d exceeds MaxBurst: %+v", o, i, tab[i])
			}
			prev = got
		}
		// Above 1 Gbps only transmitter 1 runs.
		for i := HighSpeedRow + 1; i < RateRows; i++ {
			if r := tab[i]; r.TxInterval2 != 0 || r.BurstSize2 != 0 || r.UDPAddon2 != 0 || r.TxInterval1 != 100 {
				t.Errorf("%+v: row %d = %+v, want transmitter 1 only", o, i, r)
			}
		}
	}
}

func TestPayloadRange(t *testing.T) {
	tests := []struct {
		field  uint32
		ipv6   bool
		lo, hi uint32
	}{
		{0, false, 0, 0},
		{0, true, 0, 0},
		{97, false, 97, 97},
		{97, true, 77, 77},
		{52, true, 32, 32},
		{51, true, 51, 51},
		{8972, true, 8952, 8952},
		{1222 | RandomSize, false, 52, 1222},
		{1222 | RandomSize, true, 32, 1202},
		{40 | RandomSize, false, 52, 52},
	}
	for _, tt := range tests {
		lo, hi := PayloadRange(tt.field, tt.ipv6)
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("PayloadRange(%#x, %v) = %d, %d; want %d, %d", tt.field, tt.ipv6, lo, hi, tt.lo, tt.hi)
		}
	}
}

func TestSendingRateWire(t *testing.T) {
	r := sr(0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10, 0x11121314, 0x15161718, 0x191a1b1c)
	b := make([]byte, SendingRateLen+4)
	for i := range b {
		b[i] = 0xee
	}
	r.Put(b)
	for i := 0; i < SendingRateLen; i++ {
		if b[i] != byte(i+1) {
			t.Fatalf("byte %d = %#x, want %#x (big-endian, wire order)", i, b[i], i+1)
		}
	}
	if b[SendingRateLen] != 0xee {
		t.Fatalf("Put wrote past %d bytes", SendingRateLen)
	}
	var back SendingRate
	back.Load(b)
	if back != r {
		t.Fatalf("Load(Put(r)) = %+v, want %+v", back, r)
	}

	// Row 0 as it appears on the wire (the sending rate fields of RFC 9946's
	// Test Activation PDU).
	row0 := BuildRateTable(TableOptions{})[0]
	row0.Put(b)
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc3, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0x04, 0xc6}
	if string(b[:SendingRateLen]) != string(want) {
		t.Fatalf("row 0 on the wire = % x, want % x", b[:SendingRateLen], want)
	}
}

func TestSendingRateNoAllocs(t *testing.T) {
	r := BuildRateTable(TableOptions{})[555]
	var b [SendingRateLen]byte
	var back SendingRate
	if n := race.AllocsPerRun(100, func() { r.Put(b[:]) }); n != 0 {
		t.Errorf("Put allocates %v times per call", n)
	}
	if n := race.AllocsPerRun(100, func() { back.Load(b[:]) }); n != 0 {
		t.Errorf("Load allocates %v times per call", n)
	}
}

func TestSendingRateShortBuffer(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Put into a 27-byte buffer did not panic")
		}
	}()
	var r SendingRate
	r.Put(make([]byte, SendingRateLen-1))
}
