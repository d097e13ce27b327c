package main

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
)

// TestClientPlan: --bidirectional (or -u with -d), --repeat and --pause
// reach the plan, and a bidirectional test gets its idle baseline: 2 s of
// Sub-Intervals with rate adjustment suppressed, or the user's -i -count.
func TestClientPlan(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		plan     client.Plan
		bimodal  int
		suppress bool
	}{
		{[]string{"-d", "h"}, client.Plan{}, 0, false},
		{[]string{"--bidirectional", "h"}, client.Plan{Bidirectional: true}, 2, true},
		{[]string{"-u", "-d", "h"}, client.Plan{Bidirectional: true}, 2, true},
		{[]string{"-ud", "h", "-t", "5"}, client.Plan{Bidirectional: true}, 2, true},
		{[]string{"--bidirectional", "-u", "h"}, client.Plan{Bidirectional: true}, 2, true},
		{[]string{"--bidirectional", "h", "-P", "100"}, client.Plan{Bidirectional: true}, 20, true},
		{[]string{"--bidirectional", "h", "-t", "5", "-P", "2500"}, client.Plan{Bidirectional: true}, 1, true},
		{[]string{"--bidirectional", "h", "-i", "-4"}, client.Plan{Bidirectional: true}, 4, true},
		{[]string{"-d", "h", "--repeat", "3"}, client.Plan{Repeat: 3}, 0, false},
		{[]string{"-d", "h", "--repeat", "3", "--pause", "1.5"}, client.Plan{Repeat: 3, Pause: 1500 * time.Millisecond}, 0, false},
		{[]string{"-d", "h", "--repeat", "2", "--pause", "2m"}, client.Plan{Repeat: 2, Pause: 2 * time.Minute}, 0, false},
		{[]string{"-d", "h", "--repeat=1000", "--pause", "0"}, client.Plan{Repeat: 1000}, 0, false},
		{[]string{"-ud", "h", "--repeat", "2", "--pause", "500ms"}, client.Plan{Bidirectional: true, Repeat: 2, Pause: 500 * time.Millisecond}, 2, true},
	} {
		cfg, lo := mustClient(t, tt.args...)
		if lo.Plan != tt.plan {
			t.Errorf("%q: plan %+v, want %+v", tt.args, lo.Plan, tt.plan)
		}
		if cfg.Bimodal != tt.bimodal || cfg.Suppress != tt.suppress {
			t.Errorf("%q: -i %d suppress %v, want %d %v", tt.args, cfg.Bimodal, cfg.Suppress, tt.bimodal, tt.suppress)
		}
		if tt.plan.Bidirectional && (cfg.Upstream || !cfg.UseOwDelVar) {
			t.Errorf("%q: a bidirectional test's config is upstream (%v) or searches on the RTT (-o %v)", tt.args, cfg.Upstream, cfg.UseOwDelVar)
		}
		if !tt.plan.Bidirectional && cfg.UseOwDelVar {
			t.Errorf("%q: -o without being asked", tt.args)
		}
	}
}

// TestClientPlanRefusals: the plan's own checks, one line each, exit 50.
func TestClientPlanRefusals(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"client", "-d", "h", "--pause", "5s"}, []string{"ERROR: --pause needs --repeat"}},
		{[]string{"client", "-d", "h", "--repeat", "0"}, []string{"out-of-range for --repeat (1-1000)"}},
		{[]string{"client", "-d", "h", "--repeat", "1001"}, []string{"out-of-range for --repeat (1-1000)"}},
		{[]string{"client", "-d", "h", "--repeat", "x"}, []string{"'x' is not a valid number for --repeat"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--pause", "-1s"}, []string{"out-of-range for --pause (0-3600)"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--pause", "3601"}, []string{"out-of-range for --pause (0-3600)"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--pause", "2h"}, []string{"out-of-range for --pause (0-3600)"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--pause", "soon"}, []string{"'soon' is not a valid duration for --pause"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--pause", "NaN"}, []string{"'NaN' is not a valid duration for --pause"}},
		{[]string{"client", "--bidirectional", "h", "-i", "3"},
			[]string{"ERROR: --bidirectional measures its idle baseline with rate adjustment suppressed", "-i -3"}},
		{[]string{"client", "--bidirectional", "h", "-t", "5", "-P", "5000"},
			[]string{"ERROR: --bidirectional needs at least 2 Sub-Intervals", "give 1"}},
		// OB-UDPST's own check comes first.
		{[]string{"client", "--bidirectional", "h", "-t", "5", "-i", "-5"},
			[]string{"ERROR: Bimodal count must be less than total sub-intervals"}},
		{[]string{"client", "-ud", "h", "--textfile", "/tmp/x.prom"}, []string{"ERROR: --textfile holds one test of one direction: not with --bidirectional"}},
		{[]string{"client", "-d", "h", "--repeat", "2", "--textfile", "/tmp/x.prom"}, []string{"ERROR: --textfile holds one test of one direction: not with --repeat"}},
		{[]string{"server", "--bidirectional"}, []string{"ERROR: Bidirectional test only valid when client"}},
		{[]string{"server", "--repeat", "2"}, []string{"ERROR: Repeated tests only valid when client"}},
		{[]string{"server", "--pause", "1"}, []string{"ERROR: Pause between tests only valid when client"}},
	} {
		mustFail(t, exitConfig, tt.args, tt.want...)
	}
}
