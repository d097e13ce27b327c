//go:build !small

package metrics_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/udpstp/udpstp/agent"
	"github.com/udpstp/udpstp/collector"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/metrics"
	"github.com/udpstp/udpstp/metrics/family"
	"github.com/udpstp/udpstp/report/textfile"
)

// TestFamiliesOnce lists every metric family the binary can expose: the
// server's endpoint (every source, the counter tables' every row, and
// the client library's go_* and process_*), the agent's /metrics and
// /probe, and a client's textfile; a name declared twice with other
// help, type or labels fails it.
func TestFamiliesOnce(t *testing.T) {
	sources := []metrics.Source{
		metrics.Server(func() control.ServerSnapshot { return control.ServerSnapshot{} }),
		metrics.Sockets(func() (down, up engine.SocketCounts) { return down, up }),
		metrics.UDPNetns(),
		metrics.Build(metrics.BuildInfo{}),
		metrics.Pool(func() engine.PoolStats { return engine.PoolStats{} }),
		metrics.Archive(func() (w, f, d uint64) { return 0, 0, 0 }, func() (int, bool) { return 0, true }),
	}
	server := metrics.Families(sources...)
	reg, err := metrics.NewRegistry(sources...)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		server = append(server, gathered(mf))
	}
	all := append(append(append(server, agent.Families()...), textfile.Families...), collector.Families...)
	if len(server) < 50 || len(agent.Families()) < 10 || len(textfile.Families) < 10 {
		t.Fatalf("%d server, %d agent, %d textfile families: a list is missing", len(server), len(agent.Families()), len(textfile.Families))
	}
	if err := family.Check(all); err != nil {
		t.Error(err)
	}
}

// gathered is the family the registry gathered as mf.
func gathered(mf *dto.MetricFamily) *family.Family {
	f := &family.Family{Name: mf.GetName(), Help: mf.GetHelp()}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		f.Type = family.Counter
	case dto.MetricType_GAUGE:
		f.Type = family.Gauge
	case dto.MetricType_HISTOGRAM:
		f.Type = family.Histogram
	default:
		f.Type = 255
	}
	if ms := mf.GetMetric(); len(ms) > 0 {
		for _, l := range ms[0].GetLabel() {
			f.Labels = append(f.Labels, l.GetName())
		}
	}
	return f
}
