package e2e

// -O and -E/-M in the network lab, udpstp and OB-UDPST side by side: the
// same export columns, the same text lines and JSON keys, and interface
// rates that are the client veth's own traffic.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// obudpstExportHeader is the first line of OB-UDPST 9.0.0's -O file
// (open_outputfile).
const obudpstExportHeader = "SeqNo,PayLoad,ECNValue,SrcTxTime,DstRxTime,OWD,IntfMbps,IntfMbpsAlt,RTTTxTime,RTTRxTime,RTTRespDelay,RTT,StatusLoss"

// exportFile is an -O file read back.
type exportFile struct {
	header string
	rows   [][]string
}

func readExport(t *testing.T, path string) exportFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("export file: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	f := exportFile{header: lines[0]}
	for _, l := range lines[1:] {
		f.rows = append(f.rows, strings.Split(l, ","))
	}
	return f
}

// shape says which of a row's 13 columns are set: "1111111111111" or,
// without an RTT sample, "1111111100000"; a malformed row says why.
func (f exportFile) shapes() map[string]int {
	s := map[string]int{}
	for _, r := range f.rows {
		if len(r) != 13 {
			s[fmt.Sprintf("%d columns", len(r))]++
			continue
		}
		var b strings.Builder
		for _, c := range r {
			if c == "" {
				b.WriteByte('0')
			} else {
				b.WriteByte('1')
			}
		}
		s[b.String()]++
	}
	return s
}

// textShape is a text line with every number replaced by N and runs of
// spaces by one: the shape two implementations' lines must share.
// A minus sign counts as part of a number after a space, a colon or a
// bracket ("Delay(ms): -3"), not between two ("30-90").
var (
	numberRun = regexp.MustCompile(`\b\d+(\.\d+)?(E[+-]\d+)?\b`)
	minusSign = regexp.MustCompile(`([ :\[])-(\d)`)
)

func textShape(line string) string {
	line = minusSign.ReplaceAllString(line, "$1$2")
	return strings.Join(strings.Fields(numberRun.ReplaceAllString(line, "N")), " ")
}

// reportShapes are the shapes of the report's lines from the test header
// on (the banners differ: they name the software).
func reportShapes(out string) []string {
	var s []string
	on := false
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, "Test Int(sec):") {
			on = true
		}
		if on && !strings.Contains(l, " to the microsecond: ") { // udpstp's own lines (report/fine.go)
			s = append(s, textShape(l))
		}
	}
	return s
}

// uxJSON is what the lab reads of a -E run's JSON.
type uxJSON struct {
	ErrorStatus int
	Input       struct {
		Interface              string
		InterfaceDeterminesMax int
	}
	Output struct {
		IncrementalResult []struct {
			IPLayerCapacity  float64
			InterfaceEthMbps float64
		}
		Summary struct{ InterfaceEthMbps float64 }
		AtMax   struct {
			InterfaceEthMbps   float64
			MaxIPLayerCapacity float64
		}
	}
}

// TestLabExportInterface runs, with udpstp and (UDPST_BIN) OB-UDPST on both
// ends of a lab, a fixed-rate downstream test twice: -E veth -M -O +file
// with JSON, and -E veth -O file with text. Each must show: the export's
// header and row shapes (per RTT sample; with '+' per Load PDU, the RTT
// columns empty where there is none), the interface rates in the rows and
// in the results, close to the test traffic at L2 (the veth counts
// Ethernet frames); -M's maximum the interface's; the text lines' shapes.
// OB-UDPST's files and lines are the reference for the shapes and counts.
func TestLabExportInterface(t *testing.T) {
	impls := labImpls(t)
	const secs, row = 5, 50 // row 50: 50 Mbit/s of 1250-byte IP packets
	type result struct {
		all, rtt exportFile
		js       uxJSON
		text     []string
	}
	res := make([]result, len(impls))
	for i, impl := range impls {
		l := netlab.New(t, netlab.Config{})
		labServer(t, l, impl, "-j")
		dir := t.TempDir()
		common := []string{"-d", "-j", "-I", fmt.Sprint(row), "-E", l.ClientDev}
		out, errs, code := labRun(t, l, impl, secs, append(common, "-M", "-f", "json", "-O", "+"+filepath.Join(dir, "all_#i.csv"))...)
		if err := json.Unmarshal([]byte(out), &res[i].js); err != nil || code != 0 || res[i].js.ErrorStatus != 0 {
			t.Fatalf("%s -E -M -O +: exit %d, %v: %.500s %s", impl.name, code, err, out, errs)
		}
		res[i].all = readExport(t, filepath.Join(dir, "all_0.csv"))
		out, errs, code = labRun(t, l, impl, secs, append(common, "-O", filepath.Join(dir, "rtt_#i.csv"))...)
		if code != 0 {
			t.Fatalf("%s -E -O: exit %d: %s %s", impl.name, code, out, errs)
		}
		res[i].rtt = readExport(t, filepath.Join(dir, "rtt_0.csv"))
		res[i].text = reportShapes(out)
		t.Logf("%s: export %d rows (+), %d rows; shapes %v / %v; RTT rows %s ... %s; text:\n%s", impl.name, len(res[i].all.rows), len(res[i].rtt.rows),
			res[i].all.shapes(), res[i].rtt.shapes(), strings.Join(res[i].rtt.rows[0], ","), strings.Join(res[i].rtt.rows[len(res[i].rtt.rows)-1], ","), out)
	}

	for i, impl := range impls {
		r := &res[i]
		t.Run(impl.name, func(t *testing.T) {
			if r.all.header != obudpstExportHeader || r.rtt.header != r.all.header {
				t.Errorf("export header %q", r.all.header)
			}
			full, noRTT := "1111111111111", "1111111100000"
			if s := r.rtt.shapes(); len(s) != 1 || s[full] == 0 {
				t.Errorf("without '+': row shapes %v, want RTT rows only", s)
			}
			if s := r.all.shapes(); len(s) != 2 || s[full] == 0 || s[noRTT] < 10*s[full] {
				t.Errorf("with '+': row shapes %v, want every Load PDU, few with an RTT sample", s)
			}
			// One RTT row per Status PDU (20 a second) the Load PDUs echo.
			if n := len(r.rtt.rows); n < 15*secs || n > 21*(secs+1) {
				t.Errorf("%d RTT rows in a %d s test", n, secs)
			}
			checkInterfaceRates(t, r.js, r.all)
			if r.js.Input.Interface != "veth-c" || r.js.Input.InterfaceDeterminesMax != 1 {
				t.Errorf("Input: Interface %q, InterfaceDeterminesMax %d", r.js.Input.Interface, r.js.Input.InterfaceDeterminesMax)
			}
			want := []string{
				"Downstream Test Int(sec): N, DelayVar Th(ms): N-N [RTT], Trial Int(ms): N, Ignore OoO/Dup: Enabled, Payload: zeroes,",
				"ID: N, SR Index: N, Cong. Th: N, HS Delta: N, SeqErr Th: N, Algo: B, Conn: N, DSCP+ECN: N, CE Th: N, [veth-c]",
			}
			for range secs {
				want = append(want, "Sub-Interval[N](sec): N, Delivered(%): N, Loss/OoO/Dup: N/N/N, OWDVar(ms): N/N/N, RTTVar(ms): N/N/N, Mbps(L3/IP): N [N]")
			}
			want = append(want,
				"Downstream Summary Delivered(%): N, Loss/OoO/Dup: N/N/N, OWDVar(ms): N/N/N, RTTVar(ms): N/N/N, Mbps(L3/IP): N [N]",
				"Downstream Minimum One-Way Delay(ms): N [w/clock diff], Round-Trip Time(ms): N, Active Connections: N",
				"Downstream Maximum Mbps(L3/IP): N [N], Mbps(L2/Eth): N, Mbps(L1/Eth): N, Mbps(L1/Eth+VLAN): N")
			if strings.Join(r.text, "\n") != strings.Join(want, "\n") {
				t.Errorf("text lines:\n%s\nwant the shapes\n%s", strings.Join(r.text, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	if len(impls) < 2 {
		return
	}
	ours, ob := &res[0], &res[1]
	if strings.Join(ours.text, "\n") != strings.Join(ob.text, "\n") {
		t.Errorf("text lines differ in shape:\nudpstp\n%s\nOB-UDPST\n%s", strings.Join(ours.text, "\n"), strings.Join(ob.text, "\n"))
	}
	if ours.all.header != ob.all.header {
		t.Errorf("export headers differ: %q, OB-UDPST %q", ours.all.header, ob.all.header)
	}
	for _, pair := range [][2]exportFile{{ours.rtt, ob.rtt}, {ours.all, ob.all}} {
		a, b := len(pair[0].rows), len(pair[1].rows)
		if float64(a) < 0.85*float64(b) || float64(a) > 1.15*float64(b) {
			t.Errorf("export rows: udpstp %d, OB-UDPST %d", a, b)
		}
		sa, sb := pair[0].shapes(), pair[1].shapes()
		if len(sa) != len(sb) {
			t.Errorf("export row shapes: udpstp %v, OB-UDPST %v", sa, sb)
		}
	}
}

// checkInterfaceRates: with -E, each Sub-Interval's InterfaceEthMbps is
// the client veth's received traffic, the test's at L2 (1264 bytes on the
// wire for each 1250-byte IP packet), within 5 % in the median of
// Sub-Intervals 2 and on (the first starts before the load does); the
// Summary is their average; -M's AtMax is the highest. The export's
// IntfMbps column carries the same rates after the first Sub-Interval.
func checkInterfaceRates(t *testing.T, js uxJSON, all exportFile) {
	t.Helper()
	subs := js.Output.IncrementalResult
	if len(subs) < 3 {
		t.Fatalf("%d Sub-Intervals", len(subs))
	}
	var ratios []float64
	sum, hi := 0.0, 0.0
	for i, s := range subs {
		sum += s.InterfaceEthMbps
		hi = max(hi, s.InterfaceEthMbps)
		if i > 0 && s.IPLayerCapacity > 0 {
			ratios = append(ratios, s.InterfaceEthMbps/(s.IPLayerCapacity*1264/1250))
		}
	}
	sort.Float64s(ratios)
	if m := ratios[len(ratios)/2]; m < 0.95 || m > 1.05 {
		t.Errorf("interface rate over the traffic's L2 rate: median %.3f of %v", m, ratios)
	}
	if avg := sum / float64(len(subs)); js.Output.Summary.InterfaceEthMbps < avg-0.02 || js.Output.Summary.InterfaceEthMbps > avg+0.02 {
		t.Errorf("Summary InterfaceEthMbps %.2f, the Sub-Intervals' average %.2f", js.Output.Summary.InterfaceEthMbps, avg)
	}
	if js.Output.AtMax.InterfaceEthMbps != hi {
		t.Errorf("-M: AtMax InterfaceEthMbps %.2f, the highest Sub-Interval's %.2f", js.Output.AtMax.InterfaceEthMbps, hi)
	}
	last := all.rows[len(all.rows)-1]
	if v, err := strconv.ParseFloat(last[6], 64); err != nil || v < 0.9*hi/1.05 || v > 1.1*hi {
		t.Errorf("the export's last IntfMbps %q, the interface's rates reach %.2f", last[6], hi)
	}
}
