package engine

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

func TestGroupFor(t *testing.T) {
	for _, c := range []struct {
		live int
		want time.Duration
	}{
		{0, 0}, {1, 0}, {groupFrom, 0},
		{groupFrom + 1, groupPerConn},
		{groupFrom + 20, 20 * groupPerConn},
		{200, groupMax}, {100000, groupMax},
	} {
		if got := groupFor(c.live); got != clock.Time(c.want) {
			t.Errorf("groupFor(%d) = %v, want %v", c.live, time.Duration(got), c.want)
		}
	}
}
