package dataphase

import "github.com/udpstp/udpstp/clock"

// Buffers shared between a core and the executor that drives it. The
// executor owns them and reuses them for the life of the Test Connection, so
// the per-datagram path allocates nothing.

const (
	// SlotLen is the room a SendBuffer keeps for what the core writes of
	// one datagram: a Load PDU header or a whole Status PDU.
	SlotLen = 208
	// MaxPlan bounds a Send Plan: one earlier Burst's deferred datagrams
	// plus one new Burst, each at most MaxBurst datagrams and an add-on.
	MaxPlan = 2 * (MaxBurst + 1)
	// MaxRecv is the most datagrams one receive batch holds; it is also the
	// most an executor reads for one Test Connection in one turn, so a
	// flooded socket cannot starve pacing.
	MaxRecv = 256
	// RecvSlotLen is how much of each received datagram is kept: a whole
	// Status PDU; Load PDUs need only their 32-byte header.
	RecvSlotLen = 208
)

// OutDatagram describes datagram i of a SendBuffer.
type OutDatagram struct {
	HdrLen uint16 // bytes the core wrote at the start of slot i
	Len    uint16 // UDP payload length; Len-HdrLen filler bytes follow
}

// SendBuffer holds one Send Plan written by the core. The executor sends
// datagram i as Slot(i) followed by Len-HdrLen filler bytes: zeros, or
// random bytes when RandomFill is set (the executor owns the filler, so a
// 9 KB jumbo datagram costs the core 32 bytes of writing). Consecutive
// datagrams of equal Len, optionally followed by one shorter one, are a
// Burst the executor may hand to the kernel as one UDP GSO send.
type SendBuffer struct {
	slots      [MaxPlan * SlotLen]byte
	Dgrams     [MaxPlan]OutDatagram
	N          int
	RandomFill bool
}

// Slot returns the bytes of datagram i that the core writes.
func (b *SendBuffer) Slot(i int) []byte {
	return b.slots[i*SlotLen : i*SlotLen+int(b.Dgrams[i].HdrLen)]
}

// slot returns the whole slot i for writing.
func (b *SendBuffer) slot(i int) []byte {
	return b.slots[i*SlotLen : (i+1)*SlotLen]
}

// InDatagram describes datagram i of a RecvBatch.
type InDatagram struct {
	Len    int        // real UDP payload length (the read may have truncated it)
	Time   clock.Time // kernel receive time on the Test Time Base, or the batch's Pair.Mono
	TOS    uint8      // IPv4 TOS / IPv6 Traffic Class, when HasTOS
	HasTOS bool
}

// RecvBatch holds datagrams read from one Test Connection's socket.
type RecvBatch struct {
	bufs   [MaxRecv][RecvSlotLen]byte
	Dgrams [MaxRecv]InDatagram
	N      int
	// Pair was read when the read returned; it converts kernel timestamps
	// (CLOCK_REALTIME) to the Test Time Base and back.
	Pair clock.Pair
}

// Buf returns the receive buffer of datagram i, for the executor to read into.
func (b *RecvBatch) Buf(i int) []byte { return b.bufs[i][:] }

// Data returns the bytes kept of datagram i.
func (b *RecvBatch) Data(i int) []byte {
	return b.bufs[i][:min(b.Dgrams[i].Len, RecvSlotLen)]
}
