package client

import (
	"errors"
	"testing"

	"github.com/udpstp/udpstp/control"
)

// TestMovesOn: the search goes on after no answer and a busy server's
// refusals, and stops at a refusal every server would give.
func TestMovesOn(t *testing.T) {
	for status, want := range map[int]bool{
		1: true, 75: true, // no answer, ICMP, a socket error
		100 + int(control.SetupCapExceeded): true, 100 + int(control.SetupConnFail): true,
		100 + int(control.SetupAuthRequired): false, 100 + int(control.SetupBadVersion): false,
		100 + int(control.SetupJumboMismatch): false, 107: false, 152: false,
	} {
		if got := movesOn(&control.SetupError{Status: status}); got != want {
			t.Errorf("ErrorStatus %d: moves on %v, want %v", status, got, want)
		}
	}
	if !movesOn(errors.New("not a SetupError")) {
		t.Error("an error without a status (75) does not move on")
	}
}
