package dataphase

// Validated reports whether a server's peer has shown that it receives
// what the server sends it (amplification.go); a client's Conn always has.
// The server's Control Phase trusts the peer's source from then on
// (control/pending.go). Call it where the Conn is driven (an executor's
// onEvent).
func (c *Conn) Validated() bool { return !c.amp.on }
