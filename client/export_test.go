package client

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// TestExportName: OB-UDPST's #-conversions, then strftime's; an unknown
// conversion and a trailing '#' stay as they are.
func TestExportName(t *testing.T) {
	v := exportVars{Index: 1, Count: 4, Ident: 4711, Local: "198.18.0.2", Remote: "198.18.0.6", RemotePort: 32001,
		LocalPort: 40123, Host: "srv.example", ControlPort: 24601, Interface: "veth0"}
	now := time.Date(2026, 11, 30, 3, 20, 5, 0, time.Local)
	got := exportName("/tmp/x_#i-#c-#I_#l_#r_#s_#d_#M#D_#H_#p_#E_#q_%Y%m%d-%H%M%S#", v, now)
	want := "/tmp/x_1-4-4711_198.18.0.2_198.18.0.6_32001_40123_CD_srv.example_24601_veth0_#q_20261130-032005#"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if exportUnique("a_%H.csv") || !exportUnique("a_#i.csv") || !exportUnique("a_#d.csv") {
		t.Error("exportUnique")
	}
}

// TestExportFormat: a row is OB-UDPST's fprintf, byte for byte: the C
// formats here are its own, run through Go's fmt, which agrees with C's
// for these verbs.
func TestExportFormat(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "x.csv")
	x, err := openExport(name, true)
	if err != nil {
		t.Fatal(err)
	}
	rows := []dataphase.ExportRow{
		{SeqNo: 7, Payload: 1222, ECN: 2, HasRTT: true, SrcSec: 1796009000, SrcNsec: 5_123_999, DstRx: 1796009000_008_000_001,
			OWD: 3, IntfMbps: 123.456, IntfMbpsAlt: 0.005, RTTSec: 1796008999, RTTNsec: 999_999_999, RespDelay: 2, RTT: 7, StatusLoss: 1},
		{SeqNo: 8, Payload: 52, OWD: -4, SrcSec: 5, SrcNsec: 999, DstRx: 6_000_000_000},
	}
	var want strings.Builder
	want.WriteString(exportHeader)
	for i := range rows {
		r := &rows[i]
		x.row(r)
		// "%u,%u,%d,%ld.%06ld,%ld.%06ld,%d,%.2f,%.2f" + RTT part or ",,,,,\n"
		fmt.Fprintf(&want, "%d,%d,%d,%d.%06d,%d.%06d,%d,%.2f,%.2f", r.SeqNo, r.Payload, r.ECN, r.SrcSec, r.SrcNsec/1000,
			r.DstRx/1e9, r.DstRx%1e9/1000, r.OWD, r.IntfMbps, r.IntfMbpsAlt)
		if r.HasRTT {
			fmt.Fprintf(&want, ",%d.%06d,%d.%06d,%d,%d,%d\n", r.RTTSec, r.RTTNsec/1000, r.DstRx/1e9, r.DstRx%1e9/1000,
				r.RespDelay, r.RTT, r.StatusLoss)
		} else {
			want.WriteString(",,,,,\n")
		}
	}
	if err := x.close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(name)
	if string(got) != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got, want.String())
	}
	if !strings.Contains(string(got), "7,1222,2,1796009000.005123,1796009000.008000,3,123.46,0.01,1796008999.999999,1796009000.008000,2,7,1\n") {
		t.Errorf("first row: %s", got)
	}
}

// TestExportDrainsWhileRunning: the writer drains the ring and flushes the
// file during the test, not only at its end.
func TestExportDrainsWhileRunning(t *testing.T) {
	name := filepath.Join(t.TempDir(), "x.csv")
	x, err := openExport(name, true) // '+': the Load PDU gives no RTT sample
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	c := dataphase.NewConn(dataphase.Params{TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second},
		clockPair())
	c.SetExport(x.ring)
	var b dataphase.RecvBatch
	fillLoad(&b, 1)
	c.Receive(&b)
	deadline := time.Now().Add(30 * time.Second) // bounds a wrong writer only
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(name); strings.Count(string(data), "\n") == 2 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the row never reached the file while the writer ran")
}

func clockPair() clock.Pair { return clock.Pair{Mono: 1e9, Wall: 1796009000e9} }

// fillLoad puts one Load PDU with sequence number seq into b. It echoes
// no Status PDU time: the client sent none, and drops a Load PDU echoing
// one it never sent (dataphase/plausible.go).
func fillLoad(b *dataphase.RecvBatch, seq uint32) {
	p := clockPair()
	h := dataphase.LoadHeader{SeqNo: seq, UDPPayload: 1222}
	h.LpduTimeSec, h.LpduTimeNsec = clock.Split(p.Wall - 2e6)
	h.Encode(b.Buf(0))
	b.Dgrams[0] = dataphase.InDatagram{Len: 1222, Time: p.Mono}
	b.N, b.Pair = 1, p
}
