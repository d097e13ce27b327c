package engine

import "testing"

// TestSendPolicyKinds holds the policy by errno kind, on every platform
// (TestSendPolicy, on Linux, goes through the errnos themselves): a kind
// is judged by the message it refused and by what the call met before.
func TestSendPolicyKinds(t *testing.T) {
	cases := []struct {
		st   sendStep
		want sendAction
	}{
		{sendStep{kind: sendErrOther}, sendFail},
		{sendStep{kind: sendErrInterrupted, pathErrs: maxPathErrorsPerSend}, sendAgain},
		{sendStep{kind: sendErrBackpressure, gso: true, retried: true}, sendBackpressure},
		{sendStep{kind: sendErrTooBig, gso: true}, sendTooBigReplan},
		{sendStep{kind: sendErrTooBig, gso: true, tooBigAgain: true, pathErrs: maxPathErrorsPerSend}, sendTooBigRefused},
		{sendStep{kind: sendErrTooBig, tooBigAgain: true}, sendPathReplan},
		{sendStep{kind: sendErrPath, gso: true, mtuReplanned: true}, sendPathRetry},
		{sendStep{kind: sendErrPath, retried: true, pathErrs: maxPathErrorsPerSend - 2}, sendPathSkip},
		{sendStep{kind: sendErrPath, pathErrs: maxPathErrorsPerSend - 1}, sendPathGiveUp},
		{sendStep{kind: sendErrIO, gso: true}, sendGSOOff},
		{sendStep{kind: sendErrIO, mtuReplanned: true}, sendFail},
		{sendStep{kind: sendErrInval, gso: true}, sendGSOCheckMTU},
		{sendStep{kind: sendErrInval, gso: true, mtuReplanned: true}, sendGSOOff},
		{sendStep{kind: sendErrInval}, sendFail},
	}
	for _, c := range cases {
		if got := sendPolicy(c.st); got != c.want {
			t.Errorf("%+v: action %d, want %d", c.st, got, c.want)
		}
	}
}
