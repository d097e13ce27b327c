package agent

// The test in flight, on disk: a small file written (and synced) before a
// test starts and removed once its results are stored. An agent killed
// (SIGKILL, a power cut) during a test loses that test's result, but not
// silently: the next start finds the file and stores one error result
// per direction with the warning "interrupted: ..." (docs/agent.md,
// "Stopping").

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/store"
)

// maxInFlight bounds what is read of the in-flight file: the agent
// writes a few hundred bytes (a test name is at most MaxNameLen).
const maxInFlight = 16 << 10

// inFlight is the in-flight file's content.
type inFlight struct {
	Test       string    `json:"test"`
	Server     string    `json:"server"`
	Directions []string  `json:"directions"`
	Start      time.Time `json:"start"`
	How        string    `json:"how"` // the schedule, "run now"
}

// markInFlight records that t starts now; the returned function removes
// the record (after the results are stored). With no InFlight path it
// does nothing; a record that cannot be written is logged, never stops
// the test.
func (a *Agent) markInFlight(t *Test, how string) func() {
	path := a.o.InFlight
	if path == "" {
		return func() {}
	}
	dirs := []string{direction(t.Direction == DirUp, t.Plan)}
	if t.Direction == DirBoth {
		dirs = []string{direction(false, t.Plan), direction(true, t.Plan)}
	}
	rec := &inFlight{Test: t.Name, Server: hostPort(t.Servers[0]), Directions: dirs, Start: a.now(), How: how}
	if !a.writeInFlight(rec) {
		return func() {}
	}
	a.inFlight.Store(rec)
	return func() {
		a.inFlight.Store(nil)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			a.o.Log.Error("in-flight record not removed", "path", path, "err", err)
		}
	}
}

// writeInFlight writes rec to the in-flight file, logging a failure.
func (a *Agent) writeInFlight(rec *inFlight) bool {
	b, _ := json.Marshal(rec)
	if err := atomicfile.Write(a.o.InFlight, b, 0o600); err != nil {
		a.o.Log.Error("test in flight not recorded: a kill during it would go unnoticed", "test", rec.Test, "err", err)
		return false
	}
	return true
}

// inFlightStored takes direction off the in-flight record once its
// result is stored: a kill during the second direction of a "both" test
// then records that one alone.
func (a *Agent) inFlightStored(direction string) {
	rec := a.inFlight.Load()
	if rec == nil {
		return
	}
	var left []string
	for _, d := range rec.Directions {
		if d != direction {
			left = append(left, d)
		}
	}
	if len(left) == 0 || len(left) == len(rec.Directions) {
		return // the last one: the record goes when the test ends
	}
	next := *rec
	next.Directions = left
	a.inFlight.Store(&next)
	a.writeInFlight(&next)
}

// recoverInFlight stores the test an earlier run was killed during, if
// the in-flight file says there was one, and removes the file.
func (a *Agent) recoverInFlight(ctx context.Context) {
	path := a.o.InFlight
	if path == "" {
		return
	}
	b, err := atomicfile.ReadFile(path, maxInFlight)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		a.o.Log.Error("in-flight record unreadable; removed", "path", path, "err", err)
		if errors.Is(err, atomicfile.ErrNotRegular) {
			return // not ours to remove
		}
		os.Remove(path)
		return
	}
	var f inFlight
	err = json.Unmarshal(b, &f)
	for _, d := range f.Directions {
		if d != "up" && d != "down" && d != "bidirectional" {
			err = fmt.Errorf("direction %q", d)
		}
	}
	if err != nil || f.Test == "" || len(f.Directions) == 0 || len(f.Directions) > 2 {
		a.o.Log.Error("in-flight record not understood; removed", "path", path, "err", err)
		os.Remove(path)
		return
	}
	why := fmt.Sprintf("interrupted: the agent stopped (killed, or the machine lost power) during this test (%s, started %s); its result was lost",
		f.How, f.Start.Format(time.RFC3339))
	a.o.Log.Warn("test interrupted by the agent's last stop: stored as an error", "test", f.Test, "start", f.Start, "how", f.How)
	for _, d := range f.Directions {
		a.store(ctx, &store.Result{ID: newResultID(), Origin: store.OriginClient, Test: f.Test, Agent: a.o.Identity,
			Server: f.Server, Start: f.Start, End: a.now(), Direction: d,
			Status: store.StatusError, ErrorStatus: report.StatusGeneral, Warning: why})
	}
	if err := os.Remove(path); err != nil {
		a.o.Log.Error("in-flight record not removed", "path", path, "err", err)
	}
}
