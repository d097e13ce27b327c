package dataphase

// OB-UDPST's time arithmetic (see the package doc), which results and
// thresholds depend on to the millisecond: differences are rounded half up
// with floor division, also for negative values.

// roundMs converts a nanosecond difference to milliseconds, half up.
func roundMs(ns int64) int64 { return floorDiv(ns+500_000, 1_000_000) }

// roundUs converts a nanosecond difference to microseconds, half up.
func roundUs(ns int64) int64 { return floorDiv(ns+500, 1_000) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// sat32 clamps a non-negative count to 32 bits, as the wire fields are.
func sat32(v int64) uint32 {
	switch {
	case v < 0:
		return 0
	case v > 0xFFFFFFFF:
		return 0xFFFFFFFF
	}
	return uint32(v)
}
