package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/loopserver"
	"github.com/udpstp/udpstp/report/resultdoc"
	"github.com/udpstp/udpstp/store"
)

// TestAgentSelectRTTBidirectional: the agent binary's bidirectional test
// with select = "rtt" between our server 20 ms away (behind a relay) and
// OB-UDPST's on loopback (UDPST_BIN; our server there without it): both
// halves test the near one, the upstream half on its measured Setup (the
// Setup held, then activated: Pending.Activate against OB-UDPST's
// server), and the stored document records the choice.
func TestAgentSelectRTTBidirectional(t *testing.T) {
	processTest(t)
	nearBin, name := udpstpBin, "udpstp"
	var nearArgs []string
	if ob := optionalUdpstBin(t); ob != "" {
		nearBin, name = ob, "OB-UDPST"
	} else {
		t.Log("UDPST_BIN is not set: the near server is ours")
		nearArgs = []string{"server"}
	}
	nearPort := freePort(t, "127.0.0.1")
	spawnServer(t, nearBin, append(nearArgs, "-p", strconv.Itoa(nearPort), "127.0.0.1")...)
	farPort := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(farPort), "127.0.0.1")
	far := loopserver.Relay(t, "127.0.0.1:0", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(farPort)), 20*time.Millisecond)
	near := fmt.Sprintf("127.0.0.1:%d", nearPort)

	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf("tolerance = \"10m\"\n[probe]\nmin_interval = \"1s\"\nmax_duration = \"30s\"\n"+
		"\n[[test]]\nname = \"pick\"\nservers = [%q, %q]\ndirection = \"bidirectional\"\nselect = \"rtt\"\nevery = \"2s\"\n"+
		"options = { test-time = 5, rate-index = \"20\" }\n", far.String(), near))
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")
	var rs []store.Result
	waitUntil(t, 120*time.Second, "a result", func() (bool, string) {
		rs = a.results(t, store.Filter{Test: "pick", Limit: 1})
		return len(rs) == 1, a.log()
	})
	r := rs[0]
	if r.Server != near || r.Status != store.StatusOK {
		t.Fatalf("result %+v: want an ok result from %s's %s\n%s", r, name, near, a.log())
	}
	st, err := store.Open(context.Background(), a.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	full, err := st.Get(context.Background(), r.ID) // a list leaves the document out
	if err != nil {
		t.Fatal(err)
	}
	doc, err := resultdoc.Decode(full.Doc)
	if err != nil {
		t.Fatal(err)
	}
	var chosen int
	for half, raw := range map[string][]byte{"upstream": doc.Upstream, "downstream": doc.Downstream} {
		h, err := resultdoc.DecodeTest(raw)
		if err != nil {
			t.Fatalf("%s half: %v", half, err)
		}
		if h.Input == nil || len(h.Input.HostList) != 1 || int(h.Input.HostList[0].ControlPort) != nearPort {
			t.Errorf("%s half: Input %+v, want the test against %s", half, h.Input, near)
		}
		if h.Udpstp == nil || h.Udpstp.ServerSelection == nil {
			continue
		}
		for _, c := range h.Udpstp.ServerSelection.Candidates {
			if c.Chosen == 1 {
				chosen++
				if int(c.ControlPort) != nearPort || c.SetupRTTMicroseconds == nil {
					t.Errorf("%s half chose %+v, want %s with its round trip", half, c, near)
				}
			}
		}
	}
	if chosen != 1 {
		t.Errorf("%d candidates chosen over both halves' documents, want 1 (one search)", chosen)
	}
}
