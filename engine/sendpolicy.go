package engine

// sendBatch's errno policy: what a failed sendmmsg means, and what the
// batch does next. Pure (no system call, no platform): sendBatch
// (batch_linux.go) classifies the errno (sendErrKindOf, errors_linux.go),
// asks sendPolicy, and carries the action out.

// sendErrKind is what an errno from a Data Phase send means to sendPolicy.
type sendErrKind uint8

const (
	sendErrOther        sendErrKind = iota // none of the below: the send fails
	sendErrInterrupted                     // EINTR
	sendErrBackpressure                    // isBackpressure: EAGAIN, ENOBUFS, EPERM
	sendErrTooBig                          // EMSGSIZE: an ICMP error, or a GSO refusal
	sendErrPath                            // another pathClassOf errno (ICMP error, local route)
	sendErrIO                              // EIO: a GSO refusal (no checksum offload, xfrm)
	sendErrInval                           // EINVAL: a GSO refusal, or a segment above the MTU
)

// sendStep is a failed send as sendPolicy judges it: the errno's kind and
// what this SendBatch call has met so far.
type sendStep struct {
	kind sendErrKind
	// gso: the refused message is a UDP GSO one (more than one segment).
	gso bool
	// tooBigAgain: this GSO message met EMSGSIZE once already and was
	// re-planned by the path MTU read then.
	tooBigAgain bool
	// retried: this datagram was already sent again after a path error.
	retried bool
	// pathErrs: path errors met earlier in this call.
	pathErrs int
	// mtuReplanned: an EINVAL was already re-planned by the MTU in this
	// call.
	mtuReplanned bool
}

// sendAction is what sendBatch does after a failed send.
type sendAction uint8

const (
	// sendFail: return the error; the Data Phase cannot go on on this
	// socket.
	sendFail sendAction = iota
	// sendAgain: the same messages again at once (EINTR).
	sendAgain
	// sendBackpressure: stop, count backpressure and the datagrams not
	// taken, return what was sent; the executor waits (POLLOUT after
	// EAGAIN, time after ENOBUFS and EPERM).
	sendBackpressure
	// sendTooBigReplan: a first EMSGSIZE on a GSO message, a pending ICMP
	// error or the kernel refusing the message: re-read the path MTU, take
	// the pending errors, re-plan and try once more; counted as a path
	// error once the retry tells which it was.
	sendTooBigReplan
	// sendTooBigRefused: EMSGSIZE again on the same GSO message after the
	// re-plan: the kernel refuses it for a reason the MTU does not explain.
	// Count a GSO refusal, turn GSO off, re-plan.
	sendTooBigRefused
	// sendGSOOff: EIO on a GSO message, or EINVAL that the MTU did not
	// explain: the device or the kernel will not do GSO here. Count a GSO
	// refusal, turn GSO off, re-plan.
	sendGSOOff
	// sendGSOCheckMTU: a first EINVAL on a GSO message in this call.
	// Kernels before 235174b2bed8 say EINVAL for a segment above the path
	// MTU (an ICMP fragmentation needed since Connect lowered it). Count a
	// GSO refusal and re-read the MTU: if it changed and the segment no
	// longer fits, re-plan with GSO kept (those datagrams go alone);
	// else as sendGSOOff. Once per call, so an MTU that keeps changing
	// cannot loop.
	sendGSOCheckMTU
	// sendPathRetry: a pending ICMP error (or a route failure) reported by
	// this send, which therefore did not go out; reporting it cleared it,
	// so the retry normally goes out. Count it, take the other pending
	// errors of the same burst (counted there), send the same messages
	// again.
	sendPathRetry
	// sendPathReplan: as sendPathRetry for EMSGSIZE on a plain message
	// (fragmentation needed): the path MTU went down, so re-read it and
	// re-plan the rest by it (GSO segments that no longer fit go alone,
	// the kernel fragments them; GSO stays on for those that do).
	sendPathReplan
	// sendPathSkip: the same datagram failed again: new errors keep
	// coming. Count it, give this message up (its datagrams count as
	// sent: the core sees them lost on the path, which they are) and go
	// on with the next.
	sendPathSkip
	// sendPathGiveUp: maxPathErrorsPerSend path errors in one call: count
	// it and give up the rest of the plan, so that a dead peer or a lost
	// route cannot hold the executor in one SendBatch.
	sendPathGiveUp
)

// maxPathErrorsPerSend bounds the path errors one SendBatch meets before
// it gives up the rest of its plan: each costs a system call, and a path
// that answers every datagram with an ICMP error (a peer gone, a route
// withdrawn) must not multiply them.
const maxPathErrorsPerSend = 4

// sendPolicy says what sendBatch does after a failed send (see
// sendAction). GSO refusals are told from path errors by the message: EIO
// (no TX checksum offload on the egress device, an xfrm route), EINVAL (too
// many segments, UDP checksums off, a segment above the PMTU on older
// kernels) and EMSGSIZE (a segment above the PMTU on newer kernels, or a
// message too long) on a GSO message are the kernel refusing it (gso.go);
// on a plain one EIO and EINVAL fail the send and EMSGSIZE is a path error
// (ICMP fragmentation needed). wireguard-go, quic-go and tailscale fall
// back from GSO on EIO only, quinn also on EINVAL; EMSGSIZE left unhandled
// made Felix's sends stall for good, so every one of them falls back here.
func sendPolicy(st sendStep) sendAction {
	switch k := st.kind; {
	case k == sendErrInterrupted:
		return sendAgain
	case k == sendErrBackpressure:
		return sendBackpressure
	case k == sendErrTooBig && st.gso && st.tooBigAgain:
		return sendTooBigRefused
	case k == sendErrTooBig && st.gso:
		return sendTooBigReplan
	case k == sendErrTooBig || k == sendErrPath:
		switch {
		case st.pathErrs+1 >= maxPathErrorsPerSend:
			return sendPathGiveUp
		case st.retried:
			return sendPathSkip
		case k == sendErrTooBig:
			return sendPathReplan
		}
		return sendPathRetry
	case st.gso && k == sendErrInval && !st.mtuReplanned:
		return sendGSOCheckMTU
	case st.gso && (k == sendErrIO || k == sendErrInval):
		return sendGSOOff
	}
	return sendFail
}
