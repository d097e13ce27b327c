package dataphase

import "fmt"

// PDUError says why a datagram was not accepted as a PDU: which PDU, which
// field and why. Decoders in this package and in control return it so that a
// caller can count rejections by kind and print one clear line.
type PDUError struct {
	PDU    string // "Load PDU", "Status PDU", "Setup PDU", ...
	Field  string // the field that failed: "length" and "checkSum" are known to Rejection
	Reason string
}

// Rejection is the class of fault that made a datagram no valid PDU, as
// the counters tell them apart (counters.go, control's server counters).
type Rejection uint8

const (
	RejectFormat   Rejection = iota // a field other than the length or the checksum
	RejectSize                      // the length
	RejectChecksum                  // the checksum does not verify
	numRejections
)

func (r Rejection) String() string {
	switch r {
	case RejectSize:
		return "size"
	case RejectChecksum:
		return "checksum"
	}
	return "format"
}

// Rejection classes the error by the field that failed.
func (e *PDUError) Rejection() Rejection { return FieldRejection(e.Field) }

// FieldRejection classes a fault by the field that failed, as PDUError's
// Field names it.
func FieldRejection(field string) Rejection {
	switch field {
	case "length":
		return RejectSize
	case "checkSum":
		return RejectChecksum
	}
	return RejectFormat
}

// RejectionOf classes a decoder's error: a *PDUError by its field, any
// other error as a format fault. Decoders return a *PDUError as it is,
// never wrapped: a type assertion costs nothing where errors.As would
// allocate, and this runs for every junk datagram.
func RejectionOf(err error) Rejection {
	if pe, ok := err.(*PDUError); ok {
		return pe.Rejection()
	}
	return RejectFormat
}

func (e *PDUError) Error() string {
	return fmt.Sprintf("invalid %s: %s: %s", e.PDU, e.Field, e.Reason)
}
