package textfile

// A client's result as a node_exporter textfile: what a test every hour
// from a systemd timer leaves for the node_exporter of its host to export.
// It is made from the run's JSON document (OB-UDPST's schema, as report
// writes it for --output), so the two never disagree, and it is written
// whatever the run's outcome: a failed test still says so.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/udpstp/udpstp/report"
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

// The capacity layers of OB-UDPST's AtMax, named as its text output names
// them, with their JSON keys; Summary has the IP layer only.
var capacityLayers = []struct{ layer, maxKey string }{
	{"L3/IP", "MaxIPLayerCapacity"},
	{"L2/Eth", "MaxETHCapacityNoFCS"},
	{"L1/Eth", "MaxETHCapacityWithFCS"},
	{"L1/Eth+VLAN", "MaxETHCapacityWithFCSVLAN"},
}

// resultDoc is what the textfile takes from the JSON document.
type resultDoc struct {
	Output *struct {
		BOMTime, EOMTime string
		TestInterval     float64
		Summary, AtMax   map[string]any
	}
	ErrorStatus  *int
	ErrorMessage string
}

// bytesPerSecond converts OB-UDPST's Mbps.
const bytesPerSecond = 1e6 / 8

// ResultTextfile renders doc, a client's JSON result, as textfile content
// in the Prometheus text format (format.go).
func ResultTextfile(doc []byte, l ResultLabels) ([]byte, error) {
	var d resultDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("result document: %w", err)
	}
	if d.ErrorStatus == nil {
		return nil, fmt.Errorf("result document: no ErrorStatus")
	}
	var samples []sample
	resultSource(&d, l)(func(s sample) { samples = append(samples, s) })
	return render(samples), nil
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
	return report.WriteFileAtomic(path, b, 0o644)
}

func resultSource(d *resultDoc, l ResultLabels) func(emit func(sample)) {
	return func(emit func(sample)) {
		base := []label{{"server", l.Server}, {"direction", l.Direction}}
		with := func(more ...label) []label { return append(append([]label(nil), base...), more...) }
		gauge := func(name, help string, v float64, more ...label) {
			emit(sample{Name: "udpstp_test_" + name, Help: help, Labels: with(more...), Value: v})
		}
		status := *d.ErrorStatus
		gauge("error_status", "OB-UDPST's ErrorStatus of the last test: 0 success, 1-49 a warning with complete results, 50 and above a failure",
			float64(status))
		gauge("success", "1 if the last test succeeded (ErrorStatus 0), else 0", b2f(status == 0))
		o := d.Output
		if o == nil {
			return // no Test Connection was activated: the status is all there is
		}
		if t, ok := parseTime(o.BOMTime); ok {
			gauge("start_timestamp_seconds", "When the last test's Data Phase began (BOMTime), as a Unix time", t)
		}
		if t, ok := parseTime(o.EOMTime); ok {
			gauge("end_timestamp_seconds", "When the last test ended (EOMTime), as a Unix time", t)
		}
		gauge("interval_seconds", "The test time the server granted the last test (TestInterval)", o.TestInterval)
		for _, r := range []struct {
			result string
			m      map[string]any
			sfx    string // OB-UDPST's suffix of the ratio and range keys
		}{{"summary", o.Summary, "Summary"}, {"max", o.AtMax, "AtMax"}} {
			if r.m == nil {
				continue
			}
			res := label{"result", r.result}
			num := func(name, help, key string, scale float64, more ...label) {
				if v, ok := r.m[key].(float64); ok {
					gauge(name, help, v*scale, append([]label{res}, more...)...)
				}
			}
			const what = " of the last test's Summary (result=\"summary\") or of its Sub-Interval at the maximum (result=\"max\")"
			if r.result == "summary" {
				num("capacity_bytes_per_second", "Capacity"+what+", per layer (bytes per second)", "IPLayerCapacitySummary",
					bytesPerSecond, label{"layer", capacityLayers[0].layer})
			} else {
				for _, c := range capacityLayers {
					num("capacity_bytes_per_second", "Capacity"+what+", per layer (bytes per second)", c.maxKey, bytesPerSecond,
						label{"layer", c.layer})
				}
			}
			num("delivered_ratio", "Share of the load delivered"+what, "DeliveredPercent", 0.01)
			num("loss_ratio", "Loss ratio"+what, "LossRatio"+r.sfx, 1)
			num("reordered_ratio", "Reordered ratio"+what, "ReorderedRatio"+r.sfx, 1)
			num("replicated_ratio", "Replicated ratio"+what, "ReplicatedRatio"+r.sfx, 1)
			num("ce_ratio", "Share of the delivered datagrams marked ECN CE"+what, "CEPercentOfDelivered", 0.01)
			num("lost_datagrams", "Datagrams lost"+what, "LossCount", 1)
			num("reordered_datagrams", "Datagrams reordered"+what, "ReorderedCount", 1)
			num("replicated_datagrams", "Datagrams replicated"+what, "ReplicatedCount", 1)
			num("ce_datagrams", "Delivered datagrams marked ECN CE"+what, "CECountOfDelivered", 1)
			for _, s := range []string{"Min", "Avg", "Max"} {
				stat := label{"stat", strings.ToLower(s)}
				num("pdv_seconds", "Packet delay variation (min, avg, max)"+what, "PDV"+s, 1, stat)
				num("rtt_variation_seconds", "Round-trip time above the least one (min, avg, max)"+what, "RTT"+s, 1, stat)
			}
			num("min_one_way_delay_seconds", "Least one-way delay, with the clocks' difference,"+what, "MinOnewayDelay"+r.sfx, 1)
			num("min_rtt_seconds", "Least round-trip time"+what, "MinRTT"+r.sfx, 1)
			num("active_connections", "Test Connections active"+what, "ActiveConnections", 1)
			num("sub_intervals", "Sub-Intervals"+what, "Intervals", 1)
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
