package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// TestFamiliesDeclared: every udpstp_ family /metrics and /probe expose,
// with every figure set and a spool watched, is one of Families, with its
// help: the list TestFamiliesOnce (package metrics) checks is complete.
func TestFamiliesDeclared(t *testing.T) {
	declared := map[string]string{}
	for _, f := range Families() {
		declared[f.Name] = f.Help
	}
	f := 1.0
	now := time.Now()
	r := &store.Result{Test: "t", Server: "s:1", Direction: "up", Status: store.StatusOK, Start: now, End: now.Add(time.Second),
		MaxMbps: &f, SummaryMbps: &f, LossRatio: &f, RTTMinMs: &f, RTTRangeMs: &f, DelayVarMs: &f, LoadedMs: &f, RPM: &f,
		CrossMbps: &f, CrossBusy: true}
	m := newMetrics()
	m.watchSpool(fakeSpool{})
	m.observe(r)
	m.setNext(map[string]time.Time{"t": now})
	agentFams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	probeFams, err := probeRegistry(r).Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range append(agentFams, probeFams...) {
		if !strings.HasPrefix(mf.GetName(), "udpstp_") {
			continue
		}
		n++
		if help, ok := declared[mf.GetName()]; !ok || help != mf.GetHelp() {
			t.Errorf("%s (%q) exposed, declared: %v %q", mf.GetName(), mf.GetHelp(), ok, help)
		}
	}
	if n != len(declared) {
		t.Errorf("%d families exposed, %d declared", n, len(declared))
	}
}

type fakeSpool struct{}

func (fakeSpool) State() store.SpoolState {
	return store.SpoolState{Pending: 2, Failures: 3, Refused: 1, DropFailures: 4}
}
func (fakeSpool) RemoteUp() bool { return true }
