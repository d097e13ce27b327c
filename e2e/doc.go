// Package e2e holds udpstp's end-to-end suite: every test that starts a
// process (our server, client, agent or `udpstp history`; OB-UDPST's
// udpst through UDPST_BIN; Prometheus, dnsmasq, PostgreSQL) or a network
// lab (internal/testkit/netlab's namespaces). It has no code of its own
// outside its tests.
//
// TestMain builds ./cmd/udpstp once, with this test binary's build tags
// (-tags portable included: make portable), and every test runs that
// binary through one process harness (harness_test.go): a process started
// with its arguments, environment and working directory, its standard
// output and error captured as lines, a wait for readiness on a log line,
// a bound UDP port or a condition, a signal to stop it, a kill when the
// test ends, its exit status. The tests of flag parsing and wiring, which
// call package main in-process, stay in cmd/udpstp.
//
// The tests that move data at speed take one of two slots (e2e); those
// that start processes but move little (processTest) run beside them.
// Both skip with -short. The lab's timing-bound tests (TestLab*,
// TestImpairLab) skip unless UDPSTP_LAB=1 (make lab, make lab-ci); the
// network lab needs root, ip, tc, nft and /dev/net/tun. Run it as
//
//	go test ./e2e                       # everything make test runs
//	go test -short ./e2e                # what -short keeps (quick)
//	go test -run 'TestLoopback' -v ./e2e
//	UDPST_BIN=/path/to/udpst go test -run Interop ./e2e
package e2e
