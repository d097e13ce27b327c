//go:build !portable

package engine

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSendPolicy holds sendBatch's errno policy: every errno the Data
// Phase send path handles, on a GSO and a plain message, first and
// repeated.
func TestSendPolicy(t *testing.T) {
	plain, gso := sendStep{}, sendStep{gso: true}
	with := func(st sendStep, f func(*sendStep)) sendStep { f(&st); return st }
	retried := func(st *sendStep) { st.retried = true }
	lastPath := func(st *sendStep) { st.pathErrs = maxPathErrorsPerSend - 1 }
	cases := []struct {
		name string
		e    unix.Errno
		st   sendStep
		want sendAction
	}{
		{"EINTR", unix.EINTR, plain, sendAgain},
		{"EINTR gso", unix.EINTR, gso, sendAgain},
		{"EAGAIN", unix.EAGAIN, plain, sendBackpressure},
		{"EAGAIN gso", unix.EAGAIN, gso, sendBackpressure},
		{"ENOBUFS", unix.ENOBUFS, plain, sendBackpressure},
		{"EPERM (netfilter drop)", unix.EPERM, plain, sendBackpressure},
		{"EPERM after path errors", unix.EPERM, with(plain, lastPath), sendBackpressure},

		{"EMSGSIZE gso first", unix.EMSGSIZE, gso, sendTooBigReplan},
		{"EMSGSIZE gso again", unix.EMSGSIZE, with(gso, func(st *sendStep) { st.tooBigAgain = true }), sendTooBigRefused},
		{"EMSGSIZE plain", unix.EMSGSIZE, plain, sendPathReplan},
		{"EMSGSIZE plain retried", unix.EMSGSIZE, with(plain, retried), sendPathSkip},
		{"EMSGSIZE plain last", unix.EMSGSIZE, with(plain, lastPath), sendPathGiveUp},

		{"ECONNREFUSED", unix.ECONNREFUSED, plain, sendPathRetry},
		{"ECONNREFUSED gso", unix.ECONNREFUSED, gso, sendPathRetry},
		{"ECONNREFUSED retried", unix.ECONNREFUSED, with(plain, retried), sendPathSkip},
		{"ECONNREFUSED last", unix.ECONNREFUSED, with(plain, lastPath), sendPathGiveUp},
		{"ECONNREFUSED last retried", unix.ECONNREFUSED, with(with(plain, retried), lastPath), sendPathGiveUp},
		{"ECONNREFUSED second", unix.ECONNREFUSED, with(plain, func(st *sendStep) { st.pathErrs = maxPathErrorsPerSend - 2 }), sendPathRetry},
		{"EHOSTUNREACH", unix.EHOSTUNREACH, plain, sendPathRetry},
		{"EHOSTDOWN", unix.EHOSTDOWN, plain, sendPathRetry},
		{"ENONET", unix.ENONET, plain, sendPathRetry},
		{"ENETUNREACH", unix.ENETUNREACH, plain, sendPathRetry},
		{"ENETUNREACH retried", unix.ENETUNREACH, with(plain, retried), sendPathSkip},
		{"EACCES (prohibited)", unix.EACCES, plain, sendPathRetry},
		{"EACCES gso retried", unix.EACCES, with(gso, retried), sendPathSkip},
		{"EPROTO", unix.EPROTO, plain, sendPathRetry},
		{"ENOPROTOOPT", unix.ENOPROTOOPT, plain, sendPathRetry},
		{"EOPNOTSUPP", unix.EOPNOTSUPP, plain, sendPathRetry},

		{"EIO gso", unix.EIO, gso, sendGSOOff},
		{"EIO plain", unix.EIO, plain, sendFail},
		{"EINVAL gso first", unix.EINVAL, gso, sendGSOCheckMTU},
		{"EINVAL gso after MTU re-plan", unix.EINVAL, with(gso, func(st *sendStep) { st.mtuReplanned = true }), sendGSOOff},
		{"EINVAL plain", unix.EINVAL, plain, sendFail},

		{"EBADF", unix.EBADF, plain, sendFail},
		{"EBADF gso", unix.EBADF, gso, sendFail},
		{"ENOTCONN", unix.ENOTCONN, plain, sendFail},
		{"EFAULT", unix.EFAULT, gso, sendFail},
	}
	for _, c := range cases {
		st := c.st
		st.kind = sendErrKindOf(c.e)
		if got := sendPolicy(st); got != c.want {
			t.Errorf("%s (%v, kind %d, %+v): action %d, want %d", c.name, c.e, st.kind, c.st, got, c.want)
		}
	}
}
