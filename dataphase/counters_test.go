package dataphase

import (
	"regexp"
	"testing"
)

// TestCounterTable: every Counter has a unique snake_case name and help
// text (a counter added without its line in the table fails here).
func TestCounterTable(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[string]Counter{}
	for c := range NumCounters {
		i := c.Info()
		if !name.MatchString(i.Name) {
			t.Errorf("counter %d: name %q is not snake_case", c, i.Name)
		}
		if i.Help == "" || i.Help[len(i.Help)-1] == '.' {
			t.Errorf("%s: help %q (want a sentence without a final period)", i.Name, i.Help)
		}
		if d, ok := seen[i.Name]; ok {
			t.Errorf("counters %d and %d are both %q", d, c, i.Name)
		}
		seen[i.Name] = c
	}
}

// TestAtomicCounts: the totals add what each event carried.
func TestAtomicCounts(t *testing.T) {
	var a AtomicCounts
	a.Add(&Counts{CountTxLoss: 2, CountStatusInvalidChecksum: 1})
	a.Add(&Counts{CountTxLoss: 3})
	want := Counts{CountTxLoss: 5, CountStatusInvalidChecksum: 1}
	if got := a.Load(); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
