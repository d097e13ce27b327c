package report

import (
	"fmt"
	"strings"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/buildinfo"
)

// The text lines, in OB-UDPST 9.0.0's exact formats (see the package doc).
// Parsers of OB-UDPST's output match these byte for byte, so nothing of
// ours is ever appended to them.

// headerLines are the two test header lines; prefix is "" or "[i]".
func headerLines(t *TestInfo, prefix string) string {
	delay := "RTT"
	if t.UseOWD {
		delay = "OWD"
	}
	ignore := "Disabled"
	if t.IgnoreOooDup {
		ignore = "Enabled"
	}
	payload := "zeroes"
	if t.RandomPayload {
		payload = "random"
	}
	sr := "<Auto>"
	switch {
	case t.auto():
	case t.SRStart:
		sr = fmt.Sprintf("@%d", t.SRIndex)
	default:
		sr = fmt.Sprintf("%d", t.SRIndex)
	}
	intf := "" // -E: OB-UDPST names the interface at the end of the line
	if t.Interface != "" {
		intf = ", [" + t.Interface + "]"
	}
	return fmt.Sprintf("%s%s Test Int(sec): %d, DelayVar Th(ms): %d-%d [%s], Trial Int(ms): %d, Ignore OoO/Dup: %s, Payload: %s,\n"+
		"  ID: %d, SR Index: %s, Cong. Th: %d, HS Delta: %d, SeqErr Th: %d, Algo: %s, Conn: %d, DSCP+ECN: %d, CE Th: %d%s\n",
		prefix, t.direction(), t.TestIntTime, t.LowThresh, t.UpperThresh, delay, t.TrialInt, ignore, payload,
		t.MCIdent, sr, t.SlowAdjThresh, t.HighSpeedDelta, t.SeqErrThresh, algorithmName(t.Algorithm), t.ConnMax,
		t.DSCPECN, t.CEThresh, intf)
}

// intfText is what OB-UDPST appends to an L3 rate with -E: the local
// interface's rate, " [x.xx]"; "" without -E.
func intfText(on bool, mbps float64) string {
	if !on {
		return ""
	}
	return fmt.Sprintf(" [%.2f]", mbps)
}

func algorithmName(a uint8) string {
	if a == dataphase.AlgorithmC {
		return "C"
	}
	return "B"
}

// qualityText is the part shared by Sub-Interval and Summary lines, from
// "Delivered(%)" (or "LossRatio") to the end of the line. delivered is
// already the percentage or the ratio, whichever lossRatio selects; intf
// follows the L3 rate (intfText).
func qualityText(lossRatio bool, delivered float64, ce bool, loss, ooo, dup, ceCount uint32,
	dv, rtt [3]uint32, mbps float64, intf string) string {
	var b strings.Builder
	if lossRatio {
		fmt.Fprintf(&b, "LossRatio: %.2E, ", delivered)
	} else {
		fmt.Fprintf(&b, "Delivered(%%): %6.2f, ", delivered)
	}
	label, count := "", ""
	if ce {
		label, count = "/CE", fmt.Sprintf("/%d", ceCount)
	}
	fmt.Fprintf(&b, "Loss/OoO/Dup%s: %d/%d/%d%s, OWDVar(ms): %d/%d/%d, RTTVar(ms): %d/%d/%d, Mbps(L3/IP): %.2f%s\n",
		label, loss, ooo, dup, count, dv[0], dv[1], dv[2], rtt[0], rtt[1], rtt[2], mbps, intf)
	return b.String()
}

// subIntervalLine is "Sub-Interval[n](sec): ..." for a connection or the
// aggregate; n is that one's Sub-Interval count; intf (intfText) only on
// the aggregate's.
func subIntervalLine(prefix string, n int, r *record, mbps float64, lossRatio, ce bool, intf string) string {
	s := r.shown()
	q := counts(r.dgrams, r.loss, r.ooo, r.dup, r.ce)
	width := 5
	if n >= 10 {
		width = 4
	}
	return fmt.Sprintf("%sSub-Interval[%d](sec): %*.1f, ", prefix, n, width, float64(r.accum)/1000) +
		qualityText(lossRatio, q.shownDelivered(lossRatio), ce, r.loss, r.ooo, r.dup, r.ce,
			[3]uint32{s.dvMin, s.dvAvg, s.dvMax}, [3]uint32{s.rttMin, s.rttAvg, s.rttMax}, mbps, intf)
}

// skipLine is our own line after a Sub-Interval in which the Load Sender
// skipped Bursts; it is separate so OB-UDPST's line stays identical.
func skipLine(prefix string, n int, f *skipFigures) string {
	return fmt.Sprintf("%sSub-Interval[%d]: sender skipped %d Bursts (%.1f %% of plan)\n",
		prefix, n, f.Bursts, f.percentOfPlan())
}

func minimumLine(prefix, dir string, clockDeltaMin int32, rttMinimum uint32, active int) string {
	return fmt.Sprintf("%s%s Minimum One-Way Delay(ms): %d [w/clock diff], Round-Trip Time(ms): %d, Active Connections: %d\n",
		prefix, dir, clockDeltaMin, rttMinimum, active)
}

func maximumLine(prefix, dir, label string, l3 float64, intf string, l2, l1, l0 float64) string {
	return fmt.Sprintf("%s%s %s Mbps(L3/IP): %.2f%s, Mbps(L2/Eth): %.2f, Mbps(L1/Eth): %.2f, Mbps(L1/Eth+VLAN): %.2f\n",
		prefix, dir, label, l3, intf, l2, l1, l0)
}

// banner is OB-UDPST's banner as parsers of its output find it: the title,
// the "Software Ver:" line and, when m is given, the "Mode:" line, with
// udpstp's identity added where OB-UDPST names itself: Software Ver is
// OB-UDPST's version with ours as build metadata (softwareVersion), and
// Built, a compile date in OB-UDPST, names our build.
func banner(name, version string, m *Mode) string {
	bi := buildinfo.Get()
	built := name + " " + version
	var extra []string
	if c := bi.ShortCommit(); c != "" {
		extra = append(extra, "commit "+c)
	}
	extra = append(extra, bi.GoVersion)
	built += " (" + strings.Join(extra, ", ") + ")"
	s := fmt.Sprintf("UDP Speed Test\nSoftware Ver: %s, Protocol Ver: %d, Built: %s\n",
		buildinfo.SoftwareVersion(obudpstVersion, version), protocolVersion, built)
	if m != nil {
		s += m.line()
	}
	return s
}

// Mode is what OB-UDPST's "Mode:" banner line says of a client: the
// payload sizes its options allow, and the build's features.
type Mode struct {
	Jumbo          bool // jumbo sizes permitted (no -j)
	TraditionalMTU bool // -T
	IPv6Only       bool // -6: 20 bytes less payload
	// Optimizations is the socket path in OB-UDPST's words, e.g.
	// "SendMMsg()+GSO RecvMMsg()+Trunc"; "" for none.
	Optimizations string
}

// line is "Mode: Client, Payload Default[Max]: d[m], Auth: Available,
// Checksum: Off, Optimizations: ...". Auth is always available here
// (OB-UDPST's is a build option); Checksum Off is what a 9.0.0 build
// without ADD_HEADER_CSUM says, and what udpstp sends.
func (m *Mode) line() string {
	v6 := 0
	if m.IPv6Only {
		v6 = ipv6Extra
	}
	def := defaultPayload
	if m.TraditionalMTU {
		def = tradPayload
	}
	def -= v6
	maxP := def
	if m.Jumbo {
		maxP = jumboPayload - v6
	}
	opt := ""
	if m.Optimizations != "" {
		opt = " " + m.Optimizations
	}
	return fmt.Sprintf("Mode: Client, Payload Default[Max]: %d[%d], Auth: Available, Checksum: Off, Optimizations:%s\n",
		def, maxP, opt)
}
