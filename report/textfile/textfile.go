// Package textfile writes a client's result as a node_exporter textfile:
// what a test every hour from a systemd timer leaves for the
// node_exporter of its host to export. It is made from the run's JSON
// document (OB-UDPST's schema, as report writes it for --output), so the
// two never disagree, and it is written whatever the run's outcome: a
// failed test still says so.
package textfile

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/metrics/family"
	"github.com/udpstp/udpstp/report/resultdoc"
)

// TextfileExt is the suffix node_exporter's textfile collector reads.
const TextfileExt = ".prom"

// CheckTextfileName refuses a file name the textfile collector would
// ignore.
func CheckTextfileName(path string) error {
	if base := filepath.Base(path); !strings.HasSuffix(base, TextfileExt) || base == TextfileExt {
		return fmt.Errorf("%q does not end in %s: node_exporter's textfile collector reads only *%s files", path, TextfileExt, TextfileExt)
	}
	return nil
}

// ResultLabels label every metric of a result textfile, so that the
// results of several timers on one host stay apart.
type ResultLabels struct {
	Server    string // the servers as the command line named them
	Direction string // Downstream or Upstream
}

// The directions of ResultLabels, as the server's metrics name them.
const (
	Downstream = "downstream"
	Upstream   = "upstream"
)

// bytesPerSecond converts OB-UDPST's Mbps.
const bytesPerSecond = 1e6 / 8

// ResultTextfile renders doc, a client's JSON result (one test's
// document), as textfile content in the Prometheus text format
// (family.WriteText).
func ResultTextfile(doc []byte, l ResultLabels) ([]byte, error) {
	d, err := resultdoc.DecodeTest(doc)
	if err != nil {
		return nil, fmt.Errorf("result document: %w", err)
	}
	if d.ErrorStatus == nil {
		return nil, fmt.Errorf("result document: no ErrorStatus")
	}
	if v := *d.ErrorStatus; v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 { // as an int64 takes it
		return nil, fmt.Errorf("result document: ErrorStatus %v is not an integer", v)
	}
	var samples []family.Sample
	resultSource(d, l)(func(s family.Sample) { samples = append(samples, s) })
	return family.WriteText(samples), nil
}

// WriteResultTextfile writes doc's textfile to path atomically (a
// temporary file in the same directory, renamed over path), so the
// collector never reads half a file.
func WriteResultTextfile(path string, doc []byte, l ResultLabels) error {
	if err := CheckTextfileName(path); err != nil {
		return err
	}
	b, err := ResultTextfile(doc, l)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644)
}

// Families are the families of a result textfile, each declared once:
// udpstp_test_<name>, labelled by server and direction, and those of
// Summary and AtMax by result too ("summary", "max").
var (
	famErrorStatus = gauge("error_status", "OB-UDPST's ErrorStatus of the last test: 0 success, 1-49 a warning with complete results, 50 and above a failure")
	famSuccess     = gauge("success", "1 if the last test succeeded (ErrorStatus 0), else 0")
	famStart       = gauge("start_timestamp_seconds", "When the last test's Data Phase began (BOMTime), as a Unix time")
	famEnd         = gauge("end_timestamp_seconds", "When the last test ended (EOMTime), as a Unix time")
	famInterval    = gauge("interval_seconds", "The test time the server granted the last test (TestInterval)")

	famCapacity    = gauge("capacity_bytes_per_second", "Capacity"+what+", per layer (bytes per second)", "result", "layer")
	famDelivered   = gauge("delivered_ratio", "Share of the load delivered"+what, "result")
	famLoss        = gauge("loss_ratio", "Loss ratio"+what, "result")
	famReordered   = gauge("reordered_ratio", "Reordered ratio"+what, "result")
	famReplicated  = gauge("replicated_ratio", "Replicated ratio"+what, "result")
	famCE          = gauge("ce_ratio", "Share of the delivered datagrams marked ECN CE"+what, "result")
	famLost        = gauge("lost_datagrams", "Datagrams lost"+what, "result")
	famReorderedN  = gauge("reordered_datagrams", "Datagrams reordered"+what, "result")
	famReplicatedN = gauge("replicated_datagrams", "Datagrams replicated"+what, "result")
	famCEN         = gauge("ce_datagrams", "Delivered datagrams marked ECN CE"+what, "result")
	famPDV         = gauge("pdv_seconds", "Packet delay variation (min, avg, max)"+what, "result", "stat")
	famRTTVar      = gauge("rtt_variation_seconds", "Round-trip time above the least one (min, avg, max)"+what, "result", "stat")
	famMinOWD      = gauge("min_one_way_delay_seconds", "Least one-way delay, with the clocks' difference,"+what, "result")
	famMinRTT      = gauge("min_rtt_seconds", "Least round-trip time"+what, "result")
	famActive      = gauge("active_connections", "Test Connections active"+what, "result")
	famSubInts     = gauge("sub_intervals", "Sub-Intervals"+what, "result")

	Families = []*family.Family{famErrorStatus, famSuccess, famStart, famEnd, famInterval,
		famCapacity, famDelivered, famLoss, famReordered, famReplicated, famCE, famLost, famReorderedN,
		famReplicatedN, famCEN, famPDV, famRTTVar, famMinOWD, famMinRTT, famActive, famSubInts}
)

const what = " of the last test's Summary (result=\"summary\") or of its Sub-Interval at the maximum (result=\"max\")"

// gauge declares the gauge udpstp_test_<name> with the labels every
// textfile gauge has and more.
func gauge(name, help string, more ...string) *family.Family {
	return &family.Family{Name: "udpstp_test_" + name, Help: help, Type: family.Gauge,
		Labels: append([]string{"server", "direction"}, more...)}
}

// figures are the figures of Summary or AtMax the textfile exports.
type figures struct {
	result                                     string
	capacity                                   []layerCapacity
	delivered, loss, reordered, replicated, ce *float64
	lost, reorderedN, replicatedN, ceN         *float64
	pdv, rttVar                                [3]*float64 // min, avg, max
	minOWD, minRTT, active, subIntervals       *float64
}

// layerCapacity is a capacity at one layer, named as OB-UDPST's text
// output names it; Summary has the IP layer only.
type layerCapacity struct {
	layer string
	mbps  *float64
}

func summaryFigures(s *resultdoc.Summary) figures {
	return figures{result: "summary",
		capacity:  []layerCapacity{{"L3/IP", s.IPLayerCapacitySummary}},
		delivered: s.DeliveredPercent, loss: s.LossRatioSummary, reordered: s.ReorderedRatioSummary,
		replicated: s.ReplicatedRatioSummary, ce: s.CEPercentOfDelivered,
		lost: s.LossCount, reorderedN: s.ReorderedCount, replicatedN: s.ReplicatedCount, ceN: s.CECountOfDelivered,
		pdv: [3]*float64{s.PDVMin, s.PDVAvg, s.PDVMax}, rttVar: [3]*float64{s.RTTMin, s.RTTAvg, s.RTTMax},
		minOWD: s.MinOnewayDelaySummary, minRTT: s.MinRTTSummary, active: s.ActiveConnections, subIntervals: s.Intervals,
	}
}

func maxFigures(m *resultdoc.Maximum) figures {
	return figures{result: "max",
		capacity: []layerCapacity{{"L3/IP", m.MaxIPLayerCapacity}, {"L2/Eth", m.MaxETHCapacityNoFCS},
			{"L1/Eth", m.MaxETHCapacityWithFCS}, {"L1/Eth+VLAN", m.MaxETHCapacityWithFCSVLAN}},
		delivered: m.DeliveredPercent, loss: m.LossRatioAtMax, reordered: m.ReorderedRatioAtMax,
		replicated: m.ReplicatedRatioAtMax, ce: m.CEPercentOfDelivered,
		lost: m.LossCount, reorderedN: m.ReorderedCount, replicatedN: m.ReplicatedCount, ceN: m.CECountOfDelivered,
		pdv: [3]*float64{m.PDVMin, m.PDVAvg, m.PDVMax}, rttVar: [3]*float64{m.RTTMin, m.RTTAvg, m.RTTMax},
		minOWD: m.MinOnewayDelayAtMax, minRTT: m.MinRTTAtMax, active: m.ActiveConnections, subIntervals: m.Intervals,
	}
}

func resultSource(d *resultdoc.Test, l ResultLabels) func(emit func(family.Sample)) {
	return func(emit func(family.Sample)) {
		set := func(f *family.Family, v float64, more ...string) {
			emit(family.Sample{Family: f, Values: append([]string{l.Server, l.Direction}, more...), Value: v})
		}
		status := *d.ErrorStatus
		set(famErrorStatus, status)
		set(famSuccess, b2f(status == 0))
		o := d.Output
		if o == nil {
			return // no Test Connection was activated: the status is all there is
		}
		if t, ok := parseTime(o.BOMTime); ok {
			set(famStart, t)
		}
		if t, ok := parseTime(o.EOMTime); ok {
			set(famEnd, t)
		}
		set(famInterval, resultdoc.Num(o.TestInterval))
		var results []figures
		if o.Summary != nil {
			results = append(results, summaryFigures(o.Summary))
		}
		if o.AtMax != nil {
			results = append(results, maxFigures(o.AtMax))
		}
		for _, r := range results {
			num := func(f *family.Family, v *float64, scale float64, more ...string) {
				if v != nil {
					set(f, *v*scale, append([]string{r.result}, more...)...)
				}
			}
			for _, c := range r.capacity {
				num(famCapacity, c.mbps, bytesPerSecond, c.layer)
			}
			num(famDelivered, r.delivered, 0.01)
			num(famLoss, r.loss, 1)
			num(famReordered, r.reordered, 1)
			num(famReplicated, r.replicated, 1)
			num(famCE, r.ce, 0.01)
			num(famLost, r.lost, 1)
			num(famReorderedN, r.reorderedN, 1)
			num(famReplicatedN, r.replicatedN, 1)
			num(famCEN, r.ceN, 1)
			for i, stat := range []string{"min", "avg", "max"} {
				num(famPDV, r.pdv[i], 1, stat)
				num(famRTTVar, r.rttVar[i], 1, stat)
			}
			num(famMinOWD, r.minOWD, 1)
			num(famMinRTT, r.minRTT, 1)
			num(famActive, r.active, 1)
			num(famSubInts, r.subIntervals, 1)
		}
	}
}

// parseTime reads OB-UDPST's UTC timestamps as Unix seconds.
func parseTime(s string) (float64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return float64(t.UnixNano()) / 1e9, true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
