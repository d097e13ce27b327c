package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// parseOrdered reads JSON into the document types, keeping key order and
// every number's text (as json.Number), so golden files can be compared
// key by key and rebuilt byte for byte.
func parseOrdered(b []byte) (jval, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return parseValue(d)
}

func parseValue(d *json.Decoder) (jval, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			o := &jobj{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				val, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				o.add(k.(string), val)
			}
			_, err := d.Token()
			return o, err
		case '[':
			a := jarr{}
			for d.More() {
				val, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				a = append(a, val)
			}
			_, err := d.Token()
			return a, err
		}
	case string:
		return jstr(v), nil
	case json.Number:
		return v, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// goldenDocs lists every client.json of the reference data, multi-connection
// scenarios included (they have no meta.json).
func goldenDocs(t *testing.T) map[string]string {
	dir := golden.Require(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "client.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no client.json under %s", dir)
	}
	out := map[string]string{}
	for _, f := range files {
		out[filepath.Base(filepath.Dir(f))] = f
	}
	return out
}

// forEachActivated runs fn, in a subtest named after the capture, for
// every OB-UDPST client.json with an Input: its document, its TestInfo and
// its number of Sub-Intervals.
func forEachActivated(t *testing.T, fn func(t *testing.T, doc *jobj, info TestInfo, n int)) {
	t.Helper()
	for name, path := range goldenDocs(t) {
		_, doc := readDoc(t, path)
		inV, activated := doc.lookup("Input")
		if !activated {
			continue
		}
		t.Run(name, func(t *testing.T) {
			outObj := fObj(t, doc, "Output")
			info := infoFromInput(t, inV.(*jobj), outObj)
			fn(t, doc, info, len(field(t, outObj, "IncrementalResult").(jarr)))
		})
	}
}

func readDoc(t *testing.T, path string) ([]byte, *jobj) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = ourIdentity(t, b)
	v, err := parseOrdered(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b, v.(*jobj)
}

// ourIdentity is a reference document with udpstp's software version where
// OB-UDPST writes its own: the one value udpstp deliberately writes
// differently (softwareVersion). A reference that has the key with another
// value fails the test.
func ourIdentity(t *testing.T, b []byte) []byte {
	t.Helper()
	for _, key := range []string{"\"SoftwareVersion\":\t", "\"software_version\": "} {
		if !bytes.Contains(b, []byte(key)) {
			continue
		}
		theirs, ours := fmt.Appendf(nil, "%s%q", key, obudpstVersion), fmt.Appendf(nil, "%s%q", key, softwareVersion())
		if !bytes.Contains(b, theirs) {
			t.Fatalf("reference has %s but not OB-UDPST %s", key, obudpstVersion)
		}
		b = bytes.ReplaceAll(b, theirs, ours)
	}
	return b
}

// lookup finds key k of a parsed document.
func (o *jobj) lookup(k string) (v jval, ok bool) {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

// Accessors for parsed documents; a missing key or a wrong type fails.

func field(t *testing.T, o *jobj, k string) jval {
	t.Helper()
	v, ok := o.lookup(k)
	if !ok {
		t.Fatalf("key %q missing", k)
	}
	return v
}

func fStr(t *testing.T, o *jobj, k string) string {
	t.Helper()
	return string(field(t, o, k).(jstr))
}

func fNum(t *testing.T, o *jobj, k string) float64 {
	t.Helper()
	f, err := field(t, o, k).(json.Number).Float64()
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return f
}

func fInt(t *testing.T, o *jobj, k string) int {
	t.Helper()
	n, err := strconv.Atoi(string(field(t, o, k).(json.Number)))
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return n
}

func fU32(t *testing.T, o *jobj, k string) uint32 { t.Helper(); return uint32(fInt(t, o, k)) }

func fTime(t *testing.T, o *jobj, k string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, fStr(t, o, k))
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	return tm.UnixNano()
}

func fObj(t *testing.T, o *jobj, k string) *jobj { t.Helper(); return field(t, o, k).(*jobj) }

// infoFromInput rebuilds the TestInfo that produces a golden "Input" (and
// the Output's TestInterval).
func infoFromInput(t *testing.T, in, out *jobj) TestInfo {
	t.Helper()
	info := TestInfo{
		Upstream:       fStr(t, in, "Role") == "Sender",
		MCIdent:        fInt(t, in, "ID"),
		ServerPort:     fInt(t, in, "Port"),
		ClientAddr:     fStr(t, in, "ClientIPAddress"),
		ClientPort:     fInt(t, in, "ClientPort"),
		Jumbo:          fInt(t, in, "JumboFramesPermitted") == 1,
		ConnMax:        fInt(t, in, "NumberOfConnections"),
		ConnMin:        fInt(t, in, "MinNumOfConnections"),
		DSCPECN:        fInt(t, in, "DSCP")<<2 | fInt(t, in, "ECN"),
		CEThresh:       fInt(t, in, "CEThreshold"),
		IPv6:           fInt(t, in, "UDPPayloadMin") == minPayload-ipv6Extra,
		RandomPayload:  fStr(t, in, "UDPPayloadContent") == "random",
		UseOWD:         fInt(t, in, "IPDVEnable") == 1,
		MaxBandwidth:   fInt(t, in, "MaxRequiredBandwidth"),
		Bimodal:        fInt(t, in, "NumberFirstModeTestSubIntervals"),
		SuppCount:      fInt(t, in, "NumberFirstModeSuppSubIntervals"),
		SubIntPeriod:   fInt(t, in, "TestSubInterval"),
		TrialInt:       fInt(t, in, "StatusFeedbackInterval"),
		SeqErrThresh:   fInt(t, in, "SeqErrThresh"),
		IgnoreOooDup:   fInt(t, in, "ReordDupIgnoreEnable") == 1,
		LowThresh:      fInt(t, in, "LowerThresh"),
		UpperThresh:    fInt(t, in, "UpperThresh"),
		HighSpeedDelta: fInt(t, in, "HighSpeedDelta"),
		SlowAdjThresh:  fInt(t, in, "SlowAdjThresh"),
		TestIntTime:    fInt(t, out, "TestInterval"),
	}
	v6 := 0
	if info.IPv6 {
		v6 = ipv6Extra
	}
	info.TraditionalMTU = fInt(t, in, "UDPPayloadDefault") == tradPayload-v6
	switch fStr(t, in, "ProtocolVersion") {
	case "IPv4":
		info.Family = dataphase.FamilyV4
	case "IPv6":
		info.Family = dataphase.FamilyV6
	}
	if fStr(t, in, "RateAdjAlgorithm") == "C" {
		info.Algorithm = dataphase.AlgorithmC
	}
	start, fixed := fInt(t, in, "StartSendingRateIndex"), fInt(t, in, "SendingRateIndex")
	switch {
	case fStr(t, in, "TestType") == "Fixed":
		info.SRIndex = uint16(fixed)
	case start == 0: // "<Auto>" (-I @0 prints the same)
		info.SRIndex = dataphase.AutoRateIndex
	default:
		info.SRIndex, info.SRStart = uint16(start), true
	}
	for _, h := range field(t, in, "HostList").(jarr) {
		ho := h.(*jobj)
		info.Hosts = append(info.Hosts, Host{Name: fStr(t, ho, "Host"), Addr: fStr(t, ho, "HostIPAddress"), ControlPort: fInt(t, ho, "ControlPort")})
	}
	return info
}

func qualityFrom(t *testing.T, o *jobj, sfx string) quality {
	t.Helper()
	return quality{
		Delivered: fNum(t, o, "DeliveredPercent"), LossRatio: fNum(t, o, "LossRatio"+sfx),
		ReorderedRatio: fNum(t, o, "ReorderedRatio"+sfx), ReplicatedRatio: fNum(t, o, "ReplicatedRatio"+sfx),
		CEPercent: fNum(t, o, "CEPercentOfDelivered"),
		Loss:      fU32(t, o, "LossCount"), Ooo: fU32(t, o, "ReorderedCount"), Dup: fU32(t, o, "ReplicatedCount"),
		CE:     fU32(t, o, "CECountOfDelivered"),
		PDVMin: fNum(t, o, "PDVMin"), PDVAvg: fNum(t, o, "PDVAvg"), PDVMax: fNum(t, o, "PDVMax"), PDVRange: fNum(t, o, "PDVRange"+sfx),
		RTTMin: fNum(t, o, "RTTMin"), RTTAvg: fNum(t, o, "RTTAvg"), RTTMax: fNum(t, o, "RTTMax"), RTTRange: fNum(t, o, "RTTRange"+sfx),
	}
}

// resultsFromDoc fills the results model from a parsed OB-UDPST document,
// the inverse of results.document.
func resultsFromDoc(t *testing.T, doc *jobj) *results {
	t.Helper()
	r := &results{status: fInt(t, doc, "ErrorStatus"), msg: fStr(t, doc, "ErrorMessage"), msg2: fStr(t, doc, "ErrorMessage2")}
	in, hasIn := doc.lookup("Input")
	ov, hasOut := doc.lookup("Output")
	if !hasOut {
		return r
	}
	out := ov.(*jobj)
	if !hasIn {
		t.Fatal("Output without Input in a jsonf document")
	}
	info := infoFromInput(t, in.(*jobj), out)
	r.info = &info
	r.bom, r.eom = fTime(t, out, "BOMTime"), fTime(t, out, "EOMTime")
	if v, ok := out.lookup("IncrementalResult"); ok {
		for _, e := range v.(jarr) {
			o := e.(*jobj)
			r.intervals = append(r.intervals, intervalResult{
				Interval: fInt(t, o, "Interval"), Seconds: fNum(t, o, "Seconds"), Wall: fTime(t, o, "TimeOfSubInterval"),
				Active: fInt(t, o, "ActiveConnections"), Q: qualityFrom(t, o, ""),
				Capacity: fNum(t, o, "IPLayerCapacity"), MinOneway: fNum(t, o, "MinOnewayDelay"),
			})
		}
	}
	summary := func(o *jobj) summaryResult {
		return summaryResult{Mode: fInt(t, o, "Mode"), Intervals: fInt(t, o, "Intervals"), Active: fInt(t, o, "ActiveConnections"),
			Q: qualityFrom(t, o, "Summary"), Capacity: fNum(t, o, "IPLayerCapacitySummary"),
			MinOneway: fNum(t, o, "MinOnewayDelaySummary"), MinRTT: fNum(t, o, "MinRTTSummary")}
	}
	atMax := func(o *jobj) maxResult {
		return maxResult{Mode: fInt(t, o, "Mode"), Intervals: fInt(t, o, "Intervals"), Wall: fTime(t, o, "TimeOfMax"),
			Active: fInt(t, o, "ActiveConnections"), Q: qualityFrom(t, o, "AtMax"), Capacity: fNum(t, o, "MaxIPLayerCapacity"),
			L2: fNum(t, o, "MaxETHCapacityNoFCS"), L1: fNum(t, o, "MaxETHCapacityWithFCS"),
			L0: fNum(t, o, "MaxETHCapacityWithFCSVLAN"), MinOneway: fNum(t, o, "MinOnewayDelayAtMax")}
	}
	if _, ok := out.lookup("Summary"); ok {
		r.complete = true
		r.summary = append(r.summary, summary(fObj(t, out, "Summary")))
		r.max = append(r.max, atMax(fObj(t, out, "AtMax")))
		if v, ok := out.lookup("ModalSummary"); ok {
			r.modalKeys = true
			for _, e := range v.(jarr) {
				r.summary = append(r.summary, summary(e.(*jobj)))
			}
			for _, e := range field(t, out, "ModalResult").(jarr) {
				r.max = append(r.max, atMax(e.(*jobj)))
			}
			r.bleached = fInt(t, out, "ECNBleachingDetected") == 1
		}
	}
	return r
}

// statusResults turns a capture's Status PDUs of one direction into the
// Sub-Interval results a client would have produced, as OB-UDPST 9.0.0's
// client does:
//
//   - upstream (s2c, the server's Status PDUs): the RTT variation sample of
//     every Status PDU that is not NODEL is accumulated; a Sub-Interval is
//     output when subIntSeqNo changes, with the accumulated RTT samples,
//     which are then reset; clockDeltaMin and rttMinimum are the PDU's. A
//     Status PDU with a stop action ends testing: nothing from it or later
//     is output.
//   - downstream (c2s, the client's own Status PDUs): the client ends a
//     Sub-Interval right after sending a Status PDU, in the same timer tick,
//     and outputs it; the next Status PDU carries it. So the
//     Sub-Interval values are exact, clockDeltaMin and rttMinimum at output
//     time are those of the Status PDU sent just before, and the RTT
//     variation samples (taken from Load PDUs) are not in the capture:
//     RTTSum/RTTCnt stay 0.
func statusResults(t *testing.T, pdus []golden.PDU, upstream bool, ceOn bool) []dataphase.SubIntervalResult {
	t.Helper()
	dir := "c2s"
	if upstream {
		dir = "s2c"
	}
	var out []dataphase.SubIntervalResult
	var last, rttSum, rttCnt uint32
	var prev dataphase.StatusPDU // downstream: the one sent when the Sub-Interval ended
	for _, p := range pdus {
		if p.Dir != dir || p.ID != "feed" {
			continue
		}
		var s dataphase.StatusPDU
		if err := s.Decode(p.Bytes, false); err != nil {
			t.Fatalf("status PDU at t=%v: %v", p.T, err)
		}
		if upstream {
			if s.TestAction != 0 {
				break
			}
			if s.RTTVarSample != dataphase.NoDelay {
				rttSum += s.RTTVarSample
				rttCnt++
			}
		}
		minima := s
		if !upstream {
			minima, prev = prev, s
		}
		if s.SubIntSeqNo == last {
			continue
		}
		last = s.SubIntSeqNo
		r := dataphase.SubIntervalResult{
			Seq: s.SubIntSeqNo, Stats: s.SubInt, ClockDeltaMin: minima.ClockDeltaMin, ClockDeltaSet: true,
			RTTMinimum: minima.RTTMinimum, RTTSum: rttSum, RTTCnt: rttCnt,
			Wall: int64(s.SpduTimeSec)*1e9 + int64(s.SpduTimeNsec),
		}
		if ceOn {
			r.CECount = s.SisSavCECount
			r.Bleached = s.ECNFlags&dataphase.ECNFlagBleached != 0
		}
		out = append(out, r)
		rttSum, rttCnt = 0, 0
	}
	return out
}

// fixedClock is a deterministic Options.Now.
func fixedClock(start int64) func() time.Time {
	n := start
	return func() time.Time { n += 1e6; return time.Unix(0, n) }
}
