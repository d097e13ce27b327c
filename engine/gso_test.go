package engine

import (
	"reflect"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

func dgrams(lens ...int) []dataphase.OutDatagram {
	d := make([]dataphase.OutDatagram, len(lens))
	for i, l := range lens {
		d[i] = dataphase.OutDatagram{HdrLen: 32, Len: uint16(l)}
	}
	return d
}

func repeat(n, l int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = l
	}
	return r
}

func TestPlanGSO(t *testing.T) {
	const (
		mtu1500v4 = 1500 - ipv4Overhead // 1472
		loMTUv4   = 65535 - ipv4Overhead
	)
	cases := []struct {
		name       string
		lens       []int
		maxSegs    int
		maxBytes   int
		mtuPayload int
		want       []gsoRun
	}{
		{"empty", nil, udpMaxSegments, maxIPv4Payload, mtu1500v4, nil},
		{"single datagram never GSO", []int{1222}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 1, 0}}},
		{"equal run", repeat(5, 1222), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 5, 1222}}},
		{"add-on tail", append(repeat(4, 1222), 300), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 5, 1222}}},
		{"one full and a tail", []int{1222, 300}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 2, 1222}}},
		{"shorter in the middle ends a run", []int{1000, 1000, 500, 1000, 1000}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 3, 1000}, {3, 2, 1000}}},
		{"longer datagram starts a new run", []int{500, 500, 1000, 1000}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 2, 500}, {2, 2, 1000}}},
		{"two tails: the second starts alone", []int{1000, 1000, 500, 400}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 3, 1000}, {3, 1, 0}}},
		{"GSO off", repeat(3, 1000), 1, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 1, 0}, {1, 1, 0}, {2, 1, 0}}},
		{"segment limit hit exactly", repeat(64, 100), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 64, 100}}},
		{"segment limit exceeded", repeat(66, 100), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 64, 100}, {64, 2, 100}}},
		{"segment limit exceeded by one", repeat(65, 100), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 64, 100}, {64, 1, 0}}},
		// 44 x 1472 = 64,768 fits; 45 would be 66,240.
		{"IPv4 byte limit with 1472", repeat(46, 1472), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 44, 1472}, {44, 2, 1472}}},
		// 7 x 8972 = 62,804 fits in 65,507; 8 would be 71,776.
		{"jumbo 8972 on a jumbo path", repeat(9, 8972), udpMaxSegments, maxIPv4Payload, 9000 - ipv4Overhead,
			[]gsoRun{{0, 7, 8972}, {7, 2, 8972}}},
		{"jumbo over a 1500 MTU: never GSO", repeat(3, 8972), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 1, 0}, {1, 1, 0}, {2, 1, 0}}},
		{"segment exactly the MTU payload", repeat(2, 1472), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 2, 1472}}},
		{"segment one byte over the MTU payload", repeat(2, 1473), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 1, 0}, {1, 1, 0}}},
		// A byte limit hit exactly: 65,507 = 7 x 9,000 + 2,507.
		{"byte limit hit exactly with a tail", append(repeat(7, 9000), 2507), udpMaxSegments, maxIPv4Payload, loMTUv4,
			[]gsoRun{{0, 8, 9000}}},
		{"byte limit exceeded by one with a tail", append(repeat(7, 9000), 2508), udpMaxSegments, maxIPv4Payload, loMTUv4,
			[]gsoRun{{0, 7, 9000}, {7, 1, 0}}},
		// IPv6 allows 20 bytes more: 65,527 = 7 x 9,000 + 2,527.
		{"IPv6 byte limit", append(repeat(7, 9000), 2527), udpMaxSegments, maxIPv6Payload, 65535 - ipv6Overhead,
			[]gsoRun{{0, 8, 9000}}},
		{"IPv6 limit applied to an IPv4-sized run", append(repeat(7, 9000), 2528), udpMaxSegments, maxIPv6Payload, 65535 - ipv6Overhead,
			[]gsoRun{{0, 7, 9000}, {7, 1, 0}}},
		{"IPv6 1500 MTU payload is 1452", repeat(3, 1453), udpMaxSegments, maxIPv6Payload, 1500 - ipv6Overhead,
			[]gsoRun{{0, 1, 0}, {1, 1, 0}, {2, 1, 0}}},
		{"zero-length datagrams never join a run", []int{100, 100, 0, 0}, udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 2, 100}, {2, 1, 0}, {3, 1, 0}}},
		{"run of the largest datagrams", repeat(2, 65507), udpMaxSegments, maxIPv4Payload, loMTUv4,
			[]gsoRun{{0, 1, 0}, {1, 1, 0}}},
		{"Burst plus deferred", append(append(repeat(3, 1222), 100), repeat(4, 1222)...), udpMaxSegments, maxIPv4Payload, mtu1500v4,
			[]gsoRun{{0, 4, 1222}, {4, 4, 1222}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := dgrams(tc.lens...)
			out := make([]gsoRun, 0, len(d))
			got := planGSO(d, tc.maxSegs, tc.maxBytes, tc.mtuPayload, out)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("planGSO(%v) = %v, want %v", tc.lens, got, tc.want)
			}
			checkRuns(t, d, got, tc.maxSegs, tc.maxBytes, tc.mtuPayload)
		})
	}
}

// checkRuns verifies the invariants every plan must keep.
func checkRuns(t *testing.T, d []dataphase.OutDatagram, runs []gsoRun, maxSegs, maxBytes, mtuPayload int) {
	t.Helper()
	next := 0
	for _, r := range runs {
		if r.start != next || r.count < 1 {
			t.Fatalf("run %v does not follow %d", r, next)
		}
		next += r.count
		if r.segSize == 0 {
			if r.count != 1 {
				t.Fatalf("plain run %v of more than one datagram", r)
			}
			continue
		}
		if r.count < 2 || r.count > maxSegs || r.segSize > mtuPayload {
			t.Fatalf("GSO run %v breaks a limit", r)
		}
		total := 0
		for i := r.start; i < r.start+r.count; i++ {
			l := int(d[i].Len)
			total += l
			last := i == r.start+r.count-1
			if l == 0 || l > r.segSize || (!last && l != r.segSize) {
				t.Fatalf("GSO run %v: datagram %d has length %d", r, i, l)
			}
		}
		if total > maxBytes {
			t.Fatalf("GSO run %v: %d bytes > %d", r, total, maxBytes)
		}
	}
	if next != len(d) {
		t.Fatalf("runs cover %d of %d datagrams", next, len(d))
	}
}

func TestPlanGSOAllocs(t *testing.T) {
	d := dgrams(append(repeat(100, 1222), 500)...)
	out := make([]gsoRun, 0, len(d))
	allocs := race.AllocsPerRun(100, func() {
		out = planGSO(d, udpMaxSegments, maxIPv4Payload, 1472, out[:0])
	})
	if allocs != 0 {
		t.Fatalf("planGSO allocates %v times per call", allocs)
	}
}

func FuzzPlanGSO(f *testing.F) {
	f.Add([]byte{10, 10, 10, 5}, uint8(64), uint16(65507), uint16(1472))
	f.Fuzz(func(t *testing.T, raw []byte, segs uint8, maxBytes, mtu uint16) {
		d := make([]dataphase.OutDatagram, len(raw))
		for i, b := range raw {
			d[i].Len = uint16(b) * 64
		}
		runs := planGSO(d, int(segs), int(maxBytes), int(mtu), nil)
		checkRuns(t, d, runs, int(segs), int(maxBytes), int(mtu))
	})
}

func TestGSOLimits(t *testing.T) {
	if maxIPv4Payload != 65507 || maxIPv6Payload != 65527 {
		t.Fatalf("payload limits %d, %d", maxIPv4Payload, maxIPv6Payload)
	}
	if b, o := gsoLimits(true); b != 65507 || o != 28 {
		t.Fatalf("IPv4 limits %d, %d", b, o)
	}
	if b, o := gsoLimits(false); b != 65527 || o != 48 {
		t.Fatalf("IPv6 limits %d, %d", b, o)
	}
}
