package dataphase

import "testing"

// TestCounterTable: every Counter has a unique snake_case name and help
// text (a counter added without its line in the table fails here), and the
// check finds what it is for.
func TestCounterTable(t *testing.T) {
	if err := CheckCounterInfo(counterInfo[:]); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]CounterInfo{
		{{Name: "a", Help: "x"}, {Name: "a", Help: "y"}},
		{{Name: "Tx", Help: "x"}},
		{{Name: "tx-loss", Help: "x"}},
		{{Name: "", Help: "x"}},
		{{Name: "tx", Help: ""}},
		{{Name: "tx", Help: "Counted."}},
	} {
		if CheckCounterInfo(bad) == nil {
			t.Errorf("%+v passes", bad)
		}
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
