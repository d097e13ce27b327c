package dataphase

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// TestInvalidFloodAllocatesNothing: once a Test Connection has shown its
// ten warnings, further invalid datagrams are only counted: no formatting,
// no allocation, however many arrive.
func TestInvalidFloodAllocatesNothing(t *testing.T) {
	p := Params{TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		SRIndexConf: AutoRateIndex, InitialRate: SendingRate{TxInterval2: 50000, UDPAddon2: 1222 | RandomSize}}
	now := clock.Pair{Mono: 1e9, Wall: 1796009000e9}
	c := NewConn(p, now) // a downstream client: the Load Receiver
	var b RecvBatch
	b.Pair = now
	for i := 0; i < 64; i++ {
		copy(b.Buf(i), []byte{0xBE, 0xEF, 9, 0}) // testAction 9
		b.Dgrams[i] = InDatagram{Len: 100, Time: now.Mono}
	}
	b.N = 64
	c.Receive(&b) // the first ten warn
	c.Events()
	if a := race.AllocsPerRun(20, func() { c.Receive(&b) }); a != 0 {
		t.Errorf("%.1f allocations per batch of invalid datagrams", a)
	}
	if c.counts[CountLoadInvalidFormat] < 64*21 {
		t.Errorf("counted %d invalid datagrams", c.counts[CountLoadInvalidFormat])
	}
}
