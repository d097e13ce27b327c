package dataphase

import "encoding/binary"

// The Sending Rate Table is the ladder of load levels the rate adjustment
// algorithm (RFC 9097 section 8.1) climbs and descends. Both ends of a test
// index the same table, and the server puts whole rows on the wire in Test
// Activation and Status PDUs, so the table has to be identical, row for row,
// to the one OB-UDPST 9.0.0 builds. Where RFC 9097's suggested table differs
// (row 0, and the steps above 1 Gbps), OB-UDPST's table wins: interop and
// comparable results matter more than the RFC's example.

const (
	// SendingRateLen is the size of the Sending Rate structure on the wire:
	// seven big-endian u32 fields, no padding.
	SendingRateLen = 28

	// RandomSize is bit 31 of a payload or add-on field. When set, each
	// firing draws a uniform size between the minimum payload and the low 31
	// bits. Only row 0 uses it (its add-on).
	RandomSize = 0x80000000

	// RateRows is the fixed number of rows in every variant of the table.
	RateRows = 1153
	// MaxRateIndex is the highest row index.
	MaxRateIndex = RateRows - 1
	// HighSpeedRow is the last row at or below 1 Gbps, where the 1 Mbps
	// steps end. The adjustment algorithm never increases fast above it. It is
	// 1000 whatever the options, which the generation below guarantees.
	HighSpeedRow = 1000
	// AutoRateIndex in a Test Activation PDU's srIndexConf asks for the
	// automatic search instead of a fixed or starting row.
	AutoRateIndex = 0xFFFF

	// MaxBurst caps the datagrams one transmitter emits per expiry.
	MaxBurst = 100

	// MinPayloadIPv4 is the smallest UDP payload: the 32-byte Load PDU header
	// plus 20 bytes, so that an IPv6 sender can still shave 20 bytes off.
	MinPayloadIPv4 = 52
	// MinPayloadIPv6 is the smallest UDP payload on an IPv6 connection.
	MinPayloadIPv6 = 32
	// IPv6Reduction is what an IPv6 sender subtracts from table sizes so that
	// its IP packets are as large as the IPv4 ones (the IPv6 header is 20
	// bytes longer). The table itself always holds IPv4 sizes.
	IPv6Reduction = 20

	// DefaultPayload is the main datagram size (L3 1250 bytes), which leaves
	// room for tunnel overhead on a 1500-byte MTU path.
	DefaultPayload = 1222
	// TraditionalPayload is the main datagram size with the traditional
	// 1500-byte MTU option (L3 1500 bytes).
	TraditionalPayload = 1472
	// MaxJumboPayload is the largest jumbo size (L3 9000 bytes).
	MaxJumboPayload = 8972
)

// Timer periods of the two transmitters and of row 0, in microseconds.
const (
	tx1Interval  = 100
	tx2Interval  = 1000
	row0Interval = 50000
)

// l3Overhead is the UDP plus IPv4 header size counted in a row's rate.
const l3Overhead = 28

// L3Overhead is the UDP and IP header bytes of one datagram, what every
// L3 rate adds to the UDP payload: 28 for IPv4, 48 for IPv6.
func L3Overhead(ipv6 bool) int {
	if ipv6 {
		return l3Overhead + IPv6Reduction
	}
	return l3Overhead
}

// SendingRate is one row of the Sending Rate Table: two independent periodic
// transmitters, the second of which may append one extra datagram per burst.
// The fields are exactly the seven u32 of the wire structure, in wire order.
// Sizes are IPv4 UDP payload sizes; see PayloadRange for IPv6.
type SendingRate struct {
	// TxInterval1 is transmitter 1's timer period in microseconds; 0 means
	// transmitter 1 is off.
	TxInterval1 uint32
	// UDPPayload1 is the UDP payload size of transmitter 1's datagrams,
	// header included. With RandomSize set, the low 31 bits are the maximum.
	UDPPayload1 uint32
	// BurstSize1 is the number of datagrams transmitter 1 sends per period.
	BurstSize1 uint32
	// TxInterval2 is transmitter 2's timer period in microseconds; 0 means
	// transmitter 2 (and its add-on) is off.
	TxInterval2 uint32
	// UDPPayload2 is as UDPPayload1, for transmitter 2.
	UDPPayload2 uint32
	// BurstSize2 is the number of full datagrams transmitter 2 sends per
	// period, not counting the add-on.
	BurstSize2 uint32
	// UDPAddon2 is the size of one extra datagram appended to every
	// transmitter 2 burst (0 = none). It gives the 1 Mbps steps between the
	// 10 Mbps steps of transmitter 2. RandomSize applies as for payloads.
	UDPAddon2 uint32
}

// Put writes r as the 28-byte wire structure into b[:SendingRateLen].
func (r *SendingRate) Put(b []byte) {
	_ = b[SendingRateLen-1] // one bounds check instead of seven
	binary.BigEndian.PutUint32(b[0:], r.TxInterval1)
	binary.BigEndian.PutUint32(b[4:], r.UDPPayload1)
	binary.BigEndian.PutUint32(b[8:], r.BurstSize1)
	binary.BigEndian.PutUint32(b[12:], r.TxInterval2)
	binary.BigEndian.PutUint32(b[16:], r.UDPPayload2)
	binary.BigEndian.PutUint32(b[20:], r.BurstSize2)
	binary.BigEndian.PutUint32(b[24:], r.UDPAddon2)
}

// Load reads the 28-byte wire structure in b[:SendingRateLen] into r. It does
// not validate: OB-UDPST does not either, and the sender has to cope with
// whatever row the server dictates.
func (r *SendingRate) Load(b []byte) {
	_ = b[SendingRateLen-1]
	r.TxInterval1 = binary.BigEndian.Uint32(b[0:])
	r.UDPPayload1 = binary.BigEndian.Uint32(b[4:])
	r.BurstSize1 = binary.BigEndian.Uint32(b[8:])
	r.TxInterval2 = binary.BigEndian.Uint32(b[12:])
	r.UDPPayload2 = binary.BigEndian.Uint32(b[16:])
	r.BurstSize2 = binary.BigEndian.Uint32(b[20:])
	r.UDPAddon2 = binary.BigEndian.Uint32(b[24:])
}

// PayloadRange returns the UDP payload sizes a payload or add-on field stands
// for on a connection of the given family: lo == hi for a fixed size, and the
// inclusive range of the uniform draw when RandomSize is set.
//
// On IPv6 every size of at least MinPayloadIPv4 shrinks by IPv6Reduction
// (smaller values, in practice only 0, are left alone) and a random draw
// starts at MinPayloadIPv6, so packets keep their IPv4 L3 size. A random
// maximum below the minimum never comes from a 9.0.0 server; it is raised to
// the minimum rather than producing an inverted range.
func PayloadRange(field uint32, ipv6 bool) (lo, hi uint32) {
	hi = field &^ RandomSize
	if ipv6 && hi >= MinPayloadIPv4 {
		hi -= IPv6Reduction
	}
	if field&RandomSize == 0 {
		return hi, hi
	}
	lo = MinPayloadIPv4
	if ipv6 {
		lo = MinPayloadIPv6
	}
	return lo, max(lo, hi)
}

// meanSize is the size a field contributes to a row's nominal rate: the
// truncated midpoint of a random range, as OB-UDPST computes it.
func meanSize(field uint32, ipv6 bool) uint64 {
	lo, hi := PayloadRange(field, ipv6)
	return (uint64(lo) + uint64(hi)) / 2
}

// L3Mbps returns the nominal rate of r in Mbps at the IP layer: UDP and IP
// headers counted, no link framing, no fragmentation. Packets per second use
// truncating integer division of one second by the period, which is what
// OB-UDPST prints with -S. The result is the same for both families, because
// IPv6 sizes are 20 bytes smaller and headers 20 bytes larger; ipv6 only
// selects which sizes enter the sum. Transmitters with a zero period are
// skipped rather than divided by.
func (r *SendingRate) L3Mbps(ipv6 bool) float64 {
	over := uint64(L3Overhead(ipv6))
	var byteRate uint64 // L3 bytes per second
	if r.TxInterval1 > 0 && r.BurstSize1 > 0 {
		pps := uint64(1000000/r.TxInterval1) * uint64(r.BurstSize1)
		byteRate += pps * (meanSize(r.UDPPayload1, ipv6) + over)
	}
	if r.TxInterval2 > 0 {
		per := uint64(1000000 / r.TxInterval2)
		if r.BurstSize2 > 0 {
			byteRate += per * uint64(r.BurstSize2) * (meanSize(r.UDPPayload2, ipv6) + over)
		}
		if r.UDPAddon2 > 0 {
			byteRate += per * (meanSize(r.UDPAddon2, ipv6) + over)
		}
	}
	return float64(byteRate*8) / 1e6
}

// TableOptions are the only inputs of the table. Both ends of a test must
// agree on them (the server rejects a mismatch), since they reshape the rows.
type TableOptions struct {
	// NoJumbo (-j) replaces the jumbo rows above 1 Gbps by ever larger
	// bursts of the main datagram size.
	NoJumbo bool
	// TraditionalMTU (-T) uses 1472-byte instead of 1222-byte datagrams.
	TraditionalMTU bool
}

// BuildRateTable returns the RateRows rows of the Sending Rate Table for o,
// exactly as OB-UDPST 9.0.0 generates them.
//
// Up to row 1000 the rate of row n is n Mbps: transmitter 1 (100 us) gives
// P*k, transmitter 2 (1 ms) gives P*i, and the add-on gives 1 Mbps per step
// j, with P the main datagram's L3 size. That is 100k+10i+j by default and
// 120k+12i+j with 1500-byte packets. Above that the table grows in 100 Mbps
// steps (jumbo sizes, then bursts of jumbo datagrams) or, without jumbo, by
// bursts of the main size until MaxBurst, after which the top rows repeat.
func BuildRateTable(o TableOptions) []SendingRate {
	p, kmax, jmax := uint32(DefaultPayload), uint32(10), uint32(9)
	if o.TraditionalMTU {
		p, kmax, jmax = TraditionalPayload, 8, 11
	}
	rows := make([]SendingRate, 0, RateRows)

	// Up to 1 Gbps. In the default layout the loop ends on the base row
	// (k=10, i=0), which is 1000 Mbps by itself; with -T it ends on an add-on
	// row (k=8, i=3, j=4). Either way row HighSpeedRow is the last one.
build:
	for k := uint32(0); k <= kmax; k++ {
		for i := uint32(0); i <= 9; i++ {
			var r SendingRate
			if k > 0 {
				r.TxInterval1, r.UDPPayload1, r.BurstSize1 = tx1Interval, p, k
			}
			if i > 0 {
				r.TxInterval2, r.UDPPayload2, r.BurstSize2 = tx2Interval, p, i
			}
			if k == 0 && i == 0 {
				// Row 0: a trickle of one random-size datagram every 50 ms
				// (about 0.11 Mbps) instead of RFC 9097's fixed lowest rate.
				r.TxInterval2, r.UDPAddon2 = row0Interval, p|RandomSize
			}
			rows = append(rows, r)
			if !o.TraditionalMTU && k == kmax {
				break build
			}
			for j := uint32(1); j <= jmax; j++ {
				var a SendingRate
				if k > 0 {
					a.TxInterval1, a.UDPPayload1, a.BurstSize1 = tx1Interval, p, k
				}
				// The add-on rides on transmitter 2's timer, so the timer
				// runs even when transmitter 2 has no burst of its own.
				a.TxInterval2 = tx2Interval
				if i > 0 {
					a.UDPPayload2, a.BurstSize2 = p, i
				}
				a.UDPAddon2 = 125*j - l3Overhead // L3 125*j bytes per ms = j Mbps
				rows = append(rows, a)
				if len(rows) > HighSpeedRow {
					break build
				}
			}
		}
	}

	// Above 1 Gbps, transmitter 1 only. Note that with -T and jumbo the
	// sizes restart at 1347 bytes, below the -T default of 1472: 9.0.0 does
	// this and the server hands these rows to the client, so we do too.
	p2, burst := p, uint32(11)
	if !o.NoJumbo {
		// Burst 10 every 100 us with L3 sizes growing by 125 bytes gives
		// 100 Mbps steps from 1100 up to 7200 Mbps (L3 9000).
		for l3 := uint32(1375); l3 <= MaxJumboPayload+l3Overhead; l3 += 125 {
			rows = append(rows, SendingRate{TxInterval1: tx1Interval, UDPPayload1: l3 - l3Overhead, BurstSize1: 10})
		}
		p2 = MaxJumboPayload
	} else if o.TraditionalMTU {
		burst = 9
	}
	for ; len(rows) < RateRows; burst++ {
		rows = append(rows, SendingRate{TxInterval1: tx1Interval, UDPPayload1: p2, BurstSize1: min(burst, MaxBurst)})
	}
	return rows
}

// RowIndexes maps each row of table to its index, the lowest of equal
// rows, to name the rows a server sends (a row it sends that is not in
// the table has none).
func RowIndexes(table []SendingRate) map[SendingRate]int {
	m := make(map[SendingRate]int, len(table))
	for i := len(table) - 1; i >= 0; i-- {
		m[table[i]] = i
	}
	return m
}
