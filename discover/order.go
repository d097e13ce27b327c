package discover

import (
	"cmp"
	"math/rand/v2"
	"net"
	"slices"
)

// Order returns the SRV records in the order RFC 2782 says to try them:
// by priority, lowest first; within one priority a weighted random order,
// each next record drawn with a probability proportional to its weight
// (weight 0 records get a small chance, placed first as the RFC asks,
// and so are drawn when the random sum is 0). rng is the random source
// (math/rand/v2; a seeded one in tests). recs is not changed.
func Order(recs []*net.SRV, rng *rand.Rand) []*net.SRV {
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b *net.SRV) int { return cmp.Compare(a.Priority, b.Priority) })
	out := make([]*net.SRV, 0, len(sorted))
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j].Priority == sorted[i].Priority {
			j++
		}
		out = append(out, byWeight(sorted[i:j], rng)...)
		i = j
	}
	return out
}

// byWeight orders the records of one priority (RFC 2782, "Usage rules"):
// weight 0 records first, then, until none is left, a number drawn
// uniformly in [0, sum of weights] selects the first record whose running
// sum of weights is at least that number.
func byWeight(group []*net.SRV, rng *rand.Rand) []*net.SRV {
	left := make([]*net.SRV, 0, len(group))
	for _, r := range group {
		if r.Weight == 0 {
			left = append(left, r)
		}
	}
	for _, r := range group {
		if r.Weight != 0 {
			left = append(left, r)
		}
	}
	out := make([]*net.SRV, 0, len(group))
	for len(left) > 0 {
		sum := 0
		for _, r := range left {
			sum += int(r.Weight)
		}
		pick := rng.IntN(sum + 1)
		run := 0
		k := len(left) - 1
		for i, r := range left {
			run += int(r.Weight)
			if run >= pick {
				k = i
				break
			}
		}
		out = append(out, left[k])
		left = slices.Delete(left, k, k+1)
	}
	return out
}
