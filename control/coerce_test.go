package control

import (
	"testing"

	"github.com/udpstp/udpstp/dataphase"
)

// TestCoerce checks every rule of the server's Test Activation coercion
// with cases that were checked against the real 9.0.0 server.
func TestCoerce(t *testing.T) {
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	base := func() ActivationPDU {
		a := activationRequest(&ClientConfig{
			TestIntTime: 10, SubIntPeriod: 1000, TrialInt: 50, LowThresh: 30, UpperThresh: 90,
			SlowAdjThresh: 3, HighSpeedDelta: 10, SeqErrThresh: 10, SRIndex: dataphase.AutoRateIndex,
		})
		return a
	}
	lim := Limits{MaxTestTime: 3600, MaxDSCPECN: 255, MaxRateIndex: 1152}
	cases := []struct {
		name  string
		edit  func(*ActivationPDU)
		lim   func(*Limits)
		check func(*ActivationPDU) bool
		row   uint16
	}{
		{"test time above server max", func(a *ActivationPDU) { a.TestIntTime = 30 }, func(l *Limits) { l.MaxTestTime = 20 },
			func(a *ActivationPDU) bool { return a.TestIntTime == 20 }, 0},
		{"test time out of range", func(a *ActivationPDU) { a.TestIntTime = 4 }, nil,
			func(a *ActivationPDU) bool { return a.TestIntTime == 10 }, 0},
		{"dscp numeric cap", func(a *ActivationPDU) { a.DSCPECN = 0x2e }, func(l *Limits) { l.MaxDSCPECN = 0x22 },
			func(a *ActivationPDU) bool { return a.DSCPECN == 0x22 }, 0},
		{"dscp below cap passes", func(a *ActivationPDU) { a.DSCPECN = 0x21 }, func(l *Limits) { l.MaxDSCPECN = 0x22 },
			func(a *ActivationPDU) bool { return a.DSCPECN == 0x21 }, 0},
		{"index above server max, upstream row", func(a *ActivationPDU) { a.SRIndexConf, a.CmdRequest = 600, ActivationUpstream },
			func(l *Limits) { l.MaxRateIndex = 500 },
			func(a *ActivationPDU) bool { return a.SRIndexConf == 500 && a.Rate == table[500] }, 500},
		{"index beyond the table", func(a *ActivationPDU) { a.SRIndexConf = 1153 }, nil,
			func(a *ActivationPDU) bool { return a.SRIndexConf == dataphase.AutoRateIndex }, 0},
		{"start bit with an invalid index is plain auto", func(a *ActivationPDU) { a.SRIndexConf, a.ModifierBitmap = 2000, ActivationStartIndex }, nil,
			func(a *ActivationPDU) bool { return !a.StartIndex() }, 0},
		{"sub-interval above test time", func(a *ActivationPDU) { a.TestIntTime, a.SubIntPeriod = 5, 6000 }, nil,
			func(a *ActivationPDU) bool { return a.TestIntTime == 10 && a.SubIntPeriod == 1000 }, 0},
		{"ce threshold without ECT", func(a *ActivationPDU) { a.ECNCEThresh = 5 }, nil,
			func(a *ActivationPDU) bool { return a.ECNCEThresh == 0 }, 0},
		{"ce threshold with ECT(1)", func(a *ActivationPDU) { a.ECNCEThresh, a.DSCPECN = 5, 0x21 }, nil,
			func(a *ActivationPDU) bool { return a.ECNCEThresh == 5 }, 0},
		{"ce threshold with ECT(0)", func(a *ActivationPDU) { a.ECNCEThresh, a.DSCPECN = 5, 0x22 }, nil,
			func(a *ActivationPDU) bool { return a.ECNCEThresh == 5 }, 0},
		{"thresholds swapped", func(a *ActivationPDU) { a.LowThresh, a.UpperThresh = 100, 50 }, nil,
			func(a *ActivationPDU) bool { return a.LowThresh == 30 && a.UpperThresh == 90 }, 0},
		{"trial interval", func(a *ActivationPDU) { a.TrialInt = 4 }, nil,
			func(a *ActivationPDU) bool { return a.TrialInt == 50 }, 0},
		{"random payload not allowed", func(a *ActivationPDU) { a.ModifierBitmap = ActivationRandomPayload }, nil,
			func(a *ActivationPDU) bool { return a.ModifierBitmap == 0 }, 0},
		{"random payload allowed", func(a *ActivationPDU) { a.ModifierBitmap = ActivationRandomPayload }, func(l *Limits) { l.AllowRandom = true },
			func(a *ActivationPDU) bool { return a.ModifierBitmap == ActivationRandomPayload }, 0},
		{"algorithm", func(a *ActivationPDU) { a.RateAdjAlgo = 7 }, nil,
			func(a *ActivationPDU) bool { return a.RateAdjAlgo == dataphase.AlgorithmB }, 0},
		{"delta, slow threshold, flags", func(a *ActivationPDU) { a.HighSpeedDelta, a.SlowAdjThresh, a.UseOwDelVar, a.IgnoreOooDup = 0, 0, 2, 2 }, nil,
			func(a *ActivationPDU) bool {
				return a.HighSpeedDelta == 10 && a.SlowAdjThresh == 3 && a.UseOwDelVar == 0 && a.IgnoreOooDup == 1
			}, 0},
		{"suppression count too large", func(a *ActivationPDU) { a.SRAdjSuppCount = 10 }, nil,
			func(a *ActivationPDU) bool { return a.SRAdjSuppCount == 0 }, 0},
		{"fixed row with suppression starts at row 0", func(a *ActivationPDU) { a.SRIndexConf, a.SRAdjSuppCount, a.CmdRequest = 300, 3, ActivationUpstream }, nil,
			func(a *ActivationPDU) bool { return a.Rate == table[0] && a.SRIndexConf == 300 }, 0},
		{"starting row with suppression", func(a *ActivationPDU) {
			a.SRIndexConf, a.SRAdjSuppCount, a.CmdRequest, a.ModifierBitmap = 100, 3, ActivationUpstream, ActivationStartIndex
		}, nil, func(a *ActivationPDU) bool { return a.Rate == table[100] }, 100},
		{"downstream carries no rate", func(a *ActivationPDU) { a.SRIndexConf = 300 }, nil,
			func(a *ActivationPDU) bool { return a.Rate == dataphase.SendingRate{} }, 300},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := base()
			c.edit(&a)
			l := lim
			if c.lim != nil {
				c.lim(&l)
			}
			row := Coerce(&a, false, l, table, true)
			if !c.check(&a) || row != c.row || a.CmdResponse != ActivationAccepted {
				t.Errorf("coerced to %+v, start row %d (want %d)", a, row, c.row)
			}
		})
	}
}

// TestCoerceLegacy: protocol 11..19 carry the Sub-Interval in whole
// seconds at offset 14 and have no CE threshold or suppression.
func TestCoerceLegacy(t *testing.T) {
	a := ActivationPDU{TestIntTime: 10, TrialInt: 50, LowThresh: 30, UpperThresh: 90, SubIntPeriodSec: 20,
		HighSpeedDelta: 10, SlowAdjThresh: 3, SRIndexConf: dataphase.AutoRateIndex, IgnoreOooDup: 1}
	Coerce(&a, true, Limits{MaxTestTime: 3600, MaxDSCPECN: 255, MaxRateIndex: 1152}, nil, true)
	if a.SubIntPeriodSec != 1 {
		t.Errorf("legacy sub-interval %d s, want 1", a.SubIntPeriodSec)
	}
}
