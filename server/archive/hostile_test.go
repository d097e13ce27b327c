package archive

// The archive against long tests, damage and the wait for readers
// (docs/security.md, "The server's archive"; hostile_linux_test.go has
// the full disk and the planted files): each test attacks for real and
// counts what it cost.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// allocated is the bytes the heap handed out while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// subInterval is Sub-Interval i of a long test: a rate that varies, a
// loss now and then, delay variation samples.
func longSubInterval(i int) dataphase.SubIntervalResult {
	dg := uint32(1000 + (i*7919)%997)
	return dataphase.SubIntervalResult{Seq: uint32(i + 1), RTTMinimum: uint32(10 + i%3),
		Stats: dataphase.SubIntervalStats{RxDatagrams: dg, RxBytes: uint64(dg) * 1222, DeltaTime: 100000,
			SeqErrLoss: uint32(i % 5), DelayVarMin: uint32(i % 4), DelayVarMax: uint32(i%9 + 4), DelayVarSum: uint32(6 * (i%7 + 1)),
			DelayVarCnt: uint32(i%7 + 1), RTTVarMin: dataphase.NoDelay, RTTVarMax: dataphase.NoDelay, AccumTime: uint32(100 * (i + 1))}}
}

// TestSubIntervalsBounded: an hour's test at 100 ms Sub-Intervals (36,000,
// what -P 100 with -t 3600 reports) fed to a TestRecord as the server
// does keeps at most control.MaxRecordSubIntervals of them: the memory it
// takes is bounded (allocated bytes counted: 240 B × 36,000 = 8.6 MB
// before, on each of 254 slots), and the record still has the exact
// totals, maximum and mean, and says its entries are merged.
func TestSubIntervalsBounded(t *testing.T) {
	const n = 36000
	raw := &control.TestRecord{}
	for i := range n {
		raw.SubIntervals = append(raw.SubIntervals, longSubInterval(i))
	}
	rec := &control.TestRecord{}
	got := allocated(func() {
		for i := range n {
			r := longSubInterval(i)
			rec.AddSubInterval(&r)
		}
	})
	per := uint64(unsafe.Sizeof(dataphase.SubIntervalResult{}))
	bound := 2*control.MaxRecordSubIntervals*per + 64<<10 // the doublings up to the cap, and the test's own
	t.Logf("%d Sub-Intervals: %d bytes allocated, %d entries of %d bytes kept (bound %d); 254 slots: %.1f MB",
		n, got, len(rec.SubIntervals), per, bound, float64(254*control.MaxRecordSubIntervals*per)/1e6)
	if got > bound || cap(rec.SubIntervals) > control.MaxRecordSubIntervals {
		t.Fatalf("%d Sub-Intervals cost %d bytes allocated and %d entries kept; the bound is %d bytes, %d entries",
			n, got, cap(rec.SubIntervals), bound, control.MaxRecordSubIntervals)
	}

	want := newRecord(raw, "id", "s", "c", true)
	r := newRecord(rec, "id", "s", "c", true)
	if r.SubIntervalsMerged < 2 || len(r.SubIntervals) > control.MaxRecordSubIntervals {
		t.Fatalf("merged %d, %d entries", r.SubIntervalsMerged, len(r.SubIntervals))
	}
	var dgs, nbytes, loss uint64
	covered := 0
	for _, s := range r.SubIntervals {
		dgs, nbytes, loss, covered = dgs+uint64(s.Datagrams), nbytes+s.Bytes, loss+uint64(s.Loss), covered+s.Merged
	}
	var wantBytes uint64
	for _, s := range want.SubIntervals {
		wantBytes += s.Bytes
	}
	if covered != n || dgs != want.Summary.Datagrams || loss != want.Summary.Loss || nbytes != wantBytes {
		t.Errorf("entries cover %d Sub-Intervals, %d datagrams, %d bytes, %d lost; want %d, %d, %d, %d",
			covered, dgs, nbytes, loss, n, want.Summary.Datagrams, wantBytes, want.Summary.Loss)
	}
	g, w := r.Summary, want.Summary
	same := func(a, b *float64) bool { return a != nil && b != nil && math.Abs(*a-*b) <= 1e-9*math.Abs(*b) }
	if g.SubIntervals != n || g.Datagrams != w.Datagrams || g.Loss != w.Loss || g.MaxAt != w.MaxAt ||
		*g.MaxMbps != *w.MaxMbps || !same(g.MeanMbps, w.MeanMbps) || *g.LossRatio != *w.LossRatio ||
		*g.DelayVarMs != *w.DelayVarMs || *g.RTTMinMs != *w.RTTMinMs || !same(g.TotalLossRate, w.TotalLossRate) {
		t.Errorf("summary of the merged record\n%s\nwant\n%s", js(g), js(w))
	}
	if line, _ := json.Marshal(r); len(line) > MaxRecordBytes {
		t.Errorf("the record is %d bytes, more than recovery reads", len(line))
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// zcatAll reads the archive as docs/fleet.md says a reader does, `zcat
// DIR/*.ndjson.gz`, with the real zcat, and returns the records' ports;
// zcat must succeed over every file.
func zcatAll(t *testing.T, dir string) []int {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"+FileSuffix))
	if len(names) == 0 {
		return nil
	}
	out, err := exec.Command("zcat", names...).Output()
	if err != nil {
		t.Fatalf("zcat %v: %v (output ends %q)", names, err, out[max(0, len(out)-200):])
	}
	var ports []int
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("zcat: a line that is no record: %v: %q", err, l)
		}
		ports = append(ports, r.ClientPort)
	}
	return ports
}

// manual opens an archive in dir whose clock and ticks the test moves.
func manual(t *testing.T, dir string, now *atomic.Int64) (*Archive, chan time.Time) {
	t.Helper()
	tick := make(chan time.Time)
	a, err := Open(Config{Dir: dir, Plain: true, now: func() time.Time { return time.Unix(0, now.Load()) }, tick: tick})
	if err != nil {
		t.Fatal(err)
	}
	return a, tick
}

// TestFinishedTestVisibleWithinAMinute: with the default rotation, a
// record is in a finished file, read by the documented reader (`zcat
// DIR/*.ndjson.gz`), a minute after its test at the latest, while the
// archive stays open (before: an hour, or the server's stop). The clock
// is the writer's, moved by the test.
func TestFinishedTestVisibleWithinAMinute(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC).UnixNano())
	a, tick := manual(t, dir, &now)
	defer a.Close()
	a.Add(testRecord(2, 4001))
	await.True(t, "the record written", func() bool { return a.Written.Load() == 1 })
	if got := zcatAll(t, dir); len(got) != 0 {
		t.Fatalf("a reader sees %v before the file is finished", got)
	}
	tick <- time.Unix(0, now.Add(int64(time.Minute)))
	await.True(t, "the record in a finished file", func() bool { return len(zcatAll(t, dir)) == 1 })
	// The next record begins a new file, finished a minute later too.
	a.Add(testRecord(2, 4002))
	await.True(t, "the second record written", func() bool { return a.Written.Load() == 2 })
	tick <- time.Unix(0, now.Add(int64(time.Minute)))
	await.True(t, "both records in finished files", func() bool {
		p := zcatAll(t, dir)
		return len(p) == 2 && p[0] == 4001 && p[1] == 4002
	})
}

// TestRecoverKeepsRecordsAfterDamage: a .part file with half a record in
// its middle (what a write cut short used to leave, or power loss) and
// complete records on either side: recovery keeps every complete record,
// in order, and reports the one stretch it dropped, where and how long.
// Before, everything after the damage was dropped, counted as "1".
func TestRecoverKeepsRecordsAfterDamage(t *testing.T) {
	member := func(port uint16) []byte {
		line, _ := json.Marshal(newRecord(testRecord(3, port), "id", "s", "c", true))
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		z.Write(append(line, '\n'))
		z.Close()
		return b.Bytes()
	}
	var file []byte
	for p := range uint16(3) {
		file = append(file, member(6000+p)...)
	}
	torn := member(6099)
	cut := len(torn) / 2
	at := len(file)
	file = append(file, torn[:cut]...)
	for p := range uint16(20) {
		file = append(file, member(6003+p)...)
	}
	file = append(file, torn[:cut]...) // and a torn end
	dir := t.TempDir()
	part := filepath.Join(dir, FilePrefix+"x"+FileSuffix+PartSuffix)
	os.WriteFile(part, file, 0o640)
	rs, err := Recover(dir)
	if err != nil || len(rs) != 1 {
		t.Fatal(rs, err)
	}
	r := rs[0]
	want := []Damage{{int64(at), int64(cut), "a member cut short or corrupt"}, {int64(len(file) - cut), int64(cut), "a member cut short or corrupt"}}
	if r.Kept != 23 || len(r.Dropped) != 2 || r.Dropped[0] != want[0] || r.Dropped[1] != want[1] || r.DroppedBytes() != int64(2*cut) {
		t.Fatalf("kept %d, dropped %+v; want 23, %+v", r.Kept, r.Dropped, want)
	}
	got := zcatAll(t, dir)
	if len(got) != 23 || got[0] != 6000 || got[3] != 6003 || got[22] != 6022 {
		t.Fatalf("a reader sees %v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+PartSuffix)); len(left) > 0 {
		t.Fatalf("left: %v", left)
	}
}
