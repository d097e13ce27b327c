package dataphase

// RateBound is a client's own bound on its Test Connection's rate (the
// agent's `[probe] max_rate_mbps`, docs/agent.md), which holds for the
// automatic search too. The rate adjustment runs on the server (RFC 9097
// section 8.1), so the client bounds what it controls: as a Load Sender
// it never sends a row faster than Row, whatever the server's Status PDUs
// assign; as a Load Receiver it reports a Trial Interval received above
// the bound's trigger as congested (a delay variation above the upper
// threshold), as a bottleneck of that rate would, and the server's search
// backs off there. The figures of the client's own report (its
// Sub-Intervals, from what it received) are untouched; its Trial Interval
// events (the -v lines) show the Status PDU as sent, congestion included.
type RateBound struct {
	// Mbps is the bound at the IP layer, Mbit/s; 0: none.
	Mbps float64
	// Row is the highest table row at or below sendShare of the bound:
	// what an upstream Load Sender sends in place of a faster row. Under
	// a bound below the table's first row it is that row, the least a
	// Load Sender sends: the bound is then exceeded, not the test voided.
	Row SendingRate
}

// sendShare and receiveShare place the bound's working point below it: a
// sender that stalls sends its late Bursts into the next Sub-Interval, and
// a search held by feedback moves a row or two past its trigger before
// the feedback takes effect; both margins keep a Sub-Interval's rate at
// or below the bound.
const (
	sendShare    = 0.95
	receiveShare = 0.9
)

// NewRateBound is the bound of mbps over the rows of the table o makes.
func NewRateBound(mbps float64, o TableOptions) RateBound {
	b := RateBound{Mbps: mbps}
	if mbps <= 0 {
		return RateBound{}
	}
	table := BuildRateTable(o)
	b.Row = table[0]
	for _, r := range table[1:] {
		if r.L3Mbps(false) <= mbps*sendShare {
			b.Row = r
		}
	}
	return b
}

// clamp is the row a Load Sender under the bound sends for the assigned
// row r.
func (b *RateBound) clamp(r SendingRate, ipv6 bool) SendingRate {
	if b.Mbps > 0 && r.L3Mbps(ipv6) > b.Mbps*sendShare {
		return b.Row
	}
	return r
}

// congested reports whether the Trial Interval t (what it received) ran
// above the bound's trigger.
func (b *RateBound) congested(t *TrialInfo, ipv6 bool) bool {
	return b.Mbps > 0 && t.L3Mbps(ipv6) > b.Mbps*receiveShare
}
