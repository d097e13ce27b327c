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
