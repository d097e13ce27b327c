package dataphase

import "fmt"

// PDUError says why a datagram was not accepted as a PDU: which PDU, which
// field and why. Decoders in this package and in control return it so that a
// caller can count rejections by kind and print one clear line.
type PDUError struct {
	PDU    string // "Load PDU", "Status PDU", "Setup PDU", ...
	Field  string // the field that failed, or "length"
	Reason string
}

func (e *PDUError) Error() string {
	return fmt.Sprintf("invalid %s: %s: %s", e.PDU, e.Field, e.Reason)
}

// errf builds a *PDUError; it allocates, which is fine: rejections are rare and
// counted, and the accepted path never calls it.
func errf(pdu, field, format string, args ...any) error {
	return &PDUError{PDU: pdu, Field: field, Reason: fmt.Sprintf(format, args...)}
}
