//go:build unix

package store

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestSpoolOutboxPlanted: a FIFO or a symbolic link planted at the
// outbox's path. Before, the start read the FIFO and never returned (the
// agent hung at start); now NewSpool refuses it at once, naming it.
func TestSpoolOutboxPlanted(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.outbox")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.outbox")
	if err := syscall.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "FIFO", link: "symbolic link"} {
		done := make(chan error, 1)
		go func() {
			_, err := NewSpool(newMemStore(), newMemStore(), SpoolOptions{Outbox: path, MinBackoff: time.Millisecond})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want a refusal naming a %s", path, err, want)
			}
		case <-time.After(await.Deadline):
			t.Fatalf("NewSpool still reads the %s at %s after %v", want, path, await.Deadline)
		}
	}
}
