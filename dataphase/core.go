package dataphase

import "github.com/udpstp/udpstp/clock"

// Core is the Data Phase interface (DEVELOPERS.md): what an executor
// drives, the engine's Engine Threads and the simulator alike, and what
// Conn implements. Declared here, beside its implementation, so that both
// executors name one contract: the simulator cannot import the engine,
// whose contract suite runs on it.
type Core interface {
	// Poll writes the Send Plan due at now into b (b.N datagrams) and reports whether there is one.
	Poll(now clock.Pair, b *SendBuffer) bool
	// Sent reports how many datagrams of the last plan the kernel accepted (the only backpressure channel).
	Sent(n int)
	// Receive delivers a batch read from the socket.
	Receive(b *RecvBatch)
	// Deadline is when the core next needs a turn (clock.Never: only on receive).
	Deadline() clock.Time
	// Stop asks the core to end (local stop); it ends on a later turn and reports EvEnd.
	Stop()
	// Fail ends the core at once after an unrecoverable socket error.
	Fail(err error)
	// Done reports that the core has ended; its last event was EvEnd.
	Done() bool
	// Events returns and clears the events produced since the last call.
	Events() []Event
}

var _ Core = (*Conn)(nil)
