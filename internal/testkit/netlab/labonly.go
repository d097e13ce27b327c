package netlab

import (
	"os"
	"testing"
)

// EnvLab turns on the accuracy and impairment lab's timing-bound checks:
// they measure the machine as much as the code (a shape's rate, a relay's
// delay, a throughput floor), so they run in `make lab`, which allows one
// retry per case, and not in `make test`, which must pass on a busy
// machine.
const EnvLab = "UDPSTP_LAB"

// LabOnly skips t unless the lab's timing-bound checks were asked for
// (EnvLab=1, as `make lab` sets it), saying so.
func LabOnly(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvLab) != "1" {
		t.Skipf("timing-bound lab check: runs in `make lab` (%s=1)", EnvLab)
	}
}
