//go:build !small

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// nobody is the user the read-only test runs history as: it may read the
// store (its group) but write neither the file nor its directory.
const nobody = 65534

// TestHistoryReadOnlyE2E runs udpstp history as a user who may only read
// the store (nobody, in the file's group: the store's 0640 lets the group
// read) while another process writes it (the agent): each list is whole
// and the store is never written by history. Then, with no writer left
// (no -shm file), history says why it cannot read instead of failing
// obscurely (docs/store.md, "Readers").
func TestHistoryReadOnlyE2E(t *testing.T) {
	processTest(t)
	if os.Geteuid() != 0 {
		t.Skip("runs history as another user: needs root")
	}
	ctx := context.Background()
	// Every directory on the way readable by nobody (t.TempDir's are not).
	dir, err := os.MkdirTemp("", "udpstp-readonly")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	stores := filepath.Join(dir, "store")
	if err := os.Mkdir(stores, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "udpstp")
	copyFile(t, udpstpBin, bin, 0o755)

	// The store: root's, in nobody's group, as a packaged agent's would
	// be in its readers' group.
	path := filepath.Join(stores, "results.db")
	spec := "sqlite:" + path
	// be in its readers' group (the -wal and -shm SQLite makes take the
	// file's owner and mode).
	copyFile(t, os.DevNull, path, 0o640)
	if err := os.Chown(path, 0, nobody); err != nil {
		t.Fatal(err)
	}
	w, err := store.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const first, extra = 20, 60
	put := func(i int, test string) error {
		r := store.Result{ID: fmt.Sprintf("30000000-0000-4000-8000-%012d", i), Origin: store.OriginClient, Test: test,
			Agent: "ro", Server: "192.0.2.1:25000", Direction: "down", Status: store.StatusOK, Start: time.Now(), End: time.Now()}
		return w.Put(ctx, &r)
	}
	for i := range first {
		if err := put(i, "before"); err != nil {
			t.Fatal(err)
		}
	}
	history := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"history", "--store", spec}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		r := runCmd(cmd, await.Deadline)
		if r.err != nil || r.code != 0 {
			return r.stdout, fmt.Errorf("exit %d %v: %s", r.code, r.err, r.stderr)
		}
		return r.stdout, nil
	}
	// nobody may not write the store: this test's point.
	for _, f := range []string{path, path + "-wal", path + "-shm", stores} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o002 != 0 {
			t.Fatalf("%s is world-writable (%v)", f, st.Mode())
		}
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range extra {
			if err := put(first+i, "live"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var counts []int
	for range 4 {
		out, err := history("--limit", "0", "--format", "ndjson")
		if err != nil {
			t.Fatalf("history as nobody while the store is written: %v", err)
		}
		n := strings.Count(out, "\n")
		if n < first || n > first+extra {
			t.Errorf("a list while writing: %d results, want %d to %d", n, first, first+extra)
		}
		counts = append(counts, n)
	}
	wg.Wait()
	out, err := history("--test", "live", "--limit", "0", "--format", "ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != extra {
		t.Errorf("after the writes: %d live results, want %d", n, extra)
	}
	if !slices.IsSorted(counts) {
		t.Errorf("the lists while writing went back: %v", counts)
	}

	// No writer: SQLite removed the -shm, and nobody may not make one in
	// the store's directory: a clear error, and nothing written.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-shm"); err == nil {
		t.Skip("SQLite kept the -shm after the last writer closed")
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = history("--limit", "0")
	if err == nil || !strings.Contains(err.Error(), "results.db-shm") {
		t.Errorf("history as nobody with no -shm: %v", err)
	}
	t.Logf("without a writer: %v", err)
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the store changed (%v)", err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
