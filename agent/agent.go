package agent

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/store"
)

// Options are what an Agent needs beyond its Config.
type Options struct {
	Store    store.Store
	Identity string // the probe's name in every result (default: hostname)
	// Network opens the client's network for one test and returns its
	// closer: enginenet.NewClient in the binary.
	Network func() (control.Network, func())
	// Parse is the client's command-line parser (/probe's target and
	// duration are checked by it).
	Parse   ClientParser
	Log     *slog.Logger
	Version string
	// Rand draws memoryless spacings; nil: seeded from the system.
	Rand *rand.Rand
	// InFlight, if set, is the file that records the test running, so
	// that a kill during it is stored at the next start (inflight.go).
	InFlight string
	// Now is the wall clock; nil: time.Now. Slots are wall-clock times
	// (monotonic reading stripped), so that a machine that slept past a
	// slot sees it as late.
	Now func() time.Time
}

// ErrBusy is the answer to a test asked for while another runs.
var ErrBusy = errors.New("agent: a test is running")

// Agent runs the tests of its Config, one at a time.
type Agent struct {
	o   Options
	cfg atomic.Pointer[Config]
	// lock is the test lock: one token, taken by whoever runs a test.
	lock    chan struct{}
	running atomic.Pointer[string]
	reload  chan struct{}
	base    atomic.Pointer[context.Context] // Run's, for RunNow
	// runNows are RunNow's tests: Run waits for them before it returns,
	// so that a stop during one stores its result.
	runNows sync.WaitGroup
	// kept are the results the store refused, retried (retry.go).
	keptMu   sync.Mutex
	kept     []*store.Result
	keptErr  error
	keptWake chan struct{}
	// resume are the cron slots Restore found just passed, by test: Run's
	// first slot of each.
	resumeMu sync.Mutex
	resume   map[string]time.Time
	// nextRuns are the tests' next slots as last published (publishNext):
	// logged, on /metrics and for NextRuns.
	nextMu   sync.Mutex
	nextRuns map[string]time.Time
	// crossPrior is the slot's look at its line (deferWhileBusy), for
	// its test's window before (crossBefore); taken once.
	crossPrior atomic.Pointer[crossReading]
	// inFlight is the in-flight file's record of the test running (nil:
	// none, or no file).
	inFlight atomic.Pointer[inFlight]
	stopMu   sync.Mutex
	stopped  bool // Run has returned: RunNow starts nothing more
	events   hub
	m        *metrics
	// sleeps counts the schedule loop's waits (its tests know it has
	// drawn its slots).
	sleeps atomic.Int64
	// runClient is client.Run; the runner's tests replace it.
	runClient func(ctx context.Context, cfg *control.ClientConfig, o client.Options) int

	randMu sync.Mutex

	probeMu   sync.Mutex
	lastProbe time.Time
}

// New returns an agent with cfg (nil: Default, no scheduled tests).
func New(cfg *Config, o Options) *Agent {
	if cfg == nil {
		cfg = Default()
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	a := &Agent{o: o, lock: make(chan struct{}, 1), reload: make(chan struct{}, 1), keptWake: make(chan struct{}, 1), resume: map[string]time.Time{}, m: newMetrics(), runClient: client.Run}
	a.lock <- struct{}{}
	a.cfg.Store(cfg)
	if sp, ok := o.Store.(spooler); ok {
		a.m.watchSpool(sp)
	}
	return a
}

// Config is the configuration in force.
func (a *Agent) Config() *Config { return a.cfg.Load() }

// Reload puts cfg in force; the schedules of tests it keeps by name keep
// their next slots.
func (a *Agent) Reload(cfg *Config) {
	a.cfg.Store(cfg)
	a.m.reloads.Set(1)
	select {
	case a.reload <- struct{}{}:
	default:
	}
}

// ReloadFailed counts a configuration that was refused (the old one stays).
func (a *Agent) ReloadFailed() { a.m.reloads.Set(0) }

// Tests are the names of the configured tests, in the file's order.
func (a *Agent) Tests() []string {
	var names []string
	for _, t := range a.cfg.Load().Tests {
		names = append(names, t.Name)
	}
	return names
}

// Running is the name of the test running now, "" when idle.
func (a *Agent) Running() string {
	if p := a.running.Load(); p != nil {
		return *p
	}
	return ""
}

// Subscribe returns the live events of the tests that run from now on,
// each one JSON line of the client's event stream (docs/json-stream.md),
// and the function that ends the subscription. A subscriber that does not
// keep up loses events, never slows a test.
func (a *Agent) Subscribe() (<-chan []byte, func()) { return a.events.subscribe() }

// tryLock takes the test lock if it is free.
func (a *Agent) tryLock(name string) bool {
	select {
	case <-a.lock:
		a.running.Store(&name)
		a.m.running.Set(1)
		return true
	default:
		return false
	}
}

// waitLock takes the test lock, waiting for it.
func (a *Agent) waitLock(ctx context.Context, name string) error {
	select {
	case <-a.lock:
		a.running.Store(&name)
		a.m.running.Set(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *Agent) unlock() {
	a.running.Store(nil)
	a.m.running.Set(0)
	a.lock <- struct{}{}
}

// now is the wall clock without its monotonic reading.
func (a *Agent) now() time.Time { return a.o.Now().Round(0) }

func (a *Agent) test(name string) *Test {
	for _, t := range a.cfg.Load().Tests {
		if t.Name == name {
			return t
		}
	}
	return nil
}
