package dataphase

import (
	"slices"
	"testing"
	"time"
)

func rcParams(algo uint8) *Params {
	return &Params{
		Server: true, TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		LowThresh: 30, UpperThresh: 90, SeqErrThresh: 10, SlowAdjThresh: 3, HighSpeedDelta: 10,
		IgnoreOooDup: true, Algorithm: algo, SRIndexConf: AutoRateIndex,
		Table: BuildRateTable(TableOptions{}),
	}
}

var (
	good    = TrialFeedback{RTTVarSample: 0}
	bad     = TrialFeedback{Loss: 11, RTTVarSample: 0}
	neutral = TrialFeedback{RTTVarSample: NoDelay} // no delay sample: neither good nor bad
)

func steps(rc *RateControl, fb ...TrialFeedback) []uint16 {
	var out []uint16
	for _, f := range fb {
		out = append(out, rc.Adjust(f, 5))
	}
	return out
}

// TestAlgorithmB follows algorithm B (RFC 9097 Section 8.1) as OB-UDPST
// 9.0.0 implements it: +highSpeedDelta rows per good
// Trial Interval up to row 1000, -1 per bad one until slowAdjThresh bad ones
// since the last fast increase, then one back-off of 3 x delta, then +-1.
func TestAlgorithmB(t *testing.T) {
	rc := NewRateControl(rcParams(0))
	// A fast increase resets the count of bad reports; the third bad one
	// since then confirms congestion: back off 30 rows, then +-1 for good.
	got := steps(rc, good, good, neutral, bad, bad, good, good, good, bad, bad, bad, good, good, bad)
	want := []uint16{10, 20, 20, 19, 18, 28, 38, 48, 47, 46, 16, 17, 18, 17}
	if !slices.Equal(got, want) {
		t.Fatalf("B: %v, want %v", got, want)
	}
	// Fast ramp is clipped at row 1000, then +1 per good interval.
	rc = NewRateControl(rcParams(0))
	for i := 0; i < 99; i++ {
		rc.Adjust(good, 5)
	}
	if got := steps(rc, good, good, good); !slices.Equal(got, []uint16{1000, 1001, 1002}) {
		t.Errorf("B above 1000: %v", got)
	}
}

// TestAlgorithmC follows OB-UDPST 9.0.0's algorithm C: from row 0 good reports
// give 1, 2, 2, 4, 4, 8, ... 256, 256, 512, 1000 (19 reports).
func TestAlgorithmC(t *testing.T) {
	rc := NewRateControl(rcParams(1))
	var got []uint16
	for i := 0; i < 19; i++ {
		got = append(got, rc.Adjust(good, 5))
	}
	want := []uint16{1, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32, 64, 64, 128, 128, 256, 256, 512, 1000}
	if !slices.Equal(got, want) {
		t.Fatalf("C ramp: %v, want %v", got, want)
	}
	// After congestion is confirmed C creeps by one and retries the fast
	// ramp after retryThresh (5) slow steps.
	rc = NewRateControl(rcParams(1))
	for i := 0; i < 12; i++ {
		rc.Adjust(good, 5) // up to row 64
	}
	got = steps(rc, bad, bad, bad) // 63, 62, then back-off by 30
	if !slices.Equal(got, []uint16{63, 62, 32}) {
		t.Fatalf("C back-off: %v", got)
	}
	got = steps(rc, good, good, good, good, good, good, good)
	// +1 four times with retryCount 2,3,4,5 -> at 5 the fast ramp is
	// re-enabled (slowAdj 0): the next good report doubles again.
	if got[0] != 33 || got[len(got)-1] <= got[len(got)-2]+1 {
		t.Errorf("C retry: %v", got)
	}
}

// TestFeedbackJudgement: sequence errors count loss only unless -R; delay
// is the last RTT sample, or with -o the average one-way delay variation;
// thresholds are strict; CE marks above the threshold share are bad.
func TestFeedbackJudgement(t *testing.T) {
	p := rcParams(0)
	rc := NewRateControl(p)
	cases := []struct {
		fb        TrialFeedback
		good, bad bool
	}{
		{TrialFeedback{RTTVarSample: 29}, true, false},
		{TrialFeedback{RTTVarSample: 30}, false, false},
		{TrialFeedback{RTTVarSample: 90}, false, false},
		{TrialFeedback{RTTVarSample: 91}, false, true},
		{TrialFeedback{Loss: 10, RTTVarSample: 0}, true, false},
		{TrialFeedback{Loss: 11, RTTVarSample: 0}, false, true},
		{TrialFeedback{Ooo: 50, Dup: 50, RTTVarSample: 0}, true, false},
		{TrialFeedback{RTTVarSample: NoDelay}, false, false},
	}
	for _, c := range cases {
		if g, b := rc.judge(c.fb); g != c.good || b != c.bad {
			t.Errorf("%+v: good %v bad %v, want %v %v", c.fb, g, b, c.good, c.bad)
		}
	}
	p.IgnoreOooDup = false
	if g, b := NewRateControl(p).judge(TrialFeedback{Ooo: 6, Dup: 5, RTTVarSample: 0}); g || !b {
		t.Errorf("-R: reordering and duplicates must count as sequence errors")
	}
	p.IgnoreOooDup, p.UseOwDelVar = true, true
	if g, b := NewRateControl(p).judge(TrialFeedback{DelayVarSum: 400, DelayVarCnt: 4, RTTVarSample: 0}); g || !b {
		t.Errorf("-o: an average one-way delay variation of 100 ms must be bad")
	}
	p.UseOwDelVar, p.ECNCEThresh = false, 10
	// (10-1)/255 of 1000 datagrams is 35.3: 36 CE marks exceed it.
	if g, b := NewRateControl(p).judge(TrialFeedback{Datagrams: 1000, CE: 36, RTTVarSample: 0}); g || !b {
		t.Errorf("36 CE of 1000 with threshold 10 must be bad")
	}
	if g, _ := NewRateControl(p).judge(TrialFeedback{Datagrams: 1000, CE: 35, RTTVarSample: 0}); !g {
		t.Errorf("35 CE of 1000 with threshold 10 must not be bad")
	}
}

// TestFixedAndSuppressed: a fixed row never moves; with suppression a fixed
// test sends row 0 until the first mode ends, a search stays at its
// starting row.
func TestFixedAndSuppressed(t *testing.T) {
	p := rcParams(0)
	p.SRIndexConf = 300
	rc := NewRateControl(p)
	if rc.Index() != 300 || rc.Adjust(good, 0) != 300 || rc.Adjust(bad, 1) != 300 {
		t.Errorf("fixed row moved")
	}
	p.SRAdjSuppCount = 2
	rc = NewRateControl(p)
	if rc.Index() != 0 || rc.Adjust(good, 1) != 0 || rc.Adjust(good, 2) != 300 {
		t.Errorf("fixed row with suppression: %d", rc.Index())
	}
	p.StartIndex = true
	rc = NewRateControl(p)
	if rc.Index() != 300 || rc.Adjust(good, 1) != 300 || rc.Adjust(good, 2) != 310 {
		t.Errorf("starting row with suppression: %d", rc.Index())
	}
}
