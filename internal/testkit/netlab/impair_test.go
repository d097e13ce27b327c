package netlab

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/race"
)

// These tests need no root: the relay's decisions and its delay line are
// pure code.

func TestImpairmentNormalize(t *testing.T) {
	m, err := Impairment{ReorderPct: 5}.normalize()
	if err != nil || m.ReorderBy != DefaultReorderBy {
		t.Errorf("reorder without a time: %+v, %v; want ReorderBy %v", m, err, DefaultReorderBy)
	}
	if m, err := (Impairment{}).normalize(); err != nil || m.active() {
		t.Errorf("zero impairment: %+v, %v", m, err)
	}
	for _, bad := range []Impairment{
		{Delay: -1},
		{Jitter: -time.Millisecond},
		{Delay: time.Second, Jitter: time.Millisecond},
		{ReorderPct: 101},
		{ReorderBy: time.Millisecond},
		{DupPct: -1},
		{DupPct: math.NaN()},
		{Loss: GilbertElliott{P: 1}},
		{Loss: GilbertElliott{LossBad: 200}},
		{Scope: 9},
	} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("normalize accepted %+v", bad)
		}
	}
	// A Shape carries its relay impairment through Config's checks.
	if _, err := (Config{Up: Shape{Relay: Impairment{DupPct: 300}}}).normalize(); err == nil {
		t.Error("Config accepted a duplication of 300 %")
	}
	for _, bad := range []Config{
		{Narrow: Narrow{MTU: 1279}},
		{Narrow: Narrow{MTU: 1500}},
		{Narrow: Narrow{Link: NarrowServerLink}},
		{Narrow: Narrow{MTU: 1400, Link: 7}},
		{NAT: 3},
		{FirewallPort: 70000},
	} {
		if _, err := bad.normalize(); err == nil {
			t.Errorf("Config accepted %+v", bad)
		}
	}
	c, err := Config{Narrow: Narrow{MTU: 1400}}.normalize()
	if err != nil || !c.usesRelay() || c.tunMTU() != 1400 {
		t.Errorf("a narrow middle link needs the relay at MTU 1400: %+v %v", c, err)
	}
	if c, _ := (Config{Narrow: Narrow{MTU: 1400, Link: NarrowClientLink}}).normalize(); c.usesRelay() || c.tunMTU() != 1500 {
		t.Errorf("a narrow client link needs no relay: %+v", c)
	}
}

// fates replays the model on n matching packets arriving 100 µs apart.
func fates(m Impairment, seed uint64, dir Direction, n int) []fate {
	im := newImpairModel(m, seed, dir)
	out := make([]fate, n)
	for i := range out {
		out[i] = im.decide(int64(i)*100e3, true)
	}
	return out
}

func TestModelIsReproducible(t *testing.T) {
	m := Impairment{Delay: 5 * time.Millisecond, Jitter: time.Millisecond, ReorderPct: 3, DupPct: 2,
		Loss: GilbertElliott{P: 1, R: 20, LossBad: 100}}
	a, b := fates(m, 7, Up, 5000), fates(m, 7, Up, 5000)
	other, down := fates(m, 8, Up, 5000), fates(m, 7, Down, 5000)
	same := func(x, y []fate) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("one seed gave two sequences")
	}
	if same(a, other) || same(a, down) {
		t.Error("another seed, or the other direction, gave the same sequence")
	}
	// Packets outside the scope draw nothing from the match stream: the
	// k-th matching packet's fate does not depend on what came between.
	im := newImpairModel(m, 7, Up)
	k := 0
	for i := 0; k < 500; i++ {
		if i%3 == 1 {
			im.decide(int64(i), false)
			continue
		}
		f := im.decide(int64(i), true)
		if f.lost != a[k].lost || f.dup != a[k].dup || f.reorder != a[k].reorder {
			t.Fatalf("matching packet %d: %+v with others between, %+v without", k, f, a[k])
		}
		k++
	}
}

func TestGilbertElliott(t *testing.T) {
	// Bad lasts 1/R = 4 packets on average and is entered with P = 2 %
	// per packet, so the long-run share of Bad is P/(P+R) = 7.4 %.
	const n = 400000
	m := Impairment{Loss: GilbertElliott{P: 2, R: 25, LossBad: 100}}
	fs := fates(m, 1, Up, n)
	lost, bursts := 0, 0
	for i, f := range fs {
		if f.lost {
			lost++
			if i == 0 || !fs[i-1].lost {
				bursts++
			}
		}
	}
	share, mean := float64(lost)/n, float64(lost)/float64(bursts)
	if want := 2.0 / 27; math.Abs(share-want) > 0.1*want {
		t.Errorf("loss %.4f, want about %.4f", share, want)
	}
	if math.Abs(mean-4) > 0.4 {
		t.Errorf("mean burst %.2f packets, want about 4", mean)
	}
	// Independent loss: P 0, loss in Good only.
	fs = fates(Impairment{Loss: GilbertElliott{LossGood: 1}}, 1, Down, n)
	lost = 0
	for _, f := range fs {
		if f.lost {
			lost++
		}
	}
	if s := float64(lost) / n; math.Abs(s-0.01) > 0.001 {
		t.Errorf("independent loss %.4f, want about 0.01", s)
	}
	for i, f := range fates(Impairment{}, 1, Up, 1000) {
		if f.lost || f.dup || f.reorder || f.at != int64(i)*100e3 {
			t.Fatalf("the zero impairment did something: %+v", f)
		}
	}
}

func TestDelayJitterReorder(t *testing.T) {
	const d, j, by = 10 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond
	for _, gap := range []time.Duration{200 * time.Microsecond, 10 * time.Millisecond} {
		im := newImpairModel(Impairment{Delay: d, Jitter: j, ReorderPct: 10, ReorderBy: by}, 3, Up)
		var last int64
		var minD, maxD time.Duration = time.Hour, 0
		held := 0
		for i := range 20000 {
			arr := int64(i) * int64(gap)
			f := im.decide(arr, true)
			base := time.Duration(f.at - arr)
			if f.reorder {
				held++
				base -= by
			} else {
				if f.at < last {
					t.Fatalf("gap %v: packet %d leaves at %d, before the previous one (%d): jitter reordered", gap, i, f.at, last)
				}
				last = f.at
			}
			if base < d-j || base > d+j {
				t.Fatalf("gap %v: packet %d delayed %v, outside %v ± %v", gap, i, base, d, j)
			}
			minD, maxD = min(minD, base), max(maxD, base)
		}
		// Packets further apart than the jitter's range get the whole
		// range; closer ones queue behind a long draw (the delays gather
		// towards d+j, as behind a link whose service time varies).
		if gap > 2*j && (minD > d-j+100*time.Microsecond || maxD < d+j-100*time.Microsecond) {
			t.Errorf("gap %v: delays from %v to %v, want about %v to %v", gap, minD, maxD, d-j, d+j)
		}
		if held < 1800 || held > 2200 {
			t.Errorf("gap %v: %d of 20000 held back, want about 10 %%", gap, held)
		}
	}
}

// packet builds an IPv4 or IPv6 UDP packet with payload id, or a
// fragment of one.
func packet(v6 bool, id uint16, fragOffset int, moreFrags bool) []byte {
	var p []byte
	if !v6 {
		p = make([]byte, 20+8+16)
		p[0] = 0x45
		p[9] = 17
		f := uint16(fragOffset / 8)
		if moreFrags {
			f |= 0x2000
		}
		binary.BigEndian.PutUint16(p[6:], f|0x4000) // DF never matters
		if fragOffset == 0 {
			binary.BigEndian.PutUint16(p[28:], id)
		}
		return p
	}
	if fragOffset != 0 || moreFrags {
		p = make([]byte, 40+8+8+16)
		p[0], p[6], p[40] = 0x60, 44, 17
		return p
	}
	p = make([]byte, 40+8+16)
	p[0], p[6] = 0x60, 17
	binary.BigEndian.PutUint16(p[48:], id)
	return p
}

func TestMatches(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		load, status := packet(v6, loadPDUID, 0, false), packet(v6, 0xFEED, 0, false)
		firstFrag, laterFrag := packet(v6, loadPDUID, 0, true), packet(v6, loadPDUID, 1480, false)
		for _, c := range []struct {
			p          []byte
			load, anyU bool
		}{
			{load, true, true},
			{status, false, true},
			{firstFrag, false, true},
			{laterFrag, false, true},
			{load[:len(load)-16+1], false, true}, // too short for the identifier
		} {
			if got := matches(c.p, LossLoadPDUs); got != c.load {
				t.Errorf("v6=%v %x: Load PDU scope %v, want %v", v6, c.p[:8], got, c.load)
			}
			if got := matches(c.p, LossAllUDP); got != c.anyU {
				t.Errorf("v6=%v %x: UDP scope %v, want %v", v6, c.p[:8], got, c.anyU)
			}
		}
	}
	mld := packet(true, 0, 0, false)
	mld[24] = 0xff
	igmp := packet(false, 0, 0, false)
	igmp[16] = 224
	if !multicast(mld) || !multicast(igmp) || multicast(packet(true, 0, 0, false)) || multicast(packet(false, 0, 0, false)) {
		t.Error("multicast misclassified")
	}
	tcp := packet(false, loadPDUID, 0, false)
	tcp[9] = 6
	for _, p := range [][]byte{nil, {0x45}, tcp, make([]byte, 60)} {
		if matches(p, LossAllUDP) {
			t.Errorf("%x matched", p)
		}
	}
}

func TestDelayLine(t *testing.T) {
	d := newDelayLine(4, 100)
	at := []int64{30, 10, 20, 10}
	for i, a := range at {
		s, ok := d.take()
		if !ok {
			t.Fatalf("slot %d: line full", i)
		}
		copy(d.slot(s), []byte{byte(i)})
		d.push(s, 1, a, uint64(i+1), 1)
	}
	if _, ok := d.take(); ok {
		t.Fatal("a fifth slot in a line of four")
	}
	var order []byte
	for d.len() > 0 {
		e, p := d.pop()
		order = append(order, p[0])
		d.release(e)
	}
	// By release time; equal times in arrival order.
	if string(order) != string([]byte{1, 3, 2, 0}) {
		t.Errorf("released in order %v, want [1 3 2 0]", order)
	}
	if _, ok := d.next(); ok {
		t.Error("an empty line has a next release")
	}
	for range 4 {
		if _, ok := d.take(); !ok {
			t.Fatal("released slots were not reusable")
		}
	}
}

// TestRelayPathDoesNotAllocate: deciding, queueing and releasing a packet
// allocate nothing.
func TestRelayPathDoesNotAllocate(t *testing.T) {
	d := newDelayLine(64, 1501)
	im := newImpairModel(Impairment{Delay: time.Millisecond, Jitter: time.Millisecond, DupPct: 1, ReorderPct: 1,
		Loss: GilbertElliott{P: 1, R: 10, LossBad: 100}}, 1, Up)
	p := packet(false, loadPDUID, 0, false)
	var now int64
	allocs := race.AllocsPerRun(10000, func() {
		now += 100e3 // at most 4 ms of delay: about 40 packets queued
		s, ok := d.take()
		if !ok {
			t.Fatal("full")
		}
		n := copy(d.slot(s), p)
		f := im.decide(now, matches(d.slot(s)[:n], LossLoadPDUs))
		if f.lost {
			d.giveBack(s)
		} else {
			d.push(s, n, f.at, 1, 1)
		}
		for {
			at, ok := d.next()
			if !ok || at > now {
				break
			}
			e, _ := d.pop()
			d.release(e)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet", allocs)
	}
}
