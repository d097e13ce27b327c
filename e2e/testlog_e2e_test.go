package e2e

// The server's log of finished tests: one line per test with
// the client, the direction, the maximum, the status and the duration,
// and nothing per datagram.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// TestServerLogsEachTest: a downstream and an upstream test each end with
// exactly one "test ended" line naming the client, its direction, a
// maximum above zero, ErrorStatus 0 and a duration; the whole log of two
// 5 s tests stays a few lines (no line per datagram or per Sub-Interval).
func TestServerLogsEachTest(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	for _, dir := range []string{"-d", "-u"} {
		r, code, out := ourClient(t, "-t", "5", "-I", "20", "-p", fmt.Sprint(port), dir, "127.0.0.1")
		checkComplete(t, r, code, out, 5)
	}
	ended := func() []string {
		var ls []string
		for _, l := range strings.Split(srv.log(), "\n") {
			if strings.Contains(l, `msg="test ended"`) {
				ls = append(ls, l)
			}
		}
		return ls
	}
	await.True(t, "two test ended lines", func() bool { return len(ended()) >= 2 })
	lines := ended()
	if len(lines) != 2 {
		t.Fatalf("%d test ended lines for two tests:\n%s", len(lines), srv.log())
	}
	field := regexp.MustCompile(`(?:^| )(peer|direction|max_mbps_l3|error_status|duration)=(\S+)`)
	for i, want := range []string{"downstream", "upstream"} {
		f := map[string]string{}
		for _, m := range field.FindAllStringSubmatch(lines[i], -1) {
			f[m[1]] = m[2]
		}
		if !strings.HasPrefix(f["peer"], "127.0.0.1:") || f["direction"] != want || f["error_status"] != "0" || f["duration"] == "" {
			t.Errorf("test %d (%s): %q", i+1, want, lines[i])
		}
		if m, err := strconv.ParseFloat(f["max_mbps_l3"], 64); err != nil || m <= 0 {
			t.Errorf("test %d (%s): maximum %q, want a rate above 0: %q", i+1, want, f["max_mbps_l3"], lines[i])
		}
	}
	// Start-up, socket buffers, and per test: started, ended (a few
	// more for a slow start or a warning), never one per Sub-Interval.
	if n := strings.Count(srv.log(), "\n") + 1; n > 20 {
		t.Errorf("%d log lines for two tests:\n%s", n, srv.log())
	}
}
