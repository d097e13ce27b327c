//go:build !small

package web

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// One client cannot hold every live stream: from one address, the fifth
// /events is refused (503) while another address still gets one, and a
// stream that ends frees its place. Real connections from 127.0.0.1 and
// 127.0.0.2.
func TestEventStreamsPerClient(t *testing.T) {
	f := newFixture(t, 1)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(c *http.Client) (*http.Response, func()) {
		sctx, scancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, f.srv.URL+"/events", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { resp.Body.Close(); scancel() }
	}
	one, other := from("127.0.0.1"), from("127.0.0.2")
	var closes []func()
	defer func() {
		for _, c := range closes {
			c()
		}
	}()
	for i := range DefaultStreamsPerClient {
		resp, done := open(one)
		closes = append(closes, done)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i+1, resp.StatusCode)
		}
	}
	resp, done := open(one)
	done()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream %d from one address: %d, want 503", DefaultStreamsPerClient+1, resp.StatusCode)
	}
	resp, done = open(other)
	closes = append(closes, done)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a stream from another address: %d", resp.StatusCode)
	}
	closes[0]()
	closes = closes[1:]
	await.True(t, "the ended stream's place is free", func() bool {
		resp, done := open(one)
		if resp.StatusCode == http.StatusOK {
			closes = append(closes, done)
			return true
		}
		done()
		return false
	})
}
