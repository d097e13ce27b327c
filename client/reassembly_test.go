package client

import (
	"errors"
	"testing"

	"github.com/udpstp/udpstp/internal/netstat"
)

// A test's reassembly failures are those of the host since it began,
// IPv4 and IPv6, timeouts left out; a counter that cannot be read leaves
// them unknown.
func TestReasmWatch(t *testing.T) {
	seq := []netstat.Counters{
		{netstat.IPReasmFails: 40, netstat.IPReasmTimeout: 30, netstat.IP6ReasmFails: 5},
		{netstat.IPReasmFails: 2040, netstat.IPReasmTimeout: 31, netstat.IP6ReasmFails: 9, netstat.IP6ReasmTimeout: 1},
	}
	var fail error
	w := reasmWatch{read: func() (netstat.Counters, error) {
		c := seq[0]
		seq = seq[1:]
		return c, fail
	}}
	w.begin()
	if n, ok := w.end(); !ok || n != 1999+3 {
		t.Errorf("end: %d, %v; want 2002 (IPv4 2000 less its 1 timeout, IPv6 4 less its 1)", n, ok)
	}
	seq = []netstat.Counters{nil}
	fail = errors.New("no /proc")
	w.begin()
	if n, ok := w.end(); ok {
		t.Errorf("unreadable at the start: %d, %v; want unknown", n, ok)
	}
	var sender reasmWatch // a Load Sender reads nothing
	sender.begin()
	if _, ok := sender.end(); ok {
		t.Error("a watch without a reader reported a count")
	}
}
