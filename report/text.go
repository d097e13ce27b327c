package report

import (
	"fmt"
	"strings"

	"github.com/udpstp/udpstp/dataphase"
)

// The text lines, in OB-UDPST 9.0.0's exact formats (measurement.md 6.1).
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
	return fmt.Sprintf("%s%s Test Int(sec): %d, DelayVar Th(ms): %d-%d [%s], Trial Int(ms): %d, Ignore OoO/Dup: %s, Payload: %s,\n"+
		"  ID: %d, SR Index: %s, Cong. Th: %d, HS Delta: %d, SeqErr Th: %d, Algo: %s, Conn: %d, DSCP+ECN: %d, CE Th: %d\n",
		prefix, t.direction(), t.TestIntTime, t.LowThresh, t.UpperThresh, delay, t.TrialInt, ignore, payload,
		t.MCIdent, sr, t.SlowAdjThresh, t.HighSpeedDelta, t.SeqErrThresh, algorithmName(t.Algorithm), t.ConnMax,
		t.DSCPECN, t.CEThresh)
}

func algorithmName(a uint8) string {
	if a == dataphase.AlgorithmC {
		return "C"
	}
	return "B"
}

// qualityText is the part shared by Sub-Interval and Summary lines, from
// "Delivered(%)" (or "LossRatio") to the end of the line. delivered is
// already the percentage or the ratio, whichever lossRatio selects.
func qualityText(lossRatio bool, delivered float64, ce bool, loss, ooo, dup, ceCount uint32,
	dv, rtt [3]uint32, mbps float64) string {
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
	fmt.Fprintf(&b, "Loss/OoO/Dup%s: %d/%d/%d%s, OWDVar(ms): %d/%d/%d, RTTVar(ms): %d/%d/%d, Mbps(L3/IP): %.2f\n",
		label, loss, ooo, dup, count, dv[0], dv[1], dv[2], rtt[0], rtt[1], rtt[2], mbps)
	return b.String()
}

// subIntervalLine is "Sub-Interval[n](sec): ..." for a connection or the
// aggregate; n is that one's Sub-Interval count.
func subIntervalLine(prefix string, n int, r *record, mbps float64, lossRatio, ce bool) string {
	s := r.shown()
	q := counts(r.dgrams, r.loss, r.ooo, r.dup, r.ce)
	width := 5
	if n >= 10 {
		width = 4
	}
	return fmt.Sprintf("%sSub-Interval[%d](sec): %*.1f, ", prefix, n, width, float64(r.accum)/1000) +
		qualityText(lossRatio, q.shownDelivered(lossRatio), ce, r.loss, r.ooo, r.dup, r.ce,
			[3]uint32{s.dvMin, s.dvAvg, s.dvMax}, [3]uint32{s.rttMin, s.rttAvg, s.rttMax}, mbps)
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

func maximumLine(prefix, dir, label string, l3, l2, l1, l0 float64) string {
	return fmt.Sprintf("%s%s %s Mbps(L3/IP): %.2f, Mbps(L2/Eth): %.2f, Mbps(L1/Eth): %.2f, Mbps(L1/Eth+VLAN): %.2f\n",
		prefix, dir, label, l3, l2, l1, l0)
}

// banner is our own first line in text mode. OB-UDPST's "UDP Speed Test /
// Software Ver" banner is deliberately not imitated: we are not udpst.
func banner(name, version string) string {
	return fmt.Sprintf("%s %s, UDP Speed Test (RFC 9097 / RFC 9946), OB-UDPST %s compatible output\n",
		name, version, softwareVersion)
}
