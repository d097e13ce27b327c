package dataphase

import (
	"fmt"
	"time"
)

// The protocol's limits on the Data Phase timings: OB-UDPST 9.0.0's option
// limits (its usage text: testdata/obudpst/usage.txt), which its server
// coerces requests into and which the Control Phase's options use
// (control/config.go).
const (
	MinTestIntTime  = 5    // s
	MaxTestIntTime  = 3600 // s
	MinSubIntPeriod = 100  // ms
	MaxSubIntPeriod = 10000
	MinTrialInt     = 5 // ms
	MaxTrialInt     = 250
)

// GrantError is a value a server granted that a client must not accept:
// outside what the protocol allows, or beyond what the client asked.
type GrantError struct {
	Field   string // the Test Activation field, as OB-UDPST 9.0.0's header names it
	Granted string
	Want    string // what would have been acceptable
}

func (e *GrantError) Error() string {
	return fmt.Sprintf("server granted %s %s (acceptable: %s)", e.Field, e.Granted, e.Want)
}

// CheckGrant checks what a server granted (the Test Activation Response,
// as Params) against what the client asked (its request, as Params) and
// what the protocol allows, and returns a *GrantError for the first value
// a client must refuse. A server may lower what it grants (OB-UDPST's
// coerces a test time above its maximum down to it, and values outside
// the protocol's ranges to their defaults); it may not grant more than was
// asked, nor values a 9.0.0 server never sends: a trial interval of 0
// makes the Load Receiver send a Status PDU at every turn (424,550 in
// 3.5 s were measured), a test time of 65,535 s on a 5 s request keeps
// the client testing for 18 hours, and a sending rate row with a
// transmitter period below the table's 100 µs makes the client send as
// fast as it can.
//
// Only what the client's Data Phase acts on is checked: the thresholds,
// the algorithm and the row index steer the server's rate adjustment,
// not the client.
func CheckGrant(asked, granted Params) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d/time.Millisecond) }
	s := func(d time.Duration) string { return fmt.Sprintf("%d s", d/time.Second) }
	switch {
	case granted.Upstream != asked.Upstream:
		dir := map[bool]string{false: "downstream", true: "upstream"}
		return &GrantError{Field: "cmdRequest", Granted: dir[granted.Upstream], Want: dir[asked.Upstream] + ", as asked"}
	case granted.TestIntTime < MinTestIntTime*time.Second || granted.TestIntTime > asked.TestIntTime:
		return &GrantError{Field: "testIntTime", Granted: s(granted.TestIntTime),
			Want: fmt.Sprintf("%d s to the %s asked", MinTestIntTime, s(asked.TestIntTime))}
	case granted.TrialInt < MinTrialInt*time.Millisecond || granted.TrialInt > MaxTrialInt*time.Millisecond:
		return &GrantError{Field: "trialInt", Granted: ms(granted.TrialInt),
			Want: fmt.Sprintf("%d to %d ms", MinTrialInt, MaxTrialInt)}
	case granted.SubIntPeriod < MinSubIntPeriod*time.Millisecond || granted.SubIntPeriod > MaxSubIntPeriod*time.Millisecond ||
		granted.SubIntPeriod > granted.TestIntTime:
		return &GrantError{Field: "subIntPeriod", Granted: ms(granted.SubIntPeriod),
			Want: fmt.Sprintf("%d ms to %d ms and at most the test time", MinSubIntPeriod, MaxSubIntPeriod)}
	case granted.SRAdjSuppCount > asked.SRAdjSuppCount:
		return &GrantError{Field: "srAdjSuppCount", Granted: fmt.Sprint(granted.SRAdjSuppCount),
			Want: fmt.Sprintf("at most the %d asked", asked.SRAdjSuppCount)}
	case granted.ECNCEThresh != 0 && granted.ECNCEThresh != asked.ECNCEThresh:
		return &GrantError{Field: "ecnCEThresh", Granted: fmt.Sprint(granted.ECNCEThresh),
			Want: fmt.Sprintf("0 or the %d asked", asked.ECNCEThresh)}
	case granted.RandomPayload && !asked.RandomPayload:
		return &GrantError{Field: "modifierBitmap", Granted: "random payload", Want: "no random payload, as asked"}
	case granted.Upstream && !granted.InitialRate.Valid():
		r := granted.InitialRate
		return &GrantError{Field: "srStruct", Granted: fmt.Sprintf("a row of periods %d/%d µs and bursts %d/%d",
			r.TxInterval1, r.TxInterval2, r.BurstSize1, r.BurstSize2),
			Want: fmt.Sprintf("periods of 0 or at least %d µs, bursts of at most %d, sizes of at most %d", tx1Interval, MaxBurst, MaxJumboPayload)}
	}
	return nil
}

// Valid reports whether r is a row a sending rate table can hold: each
// transmitter off (period 0) or with a period of at least the table's
// shortest (100 µs), bursts of at most MaxBurst, sizes of at most
// MaxJumboPayload. A client sends the rows its server gives it, and one
// outside these makes it send as fast as it can.
func (r SendingRate) Valid() bool {
	period := func(us uint32) bool { return us == 0 || us >= tx1Interval }
	size := func(f uint32) bool { return f&^RandomSize <= MaxJumboPayload }
	return period(r.TxInterval1) && period(r.TxInterval2) &&
		r.BurstSize1 <= MaxBurst && r.BurstSize2 <= MaxBurst &&
		size(r.UDPPayload1) && size(r.UDPPayload2) && size(r.UDPAddon2)
}
