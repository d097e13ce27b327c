package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// walk visits ours and the golden tree together; objects must have the
// same keys in the same order and arrays the same length. leaf gets every
// pair of leaves with the key it is under.
func walk(t *testing.T, path string, ours, gold jval, leaf func(path, key string, ours, gold jval)) {
	t.Helper()
	switch o := ours.(type) {
	case *jobj:
		g, ok := gold.(*jobj)
		if !ok {
			t.Errorf("%s: object, golden has %T", path, gold)
			return
		}
		if strings.Join(o.keys, ",") != strings.Join(g.keys, ",") {
			t.Errorf("%s: keys differ\n ours   %v\n golden %v", path, o.keys, g.keys)
			return
		}
		for i, k := range o.keys {
			p := path + "." + k
			if _, isObj := o.vals[i].(*jobj); !isObj {
				if _, isArr := o.vals[i].(jarr); !isArr {
					leaf(p, k, o.vals[i], g.vals[i])
					continue
				}
			}
			walk(t, p, o.vals[i], g.vals[i], leaf)
		}
	case jarr:
		g, ok := gold.(jarr)
		if !ok {
			t.Errorf("%s: array, golden has %T", path, gold)
			return
		}
		if len(o) != len(g) {
			t.Errorf("%s: %d elements, golden %d", path, len(o), len(g))
			return
		}
		for i := range o {
			walk(t, path+"["+string(rune('0'+i%10))+"]", o[i], g[i], leaf)
		}
	default:
		leaf(path, "", ours, gold)
	}
}

// leafText is a leaf as it prints (ours) or as the file has it (parsed).
func leafText(v jval) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return string(render(v, false))
}

// checkKind requires the golden leaf to be of the kind and number class
// of ours: a string, an integer, or a number that our precision prints
// exactly as the golden file has it.
func checkKind(t *testing.T) func(path, key string, ours, gold jval) {
	return func(path, key string, ours, gold jval) {
		t.Helper()
		switch o := ours.(type) {
		case jstr:
			if _, ok := gold.(jstr); !ok {
				t.Errorf("%s: string, golden %T", path, gold)
			}
		case jint:
			n, ok := gold.(json.Number)
			if !ok || strings.ContainsAny(string(n), ".eE") {
				t.Errorf("%s: integer, golden %v", path, gold)
			}
		case jnum:
			n, ok := gold.(json.Number)
			if !ok {
				t.Errorf("%s: number, golden %T", path, gold)
				return
			}
			f, _ := n.Float64()
			if formatNumber(f, o.p) != string(n) {
				t.Errorf("%s: golden %s is not printed with precision %d (would be %s)", path, n, o.p, formatNumber(f, o.p))
			}
		}
	}
}

// fakeResult is a plausible Sub-Interval of connection conn.
func fakeResult(k, conn int, ce bool) dataphase.SubIntervalResult {
	d := uint32(1000*k*k + 37*conn + 1)
	r := dataphase.SubIntervalResult{
		Seq: uint32(k),
		Stats: dataphase.SubIntervalStats{
			RxDatagrams: d, RxBytes: uint64(d) * 1222, DeltaTime: uint32(1000000 + 731*k - 250*conn),
			SeqErrLoss: uint32(k % 3), SeqErrOoo: uint32((k + conn) % 2), SeqErrDup: uint32(k % 4 / 3),
			DelayVarMin: uint32(k % 2), DelayVarMax: uint32(2 + k), DelayVarSum: uint32(3 * k * 10), DelayVarCnt: 10,
			RTTVarMin: 0, RTTVarMax: uint32(k % 3), AccumTime: uint32(1000 * k),
		},
		ClockDeltaMin: int32(-k), ClockDeltaSet: true, RTTMinimum: uint32(conn % 2),
		RTTSum: uint32(k), RTTCnt: 20,
		Wall: 1796009000e9 + int64(k)*1e9 + int64(conn)*1e6,
	}
	if ce {
		r.CECount = uint32(k)
	}
	return r
}

// TestGoldenJSONShape produces, for every OB-UDPST client.json, a document
// from a fake run of the same shape (same failure or success, same number
// of connections, hosts and Sub-Intervals, same options) and compares it
// key by key with the golden one: same keys in the same order, same kinds,
// and numbers of the same class (integer, fixed decimals, %g). Runs that
// never activated have no varying values, so their bytes must match too.
func TestGoldenJSONShape(t *testing.T) {
	for name, path := range goldenDocs(t) {
		t.Run(name, func(t *testing.T) {
			want, doc := readDoc(t, path)
			var out bytes.Buffer
			inV, activated := doc.lookup("Input")
			if !activated {
				status, msg2 := fInt(t, doc, "ErrorStatus"), fStr(t, doc, "ErrorMessage2")
				c := New(&out, Options{Format: FormatJSONFormatted, Connections: 1, MinConnections: 1})
				if status == StatusMinConns { // a timeout warning, then too few connections
					c.Warning(1, msg2)
				} else {
					c.Error(status, msg2)
				}
				c.ConnEnded(false)
				if !c.CheckMinConnections() {
					t.Fatal("CheckMinConnections = false with no active connection")
				}
				if err := c.Finish(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Errorf("document differs:\n%s", firstDiff(out.Bytes(), want))
				}
				if c.ErrorStatus() != status {
					t.Errorf("ErrorStatus %d, want %d", c.ErrorStatus(), status)
				}
				return
			}
			outObj := fObj(t, doc, "Output")
			info := infoFromInput(t, inV.(*jobj), outObj)
			c := fakeCollector(t, &out, info, len(field(t, outObj, "IncrementalResult").(jarr)))
			// By default exactly OB-UDPST's keys; with Options.Extensions
			// the same, then our own key last.
			ours := c.res.document(FormatJSONFormatted, false)
			walk(t, name, ours, doc, checkKind(t))
			walk(t, name, withoutExtension(t, c.res.document(FormatJSONFormatted, true)), doc, checkKind(t))
			if c.ErrorStatus() != fInt(t, doc, "ErrorStatus") {
				t.Errorf("ErrorStatus %d, golden %d", c.ErrorStatus(), fInt(t, doc, "ErrorStatus"))
			}
			// What we wrote is that document, and it parses.
			if v, err := parseOrdered(out.Bytes()); err != nil {
				t.Errorf("our output does not parse: %v", err)
			} else {
				walk(t, name, ours, v.(*jobj), func(p, _ string, o, g jval) {
					if leafText(o) != leafText(g) {
						t.Errorf("%s: printed %v, tree %s", p, g, leafText(o))
					}
				})
			}
		})
	}
}

// withoutExtension is doc without our own top-level key, which must come
// after every OB-UDPST key.
func withoutExtension(t *testing.T, doc *jobj) *jobj {
	t.Helper()
	for i, k := range doc.keys {
		if k == ExtensionKey {
			if i != len(doc.keys)-1 {
				t.Errorf("%q is not the last key: %v", ExtensionKey, doc.keys)
			}
			return &jobj{keys: doc.keys[:i:i], vals: doc.vals[:i:i]}
		}
	}
	return doc
}

// TestGoldenJSONFromCaptures replays the JSON run's captured Status PDUs
// (pdus_jsonrun.jsonl belongs to client.json) through the Collector and
// compares every value of the document with OB-UDPST's, except the wall
// times, and downstream the RTT averages (not in the capture).
func TestGoldenJSONFromCaptures(t *testing.T) {
	for _, sc := range golden.Scenarios(t) {
		pdus := sc.PDUs(t, "pdus_jsonrun.jsonl")
		path := filepath.Join(sc.Path, "client.json")
		if pdus == nil {
			continue
		}
		_, doc := readDoc(t, path)
		if _, ok := doc.lookup("Input"); !ok {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			info := infoFromInput(t, fObj(t, doc, "Input"), fObj(t, doc, "Output"))
			var out bytes.Buffer
			c := New(&out, Options{Format: FormatJSONFormatted, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
			c.Activate(info)
			for _, r := range statusResults(t, pdus, info.Upstream, info.CEThresh > 0) {
				c.Add(0, r)
			}
			c.ConnEnded(true)
			if err := c.Finish(); err != nil {
				t.Fatal(err)
			}
			skip := map[string]bool{"BOMTime": true, "EOMTime": true, "TimeOfSubInterval": true, "TimeOfMax": true}
			if !info.Upstream {
				skip["RTTAvg"] = true
			}
			compared := 0
			walk(t, sc.Name, c.res.document(FormatJSONFormatted, false), doc, func(p, key string, o, g jval) {
				if skip[key] {
					return
				}
				compared++
				gt := leafText(g)
				if leafText(o) != gt {
					t.Errorf("%s = %s, OB-UDPST %s", p, leafText(o), gt)
				}
			})
			t.Logf("%d values compared", compared)
		})
	}
}
