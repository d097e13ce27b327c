package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// logBuf is a log the spool writes while a test reads it.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
func (l *logBuf) logger() *slog.Logger        { return slog.New(slog.NewTextHandler(l, nil)) }

func flushSpool(t *testing.T, s *Spool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), await.Deadline)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolOutboxLongLine: an outbox holding a line of 70 kB (past
// bufio.Scanner's 64 kB) between waiting results: every result after it
// is still uploaded, and the log names the line skipped. A Put whose ID
// would make such a line is refused with an error that says why, and the
// results after it are delivered, across a restart too.
func TestSpoolOutboxLongLine(t *testing.T) {
	ctx := context.Background()
	local, remote := newMemStore(), newMemStore()
	var want []string
	for i := range 4 {
		r := spoolResult("a0", i)
		local.Put(ctx, r)
		want = append(want, r.ID)
	}
	long := strings.Repeat("x", 70<<10)
	outbox := filepath.Join(t.TempDir(), "outbox")
	os.WriteFile(outbox, []byte("p "+want[0]+"\np "+long+"\np "+want[1]+"\np "+want[2]+"\np "+want[3]+"\n"), 0o600)
	var log logBuf
	s, err := NewSpool(local, remote, SpoolOptions{Outbox: outbox, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Log: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	flushSpool(t, s)
	if got := remote.storedIDs(); !slices.Equal(got, want) {
		t.Errorf("uploaded %d of the 4 waiting results: %v", len(got), got)
	}
	if l := log.String(); !strings.Contains(l, "outbox line skipped") || !strings.Contains(l, "line=2") {
		t.Errorf("no error for the long line in the log:\n%s", l)
	}

	// A Put with an ID the outbox cannot hold.
	remote.setDown(true)
	bad := spoolResult("a0", 9)
	bad.ID = long
	if err := s.Put(ctx, bad); err == nil || !strings.Contains(err.Error(), "at most 256") {
		t.Errorf("a Put with a 70 kB ID: %v, want an error on its length", err)
	}
	later := []string{spoolResult("a0", 10).ID, spoolResult("a0", 11).ID}
	for i := range 2 {
		if err := s.Put(ctx, spoolResult("a0", 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	remote.setDown(false)
	s = fastSpool(t, local, remote, outbox)
	defer s.Close()
	flushSpool(t, s)
	if got := remote.storedIDs(); !slices.Equal(got, append(want, later...)) {
		t.Errorf("after the refused Put and a restart, uploaded %v", got)
	}
}

// TestSpoolBounds: more than HighWater results waiting is unhealthy;
// MaxPending waiting refuses the next Put (ErrSpoolFull, counted), and
// Health says so until a Put goes through again.
func TestSpoolBounds(t *testing.T) {
	ctx := context.Background()
	local, remote := newMemStore(), newMemStore()
	remote.setDown(true)
	s, err := NewSpool(local, remote, SpoolOptions{Outbox: filepath.Join(t.TempDir(), "outbox"),
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, HighWater: 2, MaxPending: 3, UnhealthyAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.Put(ctx, spoolResult("a0", i)); err != nil {
			t.Fatal(err)
		}
		if h := s.Health(); (h != nil) != (i >= 2) {
			t.Errorf("%d waiting: health %v", i+1, h)
		}
	}
	if err := s.Put(ctx, spoolResult("a0", 3)); !errors.Is(err, ErrSpoolFull) {
		t.Errorf("a Put past MaxPending: %v, want ErrSpoolFull", err)
	}
	if st := s.State(); st.Refused != 1 || st.PutErr == nil {
		t.Errorf("state after a refusal: %+v", st)
	}
	remote.setDown(false)
	flushSpool(t, s)
	if err := s.Put(ctx, spoolResult("a0", 4)); err != nil {
		t.Fatal(err)
	}
	flushSpool(t, s)
	if err := s.Health(); err != nil {
		t.Errorf("health once results go through: %v", err)
	}
}
