package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeDefends: the endpoint on a real loopback listener closes a
// connection that never finishes its request header (a slowloris), refuses
// an oversized header, keeps answering scrapes meanwhile, and stops when
// its context ends, closing the listener.
func TestServeDefends(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, Handler(f.registry(t), discardLog()), discardLog()) }()
	addr := ln.Addr().String()

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /metrics HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}

	// Scrapes are answered while the slow client holds its connection.
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "udpstp_setup_accepted_total 7") {
		t.Fatalf("scrape beside a slow client: %d\n%s", resp.StatusCode, body)
	}

	// An oversized header is refused, not read.
	big, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	big.Header.Set("X-Junk", strings.Repeat("a", 2*maxHeaderBytes))
	resp, err = client.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header: %d, want 431", resp.StatusCode)
	}

	// The slow connection is closed once the header timeout passes (the
	// bound is generous: this judges that it ends, not how fast).
	slow.SetReadDeadline(time.Now().Add(headerTimeout + 15*time.Second))
	line, err := bufio.NewReader(slow).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a connection without a complete header is still open after %v", headerTimeout+15*time.Second)
	}
	t.Logf("slow client: %q, %v", line, err)

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(shutdownTimeout + 10*time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts after Serve returned")
	}
}
