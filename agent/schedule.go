package agent

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/robfig/cron/v3"
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

// Cron is a cron expression's slots, in the agent's local time zone.
type Cron struct {
	Spec  string
	sched cron.Schedule
}

// cronParser reads the standard five fields (minute hour day month
// weekday) and the descriptors (@daily, @every 6h).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron checks a cron expression.
func ParseCron(spec string) (*Cron, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	return &Cron{Spec: spec, sched: s}, nil
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
		return err
	}
	t.c = c
	return nil
}
