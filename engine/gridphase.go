package engine

import (
	"math/bits"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// The phases of a thread's grid. The Bursts and Status PDUs of every Test
// Connection fall due on one grid of the Test Time Base (dataphase/
// sender.go), so that a thread serving many wakes once for all those due
// at an instant. But it sends them one after the other: with 120 Test
// Connections on one thread the last waited for 119 sends (about 1.4 µs
// each), 166 µs of send lag p99, 2,420 Skipped Bursts in a 10 s test
// (docs/performance.md, 2026-12-01). So a thread gives each new Test
// Connection a phase: the first DefaultPhaseConns share phase 0, and each
// further DefaultPhaseConns open another phase, the new one joining the
// least used. Each phase costs up to one wake-up per period (20-50 µs of
// CPU on a VM), so a thread opens one only when its phases are full, and
// at most maxPhases: near saturation (200 Test Connections on one CPU)
// each further wake-up a millisecond cost delivered share (98.6 % with 5
// phases, 99.5 % with one, docs/performance.md).

// DefaultPhaseConns is how many Test Connections of a thread share a phase
// of the grid (PoolOptions.PhaseConns 0). Measured side by side at 40, 80
// and 120 Test Connections (docs/performance.md): 30 kept the send lag p99
// at 66-79 µs for 0-5 % more CPU than 40 (93-123 µs); 20 cost 8-10 %.
const DefaultPhaseConns = 30

// maxPhases bounds a thread's phases; beyond maxPhases·PhaseConns Test
// Connections on one thread, each joins the least used.
const maxPhases = 4

// phaseStep spaces the phases: phase k sits at bitrev2(k) steps, so that
// the phases in use, 0 to k, are spread over 1 ms (0, 550, 275, 825 µs)
// for the 1 ms transmitters and stay distinct modulo 100 µs (0, 50, 75,
// 25 µs) for the 100 µs ones: a step is a quarter of each.
const phaseStep = clock.Time(time.Millisecond/maxPhases + 100*time.Microsecond/maxPhases)

// gridPhaser is a core whose grid can be moved (dataphase.Conn).
type gridPhaser interface {
	SetGridPhase(phase clock.Time)
}

var _ gridPhaser = (*dataphase.Conn)(nil)

// gridPhases counts a thread's Test Connections per phase. A thread's own:
// no locking.
type gridPhases struct {
	per   int // Test Connections per phase; <= 0: one phase
	count [maxPhases]int32
	total int
}

// take picks the phase for one more Test Connection: the least used of
// the phases its count opens, the first on a tie.
func (g *gridPhases) take() (k int) {
	g.total++
	open := 1
	if g.per > 0 {
		open = min(maxPhases, (g.total+g.per-1)/g.per)
	}
	for i := 1; i < open; i++ {
		if g.count[i] < g.count[k] {
			k = i
		}
	}
	g.count[k]++
	return k
}

// give returns a Test Connection's phase k.
func (g *gridPhases) give(k int) {
	g.count[k]--
	g.total--
}

// phaseOf is where on the grid phase k sits.
func phaseOf(k int) clock.Time {
	return clock.Time(bits.Reverse8(uint8(k))>>6) * phaseStep
}
