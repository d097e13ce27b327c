package control

import (
	"bytes"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// refusalCodes are the Setup Response codes the refusal scenarios' READMEs
// state, in capture order.
var refusalCodes = map[string][]uint8{
	"auth_mismatch":        {SetupAuthFail},
	"auth_unexpected":      {SetupAuthNotConf},
	"ds_capacity_exceeded": {SetupCapExceeded},
	"jumbo_mismatch_srv_j": {SetupJumboMismatch},
	"nomaxbw":              {SetupNoMaxBW},
	"bad_version_crafted":  {SetupBadVersion, SetupBadVersion, SetupMCInvalid, SetupMCInvalid},
}

// TestGoldenControlPDUs decodes every captured control PDU of OB-UDPST 9.0.0,
// checks its fields against the scenario's command lines, and re-encodes it
// to the same bytes.
func TestGoldenControlPDUs(t *testing.T) {
	golden.ForEachCapture(t, func(t *testing.T, sc golden.Scenario, e golden.Expect, pdus []golden.PDU) {
		checkControlFlow(t, sc.Name, e, pdus)
	})
}

func checkControlFlow(t *testing.T, name string, e golden.Expect, pdus []golden.PDU) {
	var (
		testPort  = map[int]int{} // client port -> server test port
		responses []uint8
		buf       [ActivationLen]byte
	)
	for i, p := range pdus {
		switch p.ID {
		case "ace1":
			var s SetupPDU
			if err := s.Decode(p.Bytes); err != nil {
				if name == "bad_version_crafted" && p.Dir == "c2s" {
					// The crafted request with a bad checksum must be dropped.
					if _, ok := err.(*dataphase.PDUError); ok && bytes.HasSuffix(p.Bytes, []byte{0xbe, 0xef}) {
						continue
					}
				}
				t.Fatalf("pdu %d: %v", i, err)
			}
			if got := s.Encode(buf[:]); !bytes.Equal(got, p.Bytes) {
				t.Fatalf("pdu %d: re-encoded Setup PDU differs\n got %x\nwant %x", i, got, p.Bytes)
			}
			checkSetup(t, i, e, p, &s)
			if p.Dir == "s2c" {
				responses = append(responses, s.CmdResponse)
				if s.CmdResponse == SetupAccepted {
					testPort[p.DstPort] = int(s.TestPort)
				}
			}
		case "dead":
			var n NullPDU
			if err := n.Decode(p.Bytes); err != nil {
				t.Fatalf("pdu %d: %v", i, err)
			}
			if got := n.Encode(buf[:]); !bytes.Equal(got, p.Bytes) {
				t.Fatalf("pdu %d: re-encoded Null PDU differs\n got %x\nwant %x", i, got, p.Bytes)
			}
			if p.Dir != "s2c" || p.SrcPort != testPort[p.DstPort] {
				t.Errorf("pdu %d: Null PDU %s from port %d, want s2c from the test port %d", i, p.Dir, p.SrcPort, testPort[p.DstPort])
			}
			if n.ProtocolVer != ProtocolVersion || n.CmdRequest != NullCmdRequest || n.AuthMode != authModeOf(e) {
				t.Errorf("pdu %d: Null PDU fields %+v", i, n)
			}
		case "ace2":
			var a ActivationPDU
			if err := a.Decode(p.Bytes, false); err != nil {
				t.Fatalf("pdu %d: %v", i, err)
			}
			if got := a.Encode(buf[:], false); !bytes.Equal(got, p.Bytes) {
				t.Fatalf("pdu %d: re-encoded Test Activation PDU differs\n got %x\nwant %x", i, got, p.Bytes)
			}
			port := p.DstPort
			if p.Dir == "s2c" {
				port = p.SrcPort
			}
			if port != testPort[clientPort(p)] {
				t.Errorf("pdu %d: Test Activation on port %d, want the test port %d", i, port, testPort[clientPort(p)])
			}
			checkActivation(t, i, e, p, &a)
		}
	}
	if want, ok := refusalCodes[name]; ok {
		if !equalCodes(responses, want) {
			t.Errorf("Setup Response codes %v, want %v", responses, want)
		}
	} else if e.Client {
		for _, c := range responses {
			if c != SetupAccepted {
				t.Errorf("Setup Response code %d in a scenario that was accepted", c)
			}
		}
	}
}

func clientPort(p golden.PDU) int {
	if p.Dir == "c2s" {
		return p.SrcPort
	}
	return p.DstPort
}

func authModeOf(e golden.Expect) uint8 {
	if e.Keyed {
		return AuthControl
	}
	return AuthNone
}

func checkSetup(t *testing.T, i int, e golden.Expect, p golden.PDU, s *SetupPDU) {
	t.Helper()
	if p.Dir == "c2s" {
		if p.DstPort != e.ControlPort {
			t.Errorf("pdu %d: Setup Request to port %d, want control port %d", i, p.DstPort, e.ControlPort)
		}
		if s.CmdRequest != SetupCmdRequest || s.CmdResponse != SetupNone {
			t.Errorf("pdu %d: request cmdRequest/cmdResponse %d/%d", i, s.CmdRequest, s.CmdResponse)
		}
	} else {
		if p.SrcPort != e.ControlPort {
			t.Errorf("pdu %d: Setup Response from port %d, want control port %d", i, p.SrcPort, e.ControlPort)
		}
		if s.CmdRequest != SetupCmdResponse {
			t.Errorf("pdu %d: response cmdRequest %d", i, s.CmdRequest)
		}
	}
	if !e.Client {
		return
	}
	if s.ProtocolVer != ProtocolVersion {
		t.Errorf("pdu %d: protocolVer %d", i, s.ProtocolVer)
	}
	var bitmap uint8
	if e.Jumbo {
		bitmap |= SetupJumbo
	}
	if e.Traditional {
		bitmap |= SetupTraditionalMTU
	}
	if s.ModifierBitmap != bitmap {
		t.Errorf("pdu %d: modifierBitmap %#x, want %#x", i, s.ModifierBitmap, bitmap)
	}
	var mbw uint16
	if e.MaxBandwidth > 0 {
		mbw = uint16(max(e.MaxBandwidth/e.Connections, 1))
		if e.Upstream {
			mbw |= MaxBandwidthUpstream
		}
	}
	if s.MaxBandwidth != mbw {
		t.Errorf("pdu %d: maxBandwidth %#x, want %#x", i, s.MaxBandwidth, mbw)
	}
	if s.MCCount != uint8(e.Connections) || s.MCIndex >= s.MCCount || s.MCIdent == 0 {
		t.Errorf("pdu %d: multi-connection fields %d/%d/%d", i, s.MCIndex, s.MCCount, s.MCIdent)
	}
	if s.AuthMode != authModeOf(e) {
		t.Errorf("pdu %d: authMode %d, want %d", i, s.AuthMode, authModeOf(e))
	}
	if e.Keyed && s.KeyID != uint8(e.KeyID) {
		t.Errorf("pdu %d: keyId %d, want %d", i, s.KeyID, e.KeyID)
	}
	if !e.Keyed && (s.AuthUnixTime != 0 || s.AuthDigest != [32]byte{} || s.KeyID != 0) {
		t.Errorf("pdu %d: unauthenticated PDU carries auth bytes", i)
	}
}

func checkActivation(t *testing.T, i int, e golden.Expect, p golden.PDU, a *ActivationPDU) {
	t.Helper()
	dir := ActivationDownstream
	if e.Upstream {
		dir = ActivationUpstream
	}
	if a.CmdRequest != dir {
		t.Errorf("pdu %d: cmdRequest %d, want %d", i, a.CmdRequest, dir)
	}
	want := map[string][2]int{
		"lowThresh":    {int(a.LowThresh), e.LowThresh},
		"upperThresh":  {int(a.UpperThresh), e.UpperThresh},
		"trialInt":     {int(a.TrialInt), e.TrialInt},
		"testIntTime":  {int(a.TestIntTime), e.TestIntTime},
		"subIntPeriod": {int(a.SubIntPeriod), e.SubIntPeriod},
		"srIndexConf":  {int(a.SRIndexConf), e.SRIndexConf},
		"dscpEcn":      {int(a.DSCPECN), e.DSCPECN},
		"ecnCEThresh":  {int(a.ECNCEThresh), e.CEThresh},
		"useOwDelVar":  {int(a.UseOwDelVar), b2i(e.OWD)},
		"ignoreOooDup": {int(a.IgnoreOooDup), b2i(!e.IncludeOooDup)},
		"rateAdjAlgo":  {int(a.RateAdjAlgo), b2i(e.AlgorithmC)},
		"srAdjSupp":    {int(a.SRAdjSuppCount), e.SuppCount},
		"authMode":     {int(a.AuthMode), int(authModeOf(e))},
	}
	for f, v := range want {
		if v[0] != v[1] {
			t.Errorf("pdu %d (%s): %s = %d, want %d", i, p.Dir, f, v[0], v[1])
		}
	}
	random := e.RandomPayload
	if p.Dir == "s2c" {
		random = random && e.ServerRandom
		if a.CmdResponse != ActivationAccepted {
			t.Errorf("pdu %d: activation cmdResponse %d", i, a.CmdResponse)
		}
		// Upstream the response carries the first row: row 0 for an
		// automatic search, else the fixed or starting row.
		if e.Upstream {
			row := 0
			if e.SRIndexConf != dataphase.AutoRateIndex && e.SuppCount == 0 {
				row = e.SRIndexConf
			}
			if wantRate := dataphase.BuildRateTable(dataphase.TableOptions{NoJumbo: !e.Jumbo, TraditionalMTU: e.Traditional})[row]; a.Rate != wantRate {
				t.Errorf("pdu %d: srStruct %+v, want row %d %+v", i, a.Rate, row, wantRate)
			}
		} else if a.Rate != (dataphase.SendingRate{}) {
			t.Errorf("pdu %d: downstream response carries a rate %+v", i, a.Rate)
		}
		if e.DSCPECN != 0 && p.TOS != e.DSCPECN {
			t.Errorf("pdu %d: TA Response TOS %#x, want %#x (marked before it is sent)", i, p.TOS, e.DSCPECN)
		}
	} else if a.Rate != (dataphase.SendingRate{}) || a.CmdResponse != 0 {
		t.Errorf("pdu %d: request carries cmdResponse %d or a rate", i, a.CmdResponse)
	}
	if got := a.ModifierBitmap&ActivationRandomPayload != 0; got != random {
		t.Errorf("pdu %d (%s): random payload bit %v, want %v", i, p.Dir, got, random)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func equalCodes(a, b []uint8) bool {
	return bytes.Equal(a, b)
}
