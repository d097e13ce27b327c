package engine

import "fmt"

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

// checkWaitFDs refuses a wait on more than one socket: an executor waits
// on its Test Connection's socket (Conn), or on none (a timer), and the
// wait off Linux can block reading one socket only.
func checkWaitFDs(fds []waitFD) error {
	if len(fds) > 1 {
		return fmt.Errorf("wait on %d sockets, at most one", len(fds))
	}
	return nil
}
