package engine

// waitFD is one socket an executor waits on, and what the wait found.
type waitFD struct {
	sock *Socket
	// out also waits for POLLOUT: the last send stopped on a full send
	// buffer (EAGAIN), and room in it is the next thing to act on.
	out bool

	// Set by wait.
	in      bool // datagrams to read (or a condition only a read reports)
	errored bool // POLLERR: a pending socket error to clear
	closed  bool // the socket was closed (or is being closed)
}

func (f *waitFD) reset() { f.in, f.errored, f.closed = false, false, false }
