package agent

import (
	"regexp"
	"testing"
)

// uuid4 is the text form of a version 4 UUID (RFC 9562, sections 4 and
// 5.4): lower-case hex, the version nibble 4, the variant bits 10.
var uuid4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestResultID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newResultID()
		if !uuid4.MatchString(id) {
			t.Fatalf("%q is no version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
	}
}
