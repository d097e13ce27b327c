package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestOpenSpoolRemoteAbsentAtStart: OpenSpool succeeds while its remote
// cannot be opened (here a SQLite file in a directory not yet made, as a
// PostgreSQL down is for Open); Puts wait in the spool, RemoteUp says
// the remote is down, and once it can be opened every result is uploaded.
func TestOpenSpoolRemoteAbsentAtStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	remoteDir := filepath.Join(dir, "later")
	remote := "sqlite:" + filepath.Join(remoteDir, "remote.db")
	s, err := OpenSpool(ctx, remote, filepath.Join(dir, "spool.db"),
		SpoolOptions{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, FlushOnClose: 5 * time.Second})
	if err != nil {
		t.Fatalf("OpenSpool with its remote absent: %v", err)
	}
	defer s.Close()
	for i := range 3 {
		if err := s.Put(ctx, spoolResult("0000", i)); err != nil {
			t.Fatal(err)
		}
	}
	await.True(t, "the remote seen down", func() bool { return !s.RemoteUp() })
	if n := s.Pending(); n != 3 {
		t.Errorf("pending %d while the remote is absent, want 3", n)
	}
	if err := os.Mkdir(remoteDir, 0o700); err != nil {
		t.Fatal(err)
	}
	await.True(t, "everything uploaded", func() bool { return s.Pending() == 0 })
	if !s.RemoteUp() {
		t.Error("RemoteUp false after the uploads")
	}
	st, err := Open(ctx, remote)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.List(ctx, Filter{})
	if err != nil || len(rows) != 3 {
		t.Errorf("the remote holds %d results, want 3 (%v)", len(rows), err)
	}
}
