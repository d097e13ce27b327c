//go:build linux

package e2e

// The server's archive against planted files, as a real server process
// meets them at start, and a finished test seen by the archive's
// documented reader while the server runs (docs/security.md, "The
// server's archive"; docs/fleet.md). Self-contained: it needs only the
// binary the package's TestMain builds (udpstpBin).

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/server/archive"
)

// archiveMemBound is the most a server may hold (VmHWM, its peak
// resident memory) at start over a planted archive directory or key: a
// server that just started holds a few tens of MB; before the bounds, a
// 306 kB planted file cost 817 MB and a key linked to /dev/zero grew
// without end.
const archiveMemBound = 256 << 20

// archiveProc is a server process (the harness's), its standard output
// and error in one log.
type archiveProc struct{ *proc }

// done says whether it exited.
func (p archiveProc) done() bool { return !p.running() }

// startArchiveServer starts our server with args, without waiting for it
// to be ready (some are meant to fail at once); it is killed when the
// test ends if still running.
func startArchiveServer(t *testing.T, args ...string) archiveProc {
	t.Helper()
	return archiveProc{start(t, exec.Command(udpstpBin, args...), procOpts{name: "server", merge: true})}
}

// vmHWM is a running process's peak resident memory, bytes, from /proc
// (VmHWM: the program's own, since its exec); -1 once it exited. Not its
// rusage: ru_maxrss counts the pages of the test process, which the
// child shares between Go's vfork and its exec, and a test binary
// running the whole suite holds hundreds of MB.
func vmHWM(t *testing.T, p archiveProc) int64 {
	t.Helper()
	if p.done() {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return -1 // exited and reaped since done()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	return 0
}

// awaitBounded waits until cond holds, killing the server and failing
// the test the moment its peak memory passes archiveMemBound: a
// regression must not take the machine's memory with it.
func awaitBounded(t *testing.T, p archiveProc, what string, cond func() bool) {
	t.Helper()
	var over int64
	await.True(t, what, func() bool {
		if !p.done() {
			if m := vmHWM(t, p); m > archiveMemBound {
				over = m
				return true
			}
		}
		return cond()
	})
	if over > 0 {
		p.kill()
		t.Fatalf("%s: the server held %d MB, more than %d MB; log:\n%s", what, over>>20, archiveMemBound>>20, p.log())
	}
}

func archiveFreePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestArchivePlantedFilesE2E: a server started over an archive directory
// where someone planted, at names of files a crash leaves (*.part), a
// FIFO, a symbolic link to a file not the archive's, and a 300 kB
// decompression bomb between two real records. Before, the FIFO hung the
// start for good, and the bomb alone cost 817 MB. Now the server
// starts, its peak memory bounded, and its log says what it refused
// (the FIFO, the link, left where they are) and what it dropped (the
// bomb, where and why), keeping the two records.
func TestArchivePlantedFilesE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "archive")
	os.Mkdir(dir, 0o750)
	part := func(name string) string {
		return filepath.Join(dir, archive.FilePrefix+name+archive.FileSuffix+archive.PartSuffix)
	}
	if err := syscall.Mkfifo(part("fifo"), 0o640); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("not the archive's\n"), 0o600)
	os.Symlink(victim, part("link"))
	member := func(b []byte, line string) []byte {
		var w bytes.Buffer
		z, _ := gzip.NewWriterLevel(&w, gzip.BestCompression)
		z.Write([]byte(line))
		z.Close()
		return append(b, w.Bytes()...)
	}
	file := member(nil, `{"uuid":"before"}`+"\n")
	var bomb bytes.Buffer
	z, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 300 { // 300 MB of one line without its end
		z.Write(chunk)
	}
	z.Close()
	file = append(file, bomb.Bytes()...)
	file = member(file, `{"uuid":"after"}`+"\n")
	os.WriteFile(part("bomb"), file, 0o640)

	port := archiveFreePort(t)
	p := startArchiveServer(t, "server", "-p", fmt.Sprint(port), "--archive", dir, "127.0.0.1")
	awaitBounded(t, p, "the server started", func() bool {
		return strings.Contains(p.log(), "server started") || p.done()
	})
	log := p.log()
	hwm := vmHWM(t, p)
	t.Logf("peak memory %d MB; log:\n%s", hwm>>20, log)
	if p.done() {
		t.Fatalf("the server exited: %s", log)
	}
	for _, want := range []string{
		"refused a file in the archive directory", "is a FIFO", "is a symbolic link",
		"records_kept=2", "cut_records_dropped=1", fmt.Sprintf("bytes_dropped=%d", bomb.Len()), "inflating past",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "not the archive's\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	p.signal(t, os.Interrupt)
	p.waitExit(time.Minute)
	out, err := exec.Command("sh", "-c", "zcat "+dir+"/*.ndjson.gz").Output()
	if err != nil || string(out) != "{\"uuid\":\"before\"}\n{\"uuid\":\"after\"}\n" {
		t.Errorf("the documented reader: %v, %q", err, out)
	}
}

// TestArchiveKeyLinkedToDevZeroE2E: --archive-key names a symbolic link
// to /dev/zero, a FIFO, a file of 2 MB. Before, the link was read
// without end (1.5 GB and growing) and the FIFO hung the start. Now the
// server exits at once with a clear error naming what is there, its peak
// memory bounded.
func TestArchiveKeyLinkedToDevZeroE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	t.Parallel()
	tmp := t.TempDir()
	zero, fifo, big := filepath.Join(tmp, "zero.key"), filepath.Join(tmp, "fifo.key"), filepath.Join(tmp, "big.key")
	os.Symlink("/dev/zero", zero)
	syscall.Mkfifo(fifo, 0o600)
	os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), 1<<17), 0o600)
	for key, want := range map[string]string{zero: "is a symbolic link", fifo: "is a FIFO", big: "refused: 2097152 bytes"} {
		p := startArchiveServer(t, "server", "-p", fmt.Sprint(archiveFreePort(t)),
			"--archive", filepath.Join(tmp, "archive"), "--archive-key", key, "127.0.0.1")
		awaitBounded(t, p, "the server's exit over "+key, p.done)
		log := p.log()
		hwm := vmHWM(t, p)
		t.Logf("%s: exit %v, peak memory %d MB: %s", filepath.Base(key), p.cmd.ProcessState, hwm>>20, strings.TrimSpace(log))
		if p.cmd.ProcessState.Success() || !strings.Contains(log, "archive key") || !strings.Contains(log, want) {
			t.Errorf("%s: exit %v, log %q; want a failure saying %q", key, p.cmd.ProcessState, log, want)
		}
		if hwm > archiveMemBound { // -1 once exited: awaitBounded watched it while it ran
			t.Errorf("%s: peak memory %d MB", key, hwm>>20)
		}
	}
}

// TestArchiveVisibleWhileRunningE2E: a finished test is read by the
// archive's documented reader, `zcat DIR/*.ndjson.gz`, while the server
// keeps running, once --archive-max-age (here 2 s; a minute by default)
// has passed since the file was begun: the wait is for the record
// itself, no time is judged.
func TestArchiveVisibleWhileRunningE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a client")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "archive")
	port := archiveFreePort(t)
	p := startArchiveServer(t, "server", "-p", fmt.Sprint(port), "--archive", dir, "--archive-max-age", "2s", "127.0.0.1")
	await.True(t, "the server started", func() bool { return strings.Contains(p.log(), "server started") || p.done() })
	out, err := exec.Command(udpstpBin, "client", "-d", "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1").CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	var rec struct{ Direction, Status string }
	await.True(t, "the record in the documented reader's files", func() bool {
		b, err := exec.Command("sh", "-c", "zcat "+dir+"/*.ndjson.gz 2>/dev/null").Output()
		return err == nil && json.Unmarshal(b, &rec) == nil
	})
	if p.done() || rec.Direction != "down" || rec.Status != "ok" {
		t.Errorf("record %+v, server exited %v: %s", rec, p.done(), p.log())
	}
}
