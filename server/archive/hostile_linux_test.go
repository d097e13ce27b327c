//go:build linux

package archive

// The attacks that need Linux: a tmpfs filled to the last byte, FIFOs,
// a link to /dev/zero (hostile_test.go has the portable ones).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// lockedBuffer is a log the archive's goroutine writes and the test
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// tmpfs mounts a tmpfs of size bytes on a new directory, unmounted when
// the test ends.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for range 1 << 20 { // a bound far above the tmpfs's size
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return name
		}
	}
	t.Fatal("the tmpfs never filled")
	return ""
}

// TestFullDisk: an archive on a small tmpfs that fills while records are
// written. Records fail while it is full (counted, one log line for the
// episode); once space returns, every record written before and after
// is read by zcat over the whole file, and by recovery after a crash
// (a copy of the .part file as a kill -9 leaves it). Before, the write
// cut short left half a gzip member in the file: zcat stopped there, and
// recovery dropped the 20 records after it.
func TestFullDisk(t *testing.T) {
	if _, err := exec.LookPath("zcat"); err != nil {
		t.Skip("no zcat")
	}
	dir := tmpfs(t, "256k")
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	var logs lockedBuffer
	tick := make(chan time.Time)
	a, err := Open(Config{Dir: dir, Plain: true, now: func() time.Time { return now }, tick: tick,
		Log: newTestLog(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() }) // before the unmount
	port := uint16(5000)
	add := func(n int) {
		for range n {
			a.Add(testRecord(20, port))
			port++
		}
		await.True(t, "the records handled", func() bool { return a.Written.Load()+a.Failed.Load() == uint64(port-5000) })
	}
	add(5)
	filler := fill(t, dir)
	add(10) // the first may still fit in the file's last page
	if a.Failed.Load() == 0 {
		t.Fatalf("no write failed on a full disk; written %d", a.Written.Load())
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	add(20)
	written := a.Written.Load()
	if written < 25 || a.Written.Load()+a.Failed.Load() != 35 {
		t.Fatalf("written %d, failed %d of 35", written, a.Failed.Load())
	}
	if n := strings.Count(logs.String(), "archive: write failed"); n != 1 || !strings.Contains(logs.String(), "failed_before=") {
		t.Errorf("%d failure lines for one full disk, log:\n%s", n, logs.String())
	}

	// A kill -9 now: the .part file as it is, recovered elsewhere.
	parts, _ := filepath.Glob(filepath.Join(dir, "*"+PartSuffix))
	if len(parts) != 1 {
		t.Fatalf("files being written: %v", parts)
	}
	crashed := t.TempDir()
	b, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashed, filepath.Base(parts[0])), b, 0o640); err != nil {
		t.Fatal(err)
	}
	if kept, dropped := recoverAll(t, crashed); kept != int(written) || dropped != 0 {
		t.Errorf("recovery after a kill: kept %d, dropped %d; want %d, 0", kept, dropped, written)
	}
	if got := zcatAll(t, crashed); len(got) != int(written) {
		t.Errorf("zcat after recovery: %d records, want %d", len(got), written)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := zcatAll(t, dir)
	if len(got) != int(written) || got[len(got)-1] != 5034 || got[0] != 5000 {
		t.Fatalf("zcat over the finished file: %d records %v, want %d ending with 5034", len(got), got, written)
	}
}

// bounded runs f, which must return well within the await deadline (a
// FIFO opened without O_NONBLOCK blocks for good).
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	await.True(t, what+" returns", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

// bomb is a gzip member that inflates to n bytes of one line without its
// end: about a thousandth of that on disk. The gzip command makes it
// (Go's compressor under the race detector takes a while).
func bomb(t *testing.T, n int) []byte {
	t.Helper()
	cmd := exec.Command("gzip", "-c")
	cmd.Stdin = io.LimitReader(repeatA{}, int64(n))
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	return b
}

// repeatA reads as an endless run of 'a'.
type repeatA struct{}

func (repeatA) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestRecoverPlanted: what recovery finds at a *.part name may be
// planted. A FIFO is refused without waiting for a writer (before, the
// start hung in open), a symbolic link is refused and its target left
// alone, and a decompression bomb (100 MB of one line in a 100 kB
// member) costs at most a record's bound to read (before, it was read
// whole: over 250 MB), is dropped and said so, while the complete records
// around it are kept.
func TestRecoverPlanted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, FilePrefix+"fifo"+FileSuffix+PartSuffix)
	if err := syscall.Mkfifo(fifo, 0o640); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("not the archive's"), 0o600)
	link := filepath.Join(dir, FilePrefix+"link"+FileSuffix+PartSuffix)
	os.Symlink(target, link)
	line, _ := json.Marshal(newRecord(testRecord(3, 7000), "id", "s", "c", true))
	var good bytes.Buffer
	z := gzip.NewWriter(&good)
	z.Write(append(line, '\n'))
	z.Close()
	bm := bomb(t, 100<<20)
	file := append(append(append([]byte{}, good.Bytes()...), bm...), good.Bytes()...)
	os.WriteFile(filepath.Join(dir, FilePrefix+"bomb"+FileSuffix+PartSuffix), file, 0o640)
	t.Logf("bomb: %d bytes, inflating to 100 MB", len(bm))

	var rs []Recovered
	var err error
	cost := allocated(func() { bounded(t, "recovery", func() { rs, err = Recover(dir) }) })
	t.Logf("recovery allocated %d bytes", cost)
	if err != nil || len(rs) != 3 {
		t.Fatalf("%+v %v", rs, err)
	}
	if cost > 16<<20 {
		t.Errorf("recovery allocated %d bytes, more than 16 MiB", cost)
	}
	for _, r := range rs {
		switch {
		case strings.Contains(r.Part, "fifo"):
			if r.Refused == nil || !strings.Contains(r.Refused.Error(), "is a FIFO") {
				t.Errorf("FIFO: %+v", r)
			}
		case strings.Contains(r.Part, "link"):
			if r.Refused == nil || !strings.Contains(r.Refused.Error(), "is a symbolic link") {
				t.Errorf("link: %+v", r)
			}
		default:
			if r.Kept != 2 || len(r.Dropped) != 1 || r.Dropped[0].Bytes != int64(len(bm)) || !strings.Contains(r.Dropped[0].Why, "inflating past") {
				t.Errorf("bomb: %+v", r)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "not the archive's" {
		t.Errorf("the link's target became %q", b)
	}
	if _, err := os.Lstat(fifo); err != nil {
		t.Errorf("the FIFO was not left: %v", err)
	}
}

// TestLoadKeyPlanted: a key file that is a link to /dev/zero, a FIFO, or
// a file far larger than a key is refused at once, saying what it is,
// having read at most a key file's bound (before: the link was read until
// memory ran out, the FIFO blocked the start).
func TestLoadKeyPlanted(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("ab"), 1<<20), 0o600)
	for name, want := range map[string]string{zero: "is a symbolic link", fifo: "is a FIFO", big: "at most 4096"} {
		var err error
		cost := allocated(func() { bounded(t, "LoadKey", func() { _, _, err = LoadKey(name) }) })
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if cost > 1<<20 {
			t.Errorf("%s: %d bytes allocated", name, cost)
		}
	}
}

// refusingStore refuses every Put while refuse is set, as a spool whose
// disk is full does.
type refusingStore struct {
	store.Store // the archive calls only Put and Close
	refuse      atomic.Bool
}

func (s *refusingStore) Put(context.Context, *store.Result) error {
	if s.refuse.Load() {
		return errors.New("spool: disk full")
	}
	return nil
}

func (s *refusingStore) Close() error { return nil }

// TestStoreFailuresLoggedOnce: a store that refuses every record logs one
// line for the episode, not one per record, and the count when it takes
// one again, as a full disk does for the files (TestFullDisk).
func TestStoreFailuresLoggedOnce(t *testing.T) {
	st := &refusingStore{}
	st.refuse.Store(true)
	var log lockedBuffer
	a, err := Open(Config{Store: st, Plain: true, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const refused = 20
	for i := range refused {
		a.Add(testRecord(2, uint16(4001+i)))
	}
	await.True(t, "every record refused", func() bool { return a.Failed.Load() == refused })
	st.refuse.Store(false)
	a.Add(testRecord(2, 4100))
	await.True(t, "the record stored", func() bool { return a.Written.Load() == 1 })
	out := log.String()
	if n := strings.Count(out, "archive: store failed"); n != 1 {
		t.Errorf("%d lines for %d refused records, want 1:\n%s", n, refused, out)
	}
	if !strings.Contains(out, fmt.Sprintf("failed_before=%d", refused)) {
		t.Errorf("no line with the count when the store took a record again:\n%s", out)
	}
}
