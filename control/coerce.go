package control

import "github.com/udpstp/udpstp/dataphase"

// Limits are the server's own maxima for what a Test Activation may ask.
type Limits struct {
	MaxTestTime  int  // -t, s
	MaxDSCPECN   int  // -m
	MaxRateIndex int  // -I
	AllowRandom  bool // -X
}

// Coerce brings a Test Activation Request within the server's limits, in
// place, exactly as OB-UDPST 9.0.0 does (see the package doc): it never
// refuses, it replaces each invalid value by its default or the server's
// maximum, and the response carries what was granted. recvTOSOK says whether
// the test socket could enable TOS reception (a CE threshold needs it). It
// returns the starting row of the test: what an upstream response carries.
//
// Where OB-UDPST would honour a "starting row" bit next to an index it had
// just replaced by <Auto>, and read past its table, we treat it as plain
// <Auto>: a defined answer where OB-UDPST's is not.
func Coerce(a *ActivationPDU, legacy bool, lim Limits, table []dataphase.SendingRate, recvTOSOK bool) (startRow uint16) {
	if a.LowThresh < 1 || a.LowThresh > MaxDelayThresh {
		a.LowThresh = DefaultLowThresh
	}
	if a.UpperThresh < 1 || a.UpperThresh > MaxDelayThresh {
		a.UpperThresh = DefaultUpperThresh
	}
	if a.LowThresh > a.UpperThresh {
		a.LowThresh, a.UpperThresh = DefaultLowThresh, DefaultUpperThresh
	}
	if a.TrialInt < MinTrialInt || a.TrialInt > MaxTrialInt {
		a.TrialInt = DefaultTrialInt
	}
	if a.TestIntTime < MinTestIntTime || a.TestIntTime > MaxTestIntTime {
		a.TestIntTime = DefaultTestIntTime
	}
	if int(a.TestIntTime) > lim.MaxTestTime {
		a.TestIntTime = uint16(lim.MaxTestTime)
	}
	period := int(a.SubIntPeriod)
	if legacy {
		period = int(a.SubIntPeriodSec) * 1000
	}
	if period < MinSubIntPeriod || period > MaxSubIntPeriod {
		period = DefaultSubIntPeriod
	}
	if period > int(a.TestIntTime)*1000 {
		a.TestIntTime, period = DefaultTestIntTime, DefaultSubIntPeriod
	}
	if legacy {
		a.SubIntPeriodSec = uint8(period / 1000)
	} else {
		a.SubIntPeriod = uint16(period)
	}
	if int(a.DSCPECN) > lim.MaxDSCPECN {
		a.DSCPECN = uint8(lim.MaxDSCPECN) // a number, not a bit mask, as 9.0.0 compares it
	}
	switch {
	case a.SRIndexConf == dataphase.AutoRateIndex:
	case int(a.SRIndexConf) > dataphase.MaxRateIndex:
		a.SRIndexConf = dataphase.AutoRateIndex
	case int(a.SRIndexConf) > lim.MaxRateIndex:
		a.SRIndexConf = uint16(lim.MaxRateIndex)
	}
	if a.UseOwDelVar > 1 {
		a.UseOwDelVar = 0
	}
	if a.HighSpeedDelta < 1 {
		a.HighSpeedDelta = DefaultHSDelta
	}
	if a.SlowAdjThresh < 1 {
		a.SlowAdjThresh = DefaultSlowAdj
	}
	if a.IgnoreOooDup > 1 {
		a.IgnoreOooDup = 1
	}
	if !lim.AllowRandom {
		a.ModifierBitmap &^= ActivationRandomPayload
	}
	if a.RateAdjAlgo > dataphase.AlgorithmC {
		a.RateAdjAlgo = dataphase.AlgorithmB
	}
	if !legacy {
		if subs := int(a.TestIntTime) * 1000 / period; int(a.SRAdjSuppCount) >= subs {
			a.SRAdjSuppCount = 0
		}
		ecn := a.DSCPECN & 0x03
		if a.ECNCEThresh != 0 && (ecn != 0x01 && ecn != 0x02 || !recvTOSOK) {
			a.ECNCEThresh = 0
		}
	}
	startRow = 0
	fixed := a.SRIndexConf != dataphase.AutoRateIndex && a.ModifierBitmap&ActivationStartIndex == 0
	if a.SRIndexConf != dataphase.AutoRateIndex && !(fixed && !legacy && a.SRAdjSuppCount > 0) {
		startRow = a.SRIndexConf
	}
	a.Rate = dataphase.SendingRate{}
	if a.CmdRequest == ActivationUpstream && int(startRow) < len(table) {
		a.Rate = table[startRow]
	}
	a.CmdResponse = ActivationAccepted
	return startRow
}

// StartIndex reports whether a coerced request asks for a starting row (-I
// @n) rather than a fixed one.
func (a *ActivationPDU) StartIndex() bool {
	return a.SRIndexConf != dataphase.AutoRateIndex && a.ModifierBitmap&ActivationStartIndex != 0
}
