package report

import "fmt"

// ReassemblyNote is the text report's line after the Maximum when the
// Load Receiver's host failed to reassemble n fragments or datagrams
// during the test, timeouts left out: the path fragmented the datagrams
// and the kernel's reassembly memory ran full, so it dropped what came
// after (docs/accuracy.md, "Reassembly memory").
func ReassemblyNote(n int64) string {
	return fmt.Sprintf("NOTE: This host failed to reassemble %d IP fragments or datagrams during the test: "+
		"the path fragments the datagrams and, most likely, the kernel's reassembly memory (net.ipv4.ipfrag_high_thresh) ran full, "+
		"so the Sub-Intervals after that understate the path. Datagrams that fit the path avoid it (-j: no jumbo sizes; -T: at most 1500 bytes)", n)
}
