package agent

import (
	"fmt"
	"math/rand/v2"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Schedule says when a test runs next.
type Schedule interface {
	// Next is the first slot after t; rng draws a memoryless spacing.
	Next(t time.Time, rng *rand.Rand) time.Time
	String() string
}

// Clamps of a memoryless spacing, as M-Lab's ndt7 clients have them: an
// exponential draw with the mean, kept within 0.1x and 2.5x of it, so that
// tests neither bunch up nor leave long gaps, and probes started together
// drift apart at once.
const (
	expMinFactor = 0.1
	expMaxFactor = 2.5
)

// Every is memoryless spacing with a mean.
type Every struct{ Mean time.Duration }

// Next is t plus a draw (Spacing).
func (e Every) Next(t time.Time, rng *rand.Rand) time.Time { return t.Add(e.Spacing(rng)) }

// Spacing draws one spacing: exponential with the mean, clamped.
func (e Every) Spacing(rng *rand.Rand) time.Duration {
	m := float64(e.Mean)
	d := rng.ExpFloat64() * m
	return time.Duration(min(max(d, expMinFactor*m), expMaxFactor*m))
}

func (e Every) String() string { return fmt.Sprintf("every %s (memoryless)", e.Mean) }

// Cron is a cron expression's slots, in the agent's local time zone or
// the one its CRON_TZ= (or TZ=) prefix names.
type Cron struct {
	Spec  string
	sched cron.Schedule
}

// cronParser reads the standard five fields (minute hour day month
// weekday) and the descriptors (@daily, @every 6h), with an optional
// CRON_TZ= or TZ= prefix (docs/agent.md). It is netresearch/go-cron, the
// maintained fork of robfig/cron v3 (same syntax and API): robfig/cron
// has had no release since 2020 and panics on a spec that is only a time
// zone, where this fork returns an error. It keeps a slot that a
// spring-forward change of the clock skips, at the first minute after
// the gap, as ISC cron does, where robfig/cron dropped that day's slot.
// DowOrDom keeps robfig/cron's (and Vixie cron's) rule for a spec that
// restricts both day fields: a day matching either runs (the fork's
// default would want both).
var cronParser = cron.MustNewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.DowOrDom | cron.Descriptor)

// ParseCron checks a cron expression.
func ParseCron(spec string) (*Cron, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	// A spec with no slot (30 February; the fork's @manual, @triggered
	// and @none) gives a zero time: the loop would take it for a slot
	// long passed, store it as missed and draw the same again, forever.
	if s.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("cron %q: no slot ever comes", spec)
	}
	return &Cron{Spec: spec, sched: s}, nil
}

// constantDelay is the spacing of an @every expression, which has no
// fixed slots; ok is false for any other.
func (c *Cron) constantDelay() (d time.Duration, ok bool) {
	if cd, ok := c.sched.(cron.ConstantDelaySchedule); ok {
		return cd.Delay, true
	}
	return 0, false
}

// Next is the expression's first slot after t.
func (c *Cron) Next(t time.Time, _ *rand.Rand) time.Time { return c.sched.Next(t) }

func (c *Cron) String() string { return "cron " + c.Spec }

// cronText is a cron expression in the file, checked as it is decoded so
// that the decoder names its line.
type cronText struct{ c *Cron }

func (t *cronText) UnmarshalText(b []byte) error {
	c, err := ParseCron(string(b))
	if err != nil {
		return textError(b, err) // cron = 5 too names its line
	}
	t.c = c
	return nil
}
