package enginenet

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/engine"
)

// TestEngineSettings: each experimental setting is taken within its limits,
// and a value outside them or that does not parse is ignored with one
// warning naming the setting, leaving the default.
func TestEngineSettings(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want engine.PoolOptions
		gro  bool
		warn []string // settings warned about, in order
	}{
		{env: nil},
		{env: map[string]string{envEngineThreads: "3", envEngineHoldOff: "100us", envEngineGroup: "1ms", envEnginePhase: "20", envEngineGRO: "1", envEngineURing: "1"},
			want: engine.PoolOptions{Threads: 3, HoldOff: 100 * time.Microsecond, Group: time.Millisecond, PhaseConns: 20, Ring: true}, gro: true},
		{env: map[string]string{envEngineHoldOff: "0", envEngineGroup: "0", envEnginePhase: "0", envEngineGRO: "0", envEngineURing: "0"},
			want: engine.PoolOptions{HoldOff: -1, PhaseConns: -1}},
		{env: map[string]string{envEngineThreads: "0", envEngineHoldOff: "-1us", envEngineGroup: "2ms", envEnginePhase: "-3", envEngineGRO: "yes", envEngineURing: "on"},
			warn: []string{envEngineThreads, envEngineHoldOff, envEngineGroup, envEnginePhase, envEngineURing, envEngineGRO}},
		{env: map[string]string{envEngineThreads: "two", envEngineHoldOff: "5", envEngineGroup: "1h", envEnginePhase: "1.5"},
			warn: []string{envEngineThreads, envEngineHoldOff, envEngineGroup, envEnginePhase}},
		{env: map[string]string{envEngineHoldOff: "2s"}, want: engine.PoolOptions{HoldOff: 2 * time.Second}}, // no upper bound
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		getenv := func(k string) string { return tt.env[k] }
		o := poolOptions(getenv, log)
		gro := groOption(getenv, log)
		o.Log = nil
		if o != tt.want || gro != tt.gro {
			t.Errorf("%v: options %+v GRO %v, want %+v GRO %v", tt.env, o, gro, tt.want, tt.gro)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if buf.Len() == 0 {
			lines = nil
		}
		if len(lines) != len(tt.warn) {
			t.Errorf("%v: %d log lines, want a warning for each of %v:\n%s", tt.env, len(lines), tt.warn, buf.String())
			continue
		}
		for i, name := range tt.warn {
			if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], "ignoring "+name+": want ") ||
				!strings.Contains(lines[i], "value="+tt.env[name]) {
				t.Errorf("log line %d %q: want a warning that ignores %s=%s", i, lines[i], name, tt.env[name])
			}
		}
	}
}
