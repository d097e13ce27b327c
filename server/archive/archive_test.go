package archive

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
)

// testRecord is a finished upstream test of n Sub-Intervals of 10 Mbit/s
// at the IP layer.
func testRecord(n int, port uint16) *control.TestRecord {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	t := &control.TestRecord{
		Setup: t0, Start: t0.Add(time.Second), End: t0.Add(time.Duration(n+1) * time.Second),
		Peer:     netip.AddrPortFrom(netip.MustParseAddr("198.18.0.7"), port),
		Upstream: true, EndReason: dataphase.EndStopped,
	}
	t.Granted.TestIntTime = uint16(n)
	for i := range n {
		// 1250 datagrams of 972 bytes + 28 in 1 s: 10 Mbit/s.
		t.SubIntervals = append(t.SubIntervals, dataphase.SubIntervalResult{Seq: uint32(i + 1),
			Stats: dataphase.SubIntervalStats{RxDatagrams: 1250, RxBytes: 1250 * 972, DeltaTime: 1e6,
				DelayVarMin: dataphase.NoDelay, RTTVarMin: dataphase.NoDelay, RTTVarMax: dataphase.NoDelay},
			RTTMinimum: dataphase.NoDelay})
	}
	return t
}

// readLines reads the finished files of dir as a reader does.
func readLines(t *testing.T, dir string) []Record {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, FilePrefix+"*"+FileSuffix))
	var recs []Record
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil || (len(b) > 0 && b[len(b)-1] != '\n') {
			t.Fatalf("%s: %v, %q", n, err, b)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var r Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// TestRecordFigures: the record's figures are those of its Sub-Intervals.
func TestRecordFigures(t *testing.T) {
	r := newRecord(testRecord(3, 5000), "id", "srv", "c", false)
	if r.Direction != "up" || r.Status != "ok" || r.EndReason != "stopped" || len(r.SubIntervals) != 3 {
		t.Fatalf("%+v", r)
	}
	if s := r.Summary; s.MaxMbps == nil || *s.MaxMbps != 10 || *s.MeanMbps != 10 || *s.LossRatio != 0 || s.RTTMinMs != nil {
		t.Errorf("summary %+v", s)
	}
	if s := r.SubIntervals[0]; s.DelayVarMinMs != nil || s.RTTVarMinMs != nil {
		t.Errorf("figures without samples: %+v", s)
	}
}

// TestPseudonym: the same address (IPv4-mapped or not) gets the same
// pseudonym under one key; another key or address another; the address
// does not show in it.
func TestPseudonym(t *testing.T) {
	k1, k2 := pseudonymizer{bytes.Repeat([]byte{1}, 32)}, pseudonymizer{bytes.Repeat([]byte{2}, 32)}
	a, mapped := netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("::ffff:198.18.0.7")
	b := netip.MustParseAddr("198.18.0.8")
	if k1.pseudonym(a) != k1.pseudonym(mapped) || k1.pseudonym(a) == k1.pseudonym(b) || k1.pseudonym(a) == k2.pseudonym(a) {
		t.Error("pseudonyms do not follow key and address")
	}
	if p := k1.pseudonym(a); len(p) != 34 || strings.Contains(p, "198") {
		t.Errorf("pseudonym %q", p)
	}
}

// TestLoadKey: a missing key file is made 0600 and read back the same; a
// file others may read, or a short key, is refused.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	k, created, err := LoadKey(p)
	if err != nil || !created || len(k) != KeyBytes {
		t.Fatalf("new key: %v %v %d", err, created, len(k))
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if k2, created, err := LoadKey(p); err != nil || created || !bytes.Equal(k, k2) {
		t.Errorf("read back: %v %v", err, created)
	}
	os.Chmod(p, 0o644)
	if _, _, err := LoadKey(p); err == nil {
		t.Error("a key others may read was taken")
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("0011"), 0o600)
	if _, _, err := LoadKey(short); err == nil {
		t.Error("a 2-byte key was taken")
	}
}

// TestRotation: files are finished by size and by age, a clean Close
// finishes the last, retention deletes old finished files, and every
// record is read back once.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(Config{Dir: dir, MaxSize: 1, Plain: true}) // every record fills a file
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		a.Add(testRecord(2, uint16(1000+i)))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readLines(t, dir)
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(recs) != 3 || len(names) != 3 || a.Written.Load() != 3 {
		t.Fatalf("%d records in %v, written %d", len(recs), names, a.Written.Load())
	}
	for i, r := range recs {
		if r.ClientPort != 1000+i {
			t.Errorf("record %d: port %d, out of order", i, r.ClientPort)
		}
	}

	// By age: the writer's clock moves past MaxAge.
	now := time.Now()
	w := newFileWriter(dir, DefaultMaxSize, time.Hour, 2*time.Hour)
	w.now = func() time.Time { return now }
	if err := w.write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.tick(); err != nil || w.f == nil {
		t.Fatalf("rotated too early: %v", err)
	}
	now = now.Add(time.Hour)
	if err := w.tick(); err != nil || w.f != nil {
		t.Fatalf("not rotated at its age: %v", err)
	}
	if n, _ := filepath.Glob(filepath.Join(dir, "*"+FileSuffix)); len(n) != 4 {
		t.Fatalf("%d files, want 4", len(n))
	}
	// Retention: the files are 3 h old by the writer's clock.
	now = now.Add(2 * time.Hour)
	if err := w.tick(); err != nil {
		t.Fatal(err)
	}
	if n, _ := filepath.Glob(filepath.Join(dir, "*")); len(n) != 0 {
		t.Errorf("retention left %v", n)
	}
}

// TestRecoverEveryCut: a .part file cut at every byte (a crash in the
// middle of any write) recovers to the records complete before the cut,
// never a partial line, and nothing is left as .part.
func TestRecoverEveryCut(t *testing.T) {
	src := t.TempDir()
	w := newFileWriter(src, DefaultMaxSize, time.Hour, 0)
	var ends []int // where each member ends
	for i := range 3 {
		line, _ := json.Marshal(newRecord(testRecord(2, uint16(i)), "id", "s", "c", true))
		if err := w.write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(w.size))
	}
	full, err := os.ReadFile(w.f.Name())
	if err != nil {
		t.Fatal(err)
	}
	w.f.Close()
	for cut := 0; cut <= len(full); cut += 7 {
		dir := t.TempDir()
		part := filepath.Join(dir, FilePrefix+"x"+FileSuffix+PartSuffix)
		os.WriteFile(part, full[:cut], 0o640)
		kept, dropped := recoverAll(t, dir)
		want := 0
		for _, e := range ends {
			if cut >= e {
				want++
			}
		}
		torn := cut > 0 && (want == 0 || cut > ends[want-1])
		if kept != want || (dropped == 1) != torn {
			t.Fatalf("cut at %d of %d: kept %d dropped %d, want %d (torn %v)", cut, len(full), kept, dropped, want, torn)
		}
		if recs := readLines(t, dir); len(recs) != want {
			t.Fatalf("cut at %d: a reader sees %d records, want %d", cut, len(recs), want)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*"+PartSuffix)); len(left) > 0 {
			t.Fatalf("cut at %d: %v left", cut, left)
		}
	}
}

// recoverAll runs Recover over dir and adds up the records kept and the
// stretches dropped.
func recoverAll(t *testing.T, dir string) (kept, dropped int) {
	t.Helper()
	rs, err := Recover(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Refused != nil {
			t.Fatalf("refused: %v", r.Refused)
		}
		kept += r.Kept
		dropped += len(r.Dropped)
	}
	return kept, dropped
}
