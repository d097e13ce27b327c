package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace is the prefix of every metric name udpstp exports.
const Namespace = "udpstp"

// Kind says whether a Sample is a counter or a gauge.
type Kind uint8

const (
	Counter Kind = iota // a count since the process started; "_total" is added to its name
	Gauge               // a level that goes down as well as up
)

// Label is one label of a Sample.
type Label struct{ Name, Value string }

// Sample is one value a Source reports.
type Sample struct {
	// Name is snake_case, without Namespace and, for a Counter, without
	// "_total": the name in the counter's table.
	Name string
	// Help says what is measured, in a sentence without a final period.
	Help   string
	Kind   Kind
	Labels []Label // the same label names, in the same order, for every Sample of a Name
	Value  float64
}

// Source reports its Samples to emit, reading them when it is called:
// at every scrape, never in between.
type Source func(emit func(Sample))

// Collector is a prometheus.Collector over Sources. It describes nothing
// in advance (an unchecked collector): what it exports follows the
// counter tables, which change with the code, not with configuration.
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

// Collect reads every Source and sends its Samples as constant metrics.
// A Sample the client library refuses becomes an invalid metric, which the
// registry reports at the scrape, naming it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.sources {
		src(func(s Sample) {
			d, values := c.desc(&s)
			vt := prometheus.GaugeValue
			if s.Kind == Counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(d, vt, s.Value, values...)
			if err != nil {
				m = prometheus.NewInvalidMetric(d, err)
			}
			ch <- m
		})
	}
}

// FullName is a Sample's exported name: Namespace, its name, and "_total"
// for a counter.
func FullName(s *Sample) string {
	name := Namespace + "_" + s.Name
	if s.Kind == Counter {
		name += "_total"
	}
	return name
}

// desc returns the Desc of s (made once per name and label set) and its
// label values.
func (c *Collector) desc(s *Sample) (*prometheus.Desc, []string) {
	name := FullName(s)
	names := make([]string, len(s.Labels))
	values := make([]string, len(s.Labels))
	for i, l := range s.Labels {
		names[i], values[i] = l.Name, l.Value
	}
	key := name + "{" + strings.Join(names, ",") + "}"
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.descs[key]
	if !ok {
		d = prometheus.NewDesc(name, s.Help, names, nil)
		c.descs[key] = d
	}
	return d, values
}
