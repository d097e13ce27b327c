package e2e

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

// TestHostileAmplificationBeforeProofLegacy is
// TestHostileAmplificationBeforeProof in protocol 8's layouts (OB-UDPST
// 7.x, docs/compatibility.md): an attacker that made a Setup from B's
// address asks for a 1 Gbit/s row downstream, B silent or kept "alive" by
// forged 156-byte Status PDUs. What reaches B stays within 3x what the
// attacker sent, and the server ends the test for want of a proof of
// receipt: the old layouts do not open a way around the defence.
func TestHostileAmplificationBeforeProofLegacy(t *testing.T) {
	for _, victim := range []string{"silent", "kept alive"} {
		t.Run(victim, func(t *testing.T) { legacyAmplificationCase(t, victim) })
	}
}

func legacyAmplificationCase(t *testing.T, victim string) {
	l, srv, vb := victimLab(t, udpstpBin)
	forged, err := l.ListenUDP(l.ClientNS, netip.AddrPortFrom(vb, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer forged.Close()
	sent := 0
	// A 48-byte protocol 8 Setup Request: jumboStatus 1 at 10.
	req := make([]byte, 48)
	binary.BigEndian.PutUint16(req[0:], 0xACE1)
	binary.BigEndian.PutUint16(req[2:], 8)
	req[4], req[10] = 1, 1
	if _, err := forged.WriteToUDPAddrPort(req, netip.AddrPortFrom(l.ServerAddr, labPort)); err != nil {
		t.Fatal(err)
	}
	sent += len(req)
	buf := make([]byte, 2048)
	forged.SetReadDeadline(time.Now().Add(3 * time.Second))
	n, _, err := forged.ReadFromUDPAddrPort(buf)
	if err != nil || n != 48 || buf[5] != 1 {
		t.Fatalf("setup response %x, %v", buf[:n], err)
	}
	test := netip.AddrPortFrom(l.ServerAddr, binary.BigEndian.Uint16(buf[8:]))
	if victim == "silent" {
		inNS(t, l, l.ClientNS, "", "nft", "add", "rule", "ip", "victim", "in", "ip", "daddr", vb.String(), "meta", "l4proto", "udp", "drop")
	}
	// A 56-byte Test Activation Request, downstream, fixed row 1000.
	ta := forgedActivation(false, 1000)
	ta.ProtocolVer, ta.SubIntPeriodSec, ta.SubIntPeriod = 8, 1, 0
	out := ta.Encode(make([]byte, 104), true)[:56]
	if _, err := forged.WriteToUDPAddrPort(out, test); err != nil {
		t.Fatal(err)
	}
	sent += len(out)
	if victim == "kept alive" {
		s := dataphase.StatusPDU{RTTMinimum: dataphase.NoDelay, RTTVarSample: dataphase.NoDelay, DelayVarMin: dataphase.NoDelay}
		pdu := make([]byte, dataphase.StatusLen)
		for i := 1; i <= 20; i++ {
			time.Sleep(250 * time.Millisecond)
			s.SeqNo = uint32(i)
			n := s.EncodeProto(pdu, 8)
			if _, err := forged.WriteToUDPAddrPort(pdu[:n], test); err != nil {
				t.Fatal(err)
			}
			sent += n
		}
	}
	line := srv.findLine("test ended", 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	pkts, bytes := nftCounter(t, l, l.ClientNS, "victim", "to_victim")
	payload := bytes - 28*pkts
	t.Logf("victim %s: %d datagrams, %d bytes of UDP payload reached B for %d bytes the attacker sent (%.2fx); server: %s",
		victim, pkts, payload, sent, float64(payload)/float64(sent), line)
	if payload > dataphase.AmpFactor*sent {
		t.Errorf("%d bytes reached the victim for %d sent: more than %dx", payload, sent, dataphase.AmpFactor)
	}
	if !strings.Contains(line, "peer never confirmed receipt") {
		t.Errorf("server's end %q\n%s", line, srv.log())
	}
}
