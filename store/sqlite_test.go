//go:build !small

package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

func sqliteSpec(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "results.db") }

func TestSQLite(t *testing.T) { runSuite(t, sqliteSpec) }

// TestSQLiteBadSpecs: a --store argument that cannot work is an error
// naming what is wrong, and creates nothing.
func TestSQLiteBadSpecs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notadb"), []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	badSpecs(t, map[string]string{
		"sqlite:":        "want sqlite:PATH",
		"results.db":     "want sqlite:PATH",
		"mysql://u@h/db": "no mysql engine",
		"sqlite:" + filepath.Join(dir, "no", "x.db"): filepath.Join(dir, "no"),
		"sqlite:" + dir: "is a directory",
		"sqlite:" + filepath.Join(dir, "a?mode=ro"):   "with ? or #",
		"sqlite:" + filepath.Join(dir, "notadb"):      "not a database",
		"sqlite:" + filepath.Join(dir, "notadb", "x"): "not a directory",
	})
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the missing directory: %v", err)
	}
}

// TestSQLiteReaderWhileWriter: a second store on the same file (udpstp
// history while the agent runs) reads while the first writes, without a
// "database is locked".
func TestSQLiteReaderWhileWriter(t *testing.T) {
	spec := sqliteSpec(t)
	ctx := context.Background()
	w, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const n = 300
	var written atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := w.Put(ctx, result(i)); err != nil {
				done <- err
				return
			}
			written.Store(int64(i + 1))
		}
		done <- nil
	}()
	reads := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.List(ctx, Filter{})
			if err != nil || len(got) != n {
				t.Fatalf("after the writes: %d rows, %v", len(got), err)
			}
			t.Logf("%d reads during %d writes", reads, n)
			return
		default:
		}
		before := written.Load()
		got, err := r.List(ctx, Filter{Limit: 50})
		if err != nil {
			t.Fatalf("read during writes: %v", err)
		}
		if before > 0 {
			if len(got) == 0 {
				t.Fatalf("read saw nothing after %d writes", before)
			}
			if _, err := r.Get(ctx, got[0].ID); err != nil {
				t.Fatalf("get during writes: %v", err)
			}
		}
		reads++
	}
}

// TestSQLiteTwoWriters: two stores on one file (two processes: the agent
// and the server's archive, say) write at once; each waits for the
// other's write (busy_timeout) instead of failing with "database is
// locked".
func TestSQLiteTwoWriters(t *testing.T) {
	spec := sqliteSpec(t)
	ctx := context.Background()
	const each = 100
	errs := make(chan error, 2)
	for w := range 2 {
		s, err := Open(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		go func() {
			for i := range each {
				if err := s.Put(ctx, result(w*each+i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.List(ctx, Filter{}); err != nil || len(got) != 2*each {
		t.Fatalf("%d rows, %v; want %d", len(got), err, 2*each)
	}
}

// The crash test's child: TestSQLiteCrash runs the test binary again with
// this test and UDPSTP_CRASH_STORE set; it writes results until it is
// killed, appending each acknowledged ID (Put returned) to the file
// UDPSTP_CRASH_ACKS, fsynced, before the next.
func TestSQLiteCrashChild(t *testing.T) {
	path := os.Getenv("UDPSTP_CRASH_STORE")
	if path == "" {
		t.Skip("the crash test's child process (TestSQLiteCrash runs it)")
	}
	ctx := context.Background()
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	acks, err := os.OpenFile(os.Getenv("UDPSTP_CRASH_ACKS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	doc := crashDoc()
	for i := 0; ; i++ {
		r := result(i)
		r.ID = fmt.Sprintf("%d-%d", os.Getpid(), i)
		r.Doc = doc
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := acks.WriteString(r.ID + "\n"); err != nil {
			t.Fatal(err)
		}
		if err := acks.Sync(); err != nil {
			t.Fatal(err)
		}
		// Now and then a prune: deletes are in flight at some kills too.
		if i%50 == 49 {
			if _, err := s.Prune(ctx, Retention{MaxCount: 10000}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// crashDoc is a real OB-UDPST document, so a write spans several pages.
func crashDoc() []byte {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "obudpst", "ds_default_v4", "client.json"))
	if err != nil {
		panic(err)
	}
	return b
}

// TestSQLiteCrash: a writer killed with SIGKILL at random moments, 20
// times, leaves a store that passes PRAGMA integrity_check and holds
// every result whose Put had returned, each complete.
func TestSQLiteCrash(t *testing.T) {
	if os.Getenv("UDPSTP_CRASH_STORE") != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")
	acksPath := filepath.Join(dir, "acks")
	doc := crashDoc()
	ctx := context.Background()
	for round := range 20 {
		before := countLines(t, acksPath)
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "UDPSTP_CRASH_STORE="+path, "UDPSTP_CRASH_ACKS="+acksPath)
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// A random number of acknowledged writes, then a random moment
		// within the next write or so.
		target := before + 1 + rand.IntN(40)
		await.True(t, fmt.Sprintf("round %d: %d writes acknowledged", round, target), func() bool {
			select {
			case err := <-exited:
				t.Fatalf("the writer ended by itself: %v\n%s", err, stderr.String())
			default:
			}
			return countLines(t, acksPath) >= target
		})
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited

		s, err := Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatalf("round %d: the store after a kill: %v", round, err)
		}
		var check string
		if err := s.(*sqlStore).db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: integrity_check: %q, %v", round, check, err)
		}
		acked := readLines(t, acksPath)
		for _, id := range acked {
			r, err := s.Get(ctx, id)
			if err != nil {
				t.Fatalf("round %d: acknowledged result %s: %v", round, id, err)
			}
			if string(r.Doc) != string(doc) || r.MaxMbps == nil {
				t.Fatalf("round %d: result %s is not complete", round, id)
			}
		}
		all, err := s.List(ctx, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		// At most the write in flight is there without its acknowledgement.
		if len(all) < len(acked) || len(all) > len(acked)+1 {
			t.Fatalf("round %d: %d rows for %d acknowledged writes", round, len(all), len(acked))
		}
		if len(all) > len(acked) {
			// The write in flight is the extra one: make it acknowledged,
			// so later rounds count right.
			known := map[string]bool{}
			for _, id := range acked {
				known[id] = true
			}
			for _, r := range all {
				if !known[r.ID] {
					appendLine(t, acksPath, r.ID)
				}
			}
		}
		s.Close()
	}
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func countLines(t *testing.T, path string) int { return len(readLines(t, path)) }

func appendLine(t *testing.T, path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
