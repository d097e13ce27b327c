package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// TestRunFailsBeforeTheTest: a result file, an export file or an interface
// that cannot be used ends the run before its first Setup Request, with
// ErrorStatus 75 and the reason in the report, instead of after the test.
func TestRunFailsBeforeTheTest(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o644)
	for _, c := range []struct {
		name string
		edit func(*control.ClientConfig)
		want string
	}{
		{"output in a missing directory", func(c *control.ClientConfig) { c.OutputFile = filepath.Join(dir, "no", "r.json") },
			"FOPEN ERROR: cannot create a file in " + filepath.Join(dir, "no") + "/: no such file or directory (--output)"},
		{"output through a file", func(c *control.ClientConfig) { c.OutputFile = filepath.Join(plain, "r.json") }, "not a directory (--output)"},
		{"output is a directory", func(c *control.ClientConfig) { c.OutputFile = dir }, "is a directory (--output)"},
		{"textfile is a directory", func(c *control.ClientConfig) { c.TextFile = dir }, "is a directory (--textfile)"},
		{"export in a missing directory", func(c *control.ClientConfig) { c.ExportFile = filepath.Join(dir, "no", "x_%Y.csv") },
			"no such file or directory (-O)"},
		{"export name shared by connections", func(c *control.ClientConfig) {
			c.ExportFile, c.ConnMin, c.ConnMax = filepath.Join(dir, "x.csv"), 2, 2
		}, "is the same for all 2 Test Connections: add #i or #d (-O)"},
		{"interface missing", func(c *control.ClientConfig) { c.Interface = "udpstp-none0" },
			"OPEN ERROR: no such file or directory (/sys/class/net/udpstp-none0/statistics/rx_bytes)"},
		{"interface name with a slash", func(c *control.ClientConfig) { c.Interface = "../lo" }, "'../lo' is not an interface name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := memnet.NewWire()
			srv := startServer(t, w, "127.0.0.1", 40000, nil)
			cfg := testConfig("127.0.0.1")
			c.edit(cfg)
			o := runOn(t, w, cfg, complete, nil)
			if o.status != 75 || o.doc["ErrorMessage"] != c.want && !strings.Contains(o.doc["ErrorMessage"].(string), c.want) {
				t.Errorf("status %d, message %q, want 75 and %q", o.status, o.doc["ErrorMessage"], c.want)
			}
			if errs := o.texts(EventError); len(errs) != 1 || !strings.Contains(errs[0], c.want) {
				t.Errorf("error events %q", errs)
			}
			if o.count(EventConnected) != 0 || srv.Snapshot().Counts[control.CountSetupAccepted] != 0 {
				t.Errorf("the test started: %+v", o.events)
			}
			if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
				t.Errorf("the check created the missing directory")
			}
		})
	}
	// A unique name per connection passes, and a writable result file's
	// check leaves nothing behind but the result.
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1")
	ok := t.TempDir()
	cfg.OutputFile, cfg.ExportFile = filepath.Join(ok, "r.json"), filepath.Join(ok, "x_#i.csv")
	if o := runOn(t, w, cfg, complete, nil); o.status != 0 {
		t.Fatalf("status %d: %s", o.status, o.out)
	}
	ents, _ := os.ReadDir(ok)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "r.json x_0.csv" {
		t.Errorf("files left: %v, want the result and the export", names)
	}
	head, _ := os.ReadFile(filepath.Join(ok, "x_0.csv"))
	if string(head) != exportHeader { // memnet's Data Phases receive nothing
		t.Errorf("export file %q", head)
	}
}

// fakeSysNet makes sysClassNet a directory with interface intf whose
// counters the returned function sets.
func fakeSysNet(t *testing.T, intf string) func(rx, tx uint64) {
	t.Helper()
	root := t.TempDir()
	old := sysClassNet
	sysClassNet = root
	t.Cleanup(func() { sysClassNet = old })
	stat := filepath.Join(root, intf, "statistics")
	os.MkdirAll(stat, 0o755)
	set := func(rx, tx uint64) {
		os.WriteFile(filepath.Join(stat, "rx_bytes"), []byte(strconv.FormatUint(rx, 10)+"\n"), 0o644)
		os.WriteFile(filepath.Join(stat, "tx_bytes"), []byte(strconv.FormatUint(tx, 10)+"\n"), 0o644)
	}
	set(1, 1)
	return set
}

// TestIfaceRates: the rate is the counter's bytes over the time between
// samples, the test's direction first (rx downstream, tx upstream); a
// counter reading 0 keeps the last value; a 32-bit wrap is a wrap.
func TestIfaceRates(t *testing.T) {
	set := fakeSysNet(t, "veth9")
	for _, up := range []bool{false, true} {
		f, err := openIface("veth9", up)
		if err != nil {
			t.Fatal(err)
		}
		clock := time.Unix(1796009000, 0)
		f.now = func() time.Time { return clock }
		set(1000, 5000)
		f.start()
		set(1000+125_000_000, 5000+12_500_000) // 1000 and 100 Mbit in 1 s
		clock = clock.Add(time.Second)
		got, want := f.sample(), 1000.0
		if up {
			want = 100
		}
		if got != want || f.mbps[1] != 1100-want {
			t.Errorf("upstream %v: %v and %v Mbps, want %v and %v", up, got, f.mbps[1], want, 1100-want)
		}
		f.close()
	}
	if r := counterRate(0xFFFFFF00, 0x100, time.Second); r != float64(0x200)*8/1e6 {
		t.Errorf("32-bit wrap: %v", r)
	}
}

// TestRunEvents: the events a progress line and a stream read: one
// EventStart with the Input's values before the first EventConnected,
// each connection's Sub-Intervals with their figures, the aggregate ones,
// and the result document in EventEnd.
func TestRunEvents(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1", "127.0.0.1")
	cfg.ConnMin, cfg.ConnMax = 2, 2
	observe, gate := decided(2)
	o := runOn(t, w, cfg, after(gate, complete), observe)
	// The scripted Data Phases run one after the other, so an aggregate
	// may hold one connection's Sub-Interval only: at least 5 of them.
	if o.status != 0 || o.count(EventStart) != 1 || o.count(EventSubInterval) != 10 || o.count(EventAggregate) < 5 {
		t.Fatalf("status %d, %d start, %d Sub-Interval and %d aggregate events", o.status,
			o.count(EventStart), o.count(EventSubInterval), o.count(EventAggregate))
	}
	if o.events[0].Kind != EventStart || o.events[0].Info == nil || o.events[0].Info.ConnMax != 2 || o.events[1].Kind != EventConnected {
		t.Errorf("first events %v, %v", o.events[0].Kind, o.events[1].Kind)
	}
	sum := 0.0
	for _, e := range o.events {
		switch e.Kind {
		case EventSubInterval:
			if e.Interval == nil || e.Interval.Conn != e.Conn || e.Interval.Capacity <= 0 {
				t.Errorf("Sub-Interval event of connection %d: %+v", e.Conn, e.Interval)
			} else {
				sum += e.Interval.Capacity
			}
		case EventAggregate:
			if e.Interval == nil || e.Interval.Conn != -1 || e.Interval.Active != 2 {
				t.Errorf("aggregate %+v", e.Interval)
			} else {
				sum -= e.Interval.Capacity
			}
		case EventEnd:
			if !strings.Contains(string(e.Document), `"IPLayerCapacitySummary"`) || !strings.HasSuffix(string(e.Document), "}\n") {
				t.Errorf("end document %.300s", e.Document)
			}
		}
	}
	if sum > 1e-6 || sum < -1e-6 {
		t.Errorf("the aggregates are not the sums of the connections' capacities (off by %g)", sum)
	}
}
