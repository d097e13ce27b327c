package metrics

import (
	"fmt"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/udpstp/udpstp/metrics/family"
)

// Namespace is the prefix of every metric name udpstp exports.
const Namespace = "udpstp"

// Source reports its samples to emit, reading them when it is called: at
// every scrape, never in between. Each sample's Family is declared once
// (package family): a variable beside the Source, or a row of a counter
// table (Server, Sockets).
type Source func(emit func(family.Sample))

// Collector is a prometheus.Collector over Sources: the one way udpstp's
// HTTP endpoints (the server's, the agent's /metrics and /probe) export
// metrics, each series built at scrape time as a constant metric. It
// describes nothing in advance (an unchecked collector): what it exports
// follows the counter tables, which change with the code, not with
// configuration.
type Collector struct {
	sources []Source

	mu    sync.Mutex
	descs map[string]*prometheus.Desc // by full name and label names
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector over sources.
func NewCollector(sources ...Source) *Collector {
	return &Collector{sources: sources, descs: map[string]*prometheus.Desc{}}
}

// Describe sends nothing: the Collector is unchecked.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every Source and sends its samples as constant metrics.
// A sample the client library refuses becomes an invalid metric, which the
// registry reports at the scrape, naming it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.sources {
		src(func(s family.Sample) { ch <- c.metric(&s) })
	}
}

// metric is s as the client library's constant metric.
func (c *Collector) metric(s *family.Sample) prometheus.Metric {
	d := c.desc(s.Family)
	var m prometheus.Metric
	var err error
	switch s.Family.Type {
	case family.Counter:
		m, err = prometheus.NewConstMetric(d, prometheus.CounterValue, s.Value, s.Values...)
	case family.Gauge:
		m, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, s.Value, s.Values...)
	case family.Histogram:
		h := s.Hist
		if h == nil {
			h = &family.HistogramValue{}
		}
		m, err = prometheus.NewConstHistogram(d, h.Count, h.Sum, h.Buckets, s.Values...)
	default:
		err = fmt.Errorf("metric type %v", s.Family.Type)
	}
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// Families are the families sources report, each once, in the order
// first reported: what they export at a scrape now (a table's families
// are all reported, whatever their values).
func Families(sources ...Source) []*family.Family {
	var out []*family.Family
	seen := map[*family.Family]bool{}
	for _, src := range sources {
		src(func(s family.Sample) {
			if !seen[s.Family] {
				seen[s.Family] = true
				out = append(out, s.Family)
			}
		})
	}
	return out
}

// desc returns the Desc of f, made once per name and label names.
func (c *Collector) desc(f *family.Family) *prometheus.Desc {
	key := f.Name + "{" + strings.Join(f.Labels, ",") + "}"
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.descs[key]
	if !ok {
		d = prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		c.descs[key] = d
	}
	return d
}
