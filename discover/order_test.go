package discover

import (
	"math/rand/v2"
	"net"
	"slices"
	"testing"
)

func srv(target string, prio, weight uint16) *net.SRV {
	return &net.SRV{Target: target, Port: 24601, Priority: prio, Weight: weight}
}

func targets(recs []*net.SRV) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Target)
	}
	return out
}

// TestOrderPriorityFirst: every record of a lower priority comes before
// any of a higher one, whatever the weights and the draw.
func TestOrderPriorityFirst(t *testing.T) {
	recs := []*net.SRV{srv("c.", 30, 100), srv("a1.", 10, 1), srv("b.", 20, 0), srv("a2.", 10, 60000), srv("d.", 5, 0)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		got := Order(recs, rng)
		if len(got) != len(recs) {
			t.Fatalf("got %d records, want %d", len(got), len(recs))
		}
		for i := 1; i < len(got); i++ {
			if got[i].Priority < got[i-1].Priority {
				t.Fatalf("order %v: priority %d after %d", targets(got), got[i].Priority, got[i-1].Priority)
			}
		}
		if got[0].Target != "d." || got[3].Target != "b." || got[4].Target != "c." {
			t.Fatalf("order %v", targets(got))
		}
	}
	if recs[0].Target != "c." {
		t.Error("Order changed its argument")
	}
}

// TestOrderByWeight: within a priority, the first record is drawn with a
// probability proportional to its weight (RFC 2782); a weight 0 record
// comes first only when the draw is 0, 1 in sum+1. The RNG is seeded, so
// the counts are fixed; the bounds are the binomial's, far from them.
func TestOrderByWeight(t *testing.T) {
	recs := []*net.SRV{srv("one.", 1, 10), srv("three.", 1, 30), srv("zero.", 1, 0)}
	rng := rand.New(rand.NewPCG(7, 9))
	const n = 40000
	first := map[string]int{}
	for range n {
		first[Order(recs, rng)[0].Target]++
	}
	// Expected: zero 1/41, one 10/41, three 30/41 of n.
	check := func(name string, num, den int) {
		want := float64(n) * float64(num) / float64(den)
		if got := float64(first[name]); got < want*0.9 || got > want*1.1 {
			t.Errorf("%s first %d times of %d, want about %.0f", name, first[name], n, want)
		}
	}
	check("zero.", 1, 41)
	check("one.", 10, 41)
	check("three.", 30, 41)
}

// TestOrderSeeded: the same seed gives the same order; the order is a
// permutation of the records.
func TestOrderSeeded(t *testing.T) {
	recs := []*net.SRV{srv("a.", 1, 5), srv("b.", 1, 5), srv("c.", 1, 5), srv("d.", 1, 5)}
	a := Order(recs, rand.New(rand.NewPCG(3, 4)))
	b := Order(recs, rand.New(rand.NewPCG(3, 4)))
	if !slices.Equal(targets(a), targets(b)) {
		t.Errorf("same seed, orders %v and %v", targets(a), targets(b))
	}
	got := targets(a)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a.", "b.", "c.", "d."}) {
		t.Errorf("not a permutation: %v", targets(a))
	}
	if len(Order(nil, rand.New(rand.NewPCG(1, 1)))) != 0 {
		t.Error("no records, yet an order")
	}
}
