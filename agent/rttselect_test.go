//go:build linux && !small && !mips && !mipsle

package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/store"
)

// A test with select = "rtt" and a list of servers, the first silent:
// the real client measures both, tests against the one that answered,
// stores the result under that server (not the list's first), and the
// log's line names each server's Setup round trip and the one chosen.
func TestSelectRTTList(t *testing.T) {
	port := startControlServer(t)
	silent := newUDPCounter(t)
	cfg := mustParse(t, fmt.Sprintf("[[test]]\nname = \"near\"\nservers = [\"127.0.0.1:%d\", \"127.0.0.1:%d\"]\n"+
		"direction = \"up\"\nselect = \"rtt\"\noptions = { test-time = %d }\n", silent.port(), port, control.MinTestIntTime))
	cfg.Tests[0].Client.MaxRateMbps = 10 // a light test: the choice is what is tested
	logw := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logw, nil))
	st := &memStore{}
	a := New(cfg, Options{Store: st, Identity: "probe-1", Parse: fakeParse, Log: log,
		Network: func() (control.Network, func()) { return enginenet.NewClient(enginenet.Options{Log: log}) }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*control.SetupTimeout+60*time.Second)
	defer cancel()
	rs := a.runTest(ctx, cfg.Tests[0])
	want := fmt.Sprintf("127.0.0.1:%d", port)
	if len(rs) != 1 || rs[0].Status != store.StatusOK || rs[0].Server != want {
		t.Fatalf("results %+v: want one ok result from %s", rs, want)
	}
	if silent.n.Load() == 0 {
		t.Error("the silent server got no Setup: it was not measured")
	}
	line := ""
	for _, l := range strings.Split(logw.String(), "\n") {
		if strings.Contains(l, "server selection") {
			line = l
		}
	}
	t.Log(line)
	for _, w := range []string{"select=rtt", "chosen=" + want, fmt.Sprintf("127.0.0.1:%d=-", silent.port()), want + "="} {
		if !strings.Contains(line, w) {
			t.Errorf("log line %q: no %q", line, w)
		}
	}
	if !strings.Contains(string(rs[0].Doc), `"ServerSelection"`) {
		t.Error("the stored document has no ServerSelection")
	}
}
