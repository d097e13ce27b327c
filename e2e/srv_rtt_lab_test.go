//go:build linux

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"github.com/udpstp/udpstp/report/resultdoc"
	"github.com/udpstp/udpstp/store"
)

// TestDnsmasqLabSRVSelectRTT: an agent's test of srv:NAME with select =
// "rtt" asks dnsmasq for the records, measures each candidate's Setup
// round trip and tests the nearest, although RFC 2782's order puts the
// other first: the two records share a priority, "far" with the largest
// weight and "near" with weight 0 (drawn first once in 65,536 orders).
// "far" is in the server namespace, behind the relay's 10 ms each way;
// "near" is on the client's own host (its namespace), off the lab's path.
// The same records without select test "far": the round trips, not the
// records, made the choice. (Within a priority only: a lower priority is
// tried first however far, as RFC 2782 asks.)
func TestDnsmasqLabSRVSelectRTT(t *testing.T) {
	delay := netlab.Shape{Relay: netlab.Impairment{Delay: 10 * time.Millisecond}}
	s := startSRVLab(t, netlab.Config{Down: delay, Up: delay},
		map[string][]string{"far": nil, "near": nil},
		[]srvRecord{{name: "pick", target: "far", prio: 10, weight: 65535}, {name: "pick", target: "near", prio: 10, weight: 0}},
		"near")
	l := s.l

	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	test := "\n[[test]]\nname = %q\nservers = [\"srv:pick.test\"]\n%sdirection = \"down\"\nevery = \"2s\"\n" +
		"options = { test-time = 5, rate-index = \"20\" }\n"
	writeAgentFile(t, config, "tolerance = \"10m\"\n"+fmt.Sprintf(test, "rtt", "select = \"rtt\"\n")+fmt.Sprintf(test, "order", ""))
	inner := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	a := &agentProc{base: "http://" + forwardIntoNS(t, l, l.ClientNS, inner), store: "sqlite:" + filepath.Join(dir, "results.db")}
	runAgent(t, a, l.Command(l.ClientNS, udpstpBin, "agent", "--http", inner, "--store", a.store,
		"--identity", "probe-srv", "--test-min-every", "1s", "--config", config))
	a.stopAtCleanup(t, "agent")

	st, err := store.Open(context.Background(), a.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for test, want := range map[string]string{"rtt": "near", "order": "far"} {
		var rs []store.Result
		waitUntil(t, 120*time.Second, "a result of "+test, func() (bool, string) {
			rs = a.results(t, store.Filter{Test: test, Limit: 1})
			return len(rs) == 1, a.log()
		})
		full, err := st.Get(context.Background(), rs[0].ID) // a list leaves the document out
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != store.StatusOK {
			t.Fatalf("%s: result %s %d %q, want ok\n%s", test, full.Status, full.ErrorStatus, full.Warning, a.log())
		}
		doc, err := resultdoc.DecodeTest(full.Doc)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Input == nil || len(doc.Input.HostList) != 1 || int(doc.Input.HostList[0].ControlPort) != s.ports[want] ||
			doc.Input.HostIPAddress != s.addrs[want] {
			t.Errorf("%s: Input %+v, want the test against %s (%s port %d)\n%s", test, doc.Input, want, s.addrs[want], s.ports[want], a.log())
		}
		sel := doc.Udpstp != nil && doc.Udpstp.ServerSelection != nil
		if test == "order" {
			if sel {
				t.Errorf("order: a selection %+v without select = \"rtt\"", doc.Udpstp.ServerSelection)
			}
			continue
		}
		if !sel || len(doc.Udpstp.ServerSelection.Candidates) != 2 {
			t.Fatalf("rtt: the document records no measurement of both candidates: %+v", doc.Udpstp)
		}
		rtt := map[int]float64{}
		for _, c := range doc.Udpstp.ServerSelection.Candidates {
			if c.SetupRTTMicroseconds == nil {
				t.Fatalf("rtt: candidate %+v has no round trip", c)
			}
			rtt[int(c.ControlPort)] = *c.SetupRTTMicroseconds
			if (c.Chosen == 1) != (int(c.ControlPort) == s.ports["near"]) {
				t.Errorf("rtt: candidate %+v, want only near (port %d) chosen", c, s.ports["near"])
			}
		}
		// The relay adds 20 ms to far's round trip, nothing to near's
		// (a few ms at most on a busy machine).
		far, near := rtt[s.ports["far"]], rtt[s.ports["near"]]
		t.Logf("rtt: Setup round trips far %.0f µs, near %.0f µs", far, near)
		if far < 20000 || near >= far {
			t.Errorf("rtt: Setup round trips far %.0f µs, near %.0f µs: want far at least 20 ms, near less", far, near)
		}
		if line := fmt.Sprintf("chosen=%s:%d", s.addrs["near"], s.ports["near"]); !strings.Contains(a.log(), line) {
			t.Errorf("the agent's log lacks the selection line's %q\n%s", line, a.log())
		}
	}
}
