package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
	"github.com/udpstp/udpstp/report"
)

// TestMovesOn: the search goes on after no answer and a busy server's
// refusals, and stops at a refusal every server would give.
func TestMovesOn(t *testing.T) {
	for status, want := range map[int]bool{
		1: true, 75: true, // no answer, ICMP, a socket error
		100 + int(control.SetupCapExceeded): true, 100 + int(control.SetupConnFail): true,
		100 + int(control.SetupAuthRequired): false, 100 + int(control.SetupBadVersion): false,
		100 + int(control.SetupJumboMismatch): false, 107: false, 152: false,
	} {
		if got := movesOn(&control.SetupError{Status: status}); got != want {
			t.Errorf("ErrorStatus %d: moves on %v, want %v", status, got, want)
		}
	}
	if !movesOn(errors.New("not a SetupError")) {
		t.Error("an error without a status (75) does not move on")
	}
}

// TestFailoverCap: a `srv:NAME` with 3 x MaxCandidates candidates that
// all refuse at once (capacity exceeded, a busy server's refusal, after
// which the search moves on): Setup Requests reach MaxCandidates of them,
// in order, once each, and the error lists the rest as not tried.
func TestFailoverCap(t *testing.T) {
	w := memnet.NewWire()
	n := &memnet.Net{Wire: w, NextPort: 50000}
	var cands []discover.Candidate
	for i := range 3 * MaxCandidates {
		a := netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)})
		cands = append(cands, discover.Candidate{Name: fmt.Sprintf("s%d.fleet.example", i), Addr: a, Port: control.DefaultControlPort})
		if _, err := n.Listen(netip.AddrPortFrom(a, control.DefaultControlPort), dataphase.FamilyV4); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var setups []netip.Addr
	w.SetTap(func(b []byte, from, to netip.AddrPort) bool {
		if len(b) != control.SetupLen || to.Port() != control.DefaultControlPort {
			return true
		}
		mu.Lock()
		setups = append(setups, to.Addr())
		mu.Unlock()
		resp := append([]byte(nil), b...)
		resp[8], resp[9] = control.SetupCmdResponse, control.SetupCapExceeded
		control.SealControlChecksum(resp)
		go w.Send(resp, to, from)
		return false
	})
	cfg := testConfig("srv:fleet.example")
	r := &run{cfg: cfg, o: Options{Network: memNetwork{n}, failover: &failover{from: "srv:fleet.example", cands: cands}}}
	cc, _, tried, _, err := r.choose(context.Background(), 0, func(string) {})
	if cc != nil || err == nil {
		t.Fatalf("a server accepted: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(setups) != MaxCandidates {
		t.Errorf("%d Setup Requests for %d refusing candidates, want %d", len(setups), len(cands), MaxCandidates)
	}
	for i, a := range setups {
		if a != cands[i].Addr {
			t.Errorf("Setup Request %d went to %v, want %v (the order)", i+1, a, cands[i].Addr)
		}
	}
	want := fmt.Sprintf("%d more not tried: at most %d are tried", len(cands)-MaxCandidates, MaxCandidates)
	if len(tried) != MaxCandidates+1 || tried[MaxCandidates] != want || !strings.Contains(err.Error(), want) {
		t.Errorf("tried %q, error %v: want %d failures and %q", tried, err, MaxCandidates, want)
	}
}

// TestSelectionLine: the text report's line of a measurement names each
// candidate as the Server: line does, with its round trip in µs or no
// answer.
func TestSelectionLine(t *testing.T) {
	s := &report.Selection{Mode: "rtt", Candidates: []report.SelectionCandidate{
		{Host: "a.example.net", Addr: "192.0.2.10", ControlPort: 24601, RTT: 412 * time.Microsecond, Answered: true, Chosen: true},
		{Host: "192.0.2.30", Addr: "192.0.2.30", ControlPort: 25000, Error: "WARNING: no answer"},
	}}
	want := "Setup round trips: a.example.net (192.0.2.10:24601) 412 us, 192.0.2.30:25000 no answer"
	if got := selectionLine(s); got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}
