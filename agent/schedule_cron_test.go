package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST test's zones, whatever the machine has installed

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// TestCronDST: the clock going forward an hour skips 02:00-03:00 in
// Berlin; a slot in the gap is kept that day, at the first minute after
// it (ISC cron's rule, which netresearch/go-cron follows), not dropped
// as robfig/cron dropped it. The slot of a zone named by CRON_TZ= is
// that zone's, whatever the agent's local zone.
func TestCronDST(t *testing.T) {
	c, err := ParseCron("CRON_TZ=Europe/Berlin 30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC)
	for i, want := range []time.Time{
		time.Date(2027, 3, 28, 3, 30, 0, 0, berlin), // 02:30 does not exist that day
		time.Date(2027, 3, 29, 2, 30, 0, 0, berlin),
	} {
		at = c.Next(at, nil)
		if !at.Equal(want) {
			t.Errorf("slot %d %s, want %s", i+1, at, want)
		}
	}
	// An ordinary day in the zone's summer time: 02:30 local, 00:30 UTC.
	if got, want := c.Next(time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC), nil), time.Date(2027, 6, 1, 0, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("summer slot %s, want %s", got, want)
	}
}

// TestCronDayFields: a spec restricting both the day of the month and
// the day of the week runs on a day matching either, as Vixie cron and
// robfig/cron do (the 1st, and every Monday).
func TestCronDayFields(t *testing.T) {
	c, err := ParseCron("0 0 1 * MON")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC) // a Saturday
	for i, want := range []time.Time{
		time.Date(2027, 3, 29, 0, 0, 0, 0, time.UTC), // Monday
		time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC),  // the 1st, a Thursday
		time.Date(2027, 4, 5, 0, 0, 0, 0, time.UTC),  // Monday
	} {
		at = c.Next(at, nil)
		if !at.Equal(want) {
			t.Errorf("slot %d %s, want %s", i+1, at, want)
		}
	}
}

// TestCronRefusals: an agent.toml whose cron expression robfig/cron
// panicked on (only a time zone), or that has no slot at all (which the
// loop would store as missed over and over), is refused with the file's
// line, read from a real file as the agent reads it.
func TestCronRefusals(t *testing.T) {
	for _, spec := range []string{"CRON_TZ=UTC", "TZ=", "TZ=Nowhere/Else 0 3 * * *", "0 0 30 2 *", "@manual", "@triggered", "@none"} {
		t.Run(spec, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.toml")
			doc := "[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"down\"\ncron = \"" + spec + "\"\n"
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, testLoad)
			if err == nil {
				t.Fatalf("%q accepted", spec)
			}
			if want := "agent.toml:5: test[1].cron: cron \"" + spec + "\""; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q\nwant %q", err, want)
			}
		})
	}
}

// TestCronSlotBeforeRestart: a cron slot that passed within the tolerance
// just before the agent started (a restart right after it) is run at
// start; it was dropped silently (the next slot was drawn from now).
func TestCronSlotBeforeRestart(t *testing.T) {
	t0 := time.Date(2027, 5, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour + 30*time.Second) // 11:00 passed 30 s ago; tolerance 1 min
	cfg := mustParse(t, "[[test]]\nname = \"hourly\"\nservers = [\"s1\"]\ndirection = \"down\"\ncron = \"0 * * * *\"\n")
	fc := &fakeClient{}
	a, st := newTestAgent(t, cfg, fc, func() time.Time { return now })
	st.Put(context.Background(), &store.Result{ID: "last", Test: "hourly", Server: "s1:24601", Direction: "down", Status: store.StatusOK,
		Start: t0, End: t0.Add(10 * time.Second)})
	if err := a.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	await.True(t, "the 11:00 slot run", func() bool { return len(st.all()) == 2 })
	cancel()
	<-done
	if r := st.all()[1]; r.Status != store.StatusOK || fc.started.Load() != 1 {
		t.Errorf("after the restart: %+v, %d tests started", r, fc.started.Load())
	}
}
