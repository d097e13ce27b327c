//go:build unix && (!linux || portable)

package engine

import (
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// The fallback socket's receive allocates only the sender's address that
// syscall.Recvfrom returns: one per datagram, not the read's closure too.
// (Linux's batched path allocates nothing: TestBatchAllocs.)
func TestFallbackRecvAllocs(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{SockBuf: 4 << 20})
	var sb dataphase.SendBuffer
	var rb dataphase.RecvBatch
	pl := lens(20, 1222, 100)
	n := len(pl)
	fillPlan(&sb, 1, 0, pl...)
	got := 0
	allocs := race.AllocsPerRun(200, func() {
		if _, err := a.SendBatch(&sb); err != nil {
			t.Fatal(err)
		}
		// Loopback delivers within the send; the bound is for a lost one,
		// which the count below then reports.
		for k, tries := 0, 0; k < n && tries < 100; tries++ {
			if err := b.RecvBatch(&rb, dataphase.MaxRecv); err != nil {
				t.Fatal(err)
			}
			k += rb.N
			got += rb.N
		}
	})
	if got != 201*n {
		t.Fatalf("received %d of %d datagrams", got, 201*n)
	}
	if allocs > float64(n+1) {
		t.Fatalf("sending and receiving %d datagrams allocate %v times", n, allocs)
	}
}
