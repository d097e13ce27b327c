//go:build !small && linux

package e2e

// internal/testkit/pgtest runs PostgreSQL as another user: Linux only.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/collector"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

// writeServerCert makes a CA and a certificate for 127.0.0.1 signed by
// it, as the operator's PKI would, and writes cert.pem, key.pem and
// ca.pem to dir.
func writeServerCert(t testing.TB, dir string) (certFile, keyFile, caFile string) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e server CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, sT, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, caFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
	for f, b := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		caFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile, caFile
}

// runCLI runs `udpstp args...` to its end and fails the test unless it
// exits 0.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), await.Deadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, udpstpBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("udpstp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// collectorProc is one `udpstp collector`.
type collectorProc struct {
	*proc
	args []string
	url  string
}

func startCollector(t testing.TB, name string, args []string) *collectorProc {
	t.Helper()
	p := start(t, exec.Command(udpstpBin, args...), procOpts{name: name, merge: true, ready: "collector serving", stop: os.Interrupt})
	p.stopAtCleanup(t, name)
	return &collectorProc{proc: p, args: args}
}

// TestCollectorFleet: a fleet across the internet. Three `udpstp agent`
// processes, none given a database URL, each with its own client
// certificate, upload through two `udpstp collector` processes (TLS on
// loopback, a server certificate and the collector's CA made here) into
// one PostgreSQL. The collectors are stopped and started again, then
// PostgreSQL is; the agents' spools keep what waits. In the end every
// result each agent logged as stored is in PostgreSQL once under its
// name, and nothing else is. A probe that claims another's name in its
// upload is stored under its own; once revoked, it is refused (403) by
// the other collector on its next request, and stores nothing; a
// certificate of another CA with an enrolled probe's name is refused at
// the handshake.
func TestCollectorFleet(t *testing.T) {
	processTest(t)
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	dir := t.TempDir()
	certFile, keyFile, serverCA := writeServerCert(t, dir)
	caDir := filepath.Join(dir, "ca")
	runCLI(t, "collector", "ca", "init", "--dir", caDir)
	if st, err := os.Stat(filepath.Join(caDir, "ca.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v %v", st, err)
	}
	cred := func(name string) string {
		out := filepath.Join(dir, "cred-"+name)
		runCLI(t, "collector", "enroll", name, "--ca", caDir, "--store", dsn, "--out", out, "--server-ca", serverCA)
		return out
	}

	var cols []*collectorProc
	for i := range 2 {
		port := freeTCPPort(t)
		args := []string{"collector", "--listen", "127.0.0.1:" + strconv.Itoa(port), "--http", "127.0.0.1:" + strconv.Itoa(freeTCPPort(t)),
			"--tls-cert", certFile, "--tls-key", keyFile, "--client-ca", filepath.Join(caDir, "ca.crt"), "--store", dsn}
		col := startCollector(t, fmt.Sprintf("collector %d", i+1), args)
		col.url = fmt.Sprintf("https://127.0.0.1:%d/", port)
		cols = append(cols, col)
	}

	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "127.0.0.1")
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf(`tolerance = "10m"
[[test]]
name = "down"
servers = ["127.0.0.1:%d"]
direction = "down"
every = "1s"
options = { test-time = 5, rate-index = "20" }
`, port))
	// Each probe's configuration is set on the collectors' store, not
	// given to the agent: it fetches it at start (probe-a also every
	// second; the others on SIGHUP, below).
	var agents []*spoolAgent
	for i, name := range []string{"probe-a", "probe-b", "probe-c"} {
		a := &spoolAgent{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t))}
		credDir := cred(name)
		runCLI(t, "collector", "config", "set", name, config, "--store", dsn, "--test-min-every", "1s")
		args := []string{"agent", "--http", strings.TrimPrefix(a.base, "http://"), "--store", cols[i%2].url,
			"--credential", credDir, "--spool", filepath.Join(t.TempDir(), "spool.db"), "--identity", name,
			"--test-min-every", "1s"}
		if i == 0 {
			args = append(args, "--config-every", "1s")
		}
		cmd := exec.Command(udpstpBin, args...)
		a.proc = start(t, cmd, agentOpts(a.base))
		a.stopAtCleanup(t, name)
		agents = append(agents, a)
	}
	uploaded := func(what string) {
		for _, a := range agents {
			waitUntil(t, 120*time.Second, a.name+": "+what, func() (bool, string) {
				w, detail := a.gauge("udpstp_agent_results_waiting")
				return len(a.stored()) > 0 && w == 0, detail + "\n" + a.log()
			})
		}
	}
	// waiting waits until each agent stored another result, which waits.
	waiting := func(what string) {
		need := map[*spoolAgent]int{}
		for _, a := range agents {
			need[a] = len(a.stored()) + 1
		}
		for _, a := range agents {
			waitUntil(t, 120*time.Second, a.name+": "+what, func() (bool, string) {
				w, detail := a.gauge("udpstp_agent_results_waiting")
				return len(a.stored()) >= need[a] && w > 0, fmt.Sprintf("waiting %v %s\n%s", w, detail, a.log())
			})
		}
	}
	uploaded("a result uploaded through its collector")
	b1, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if l := a.line("agent configuration from the collector"); !strings.Contains(l, "hash="+collector.Hash(b1)) {
			t.Errorf("%s: does not say it runs the collector's configuration: %q", a.name, l)
		}
	}

	// The collectors go away; results wait in the spools.
	for _, col := range cols {
		if col.stop(t, os.Interrupt) != 0 {
			t.Fatalf("%s: %v\n%s", col.name, col.exitErr(), col.log())
		}
	}
	waiting("results wait while the collectors are down")
	for i, col := range cols {
		cols[i] = &collectorProc{proc: startCollector(t, col.name, col.args).proc, args: col.args, url: col.url}
	}
	uploaded("nothing waits once the collectors are back")

	// The database goes away; the collectors answer 503, the results wait.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	waiting("results wait while PostgreSQL is down")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	uploaded("nothing waits once PostgreSQL is back")

	// Hostile probes, at the collectors, with the test's own client.
	doc, err := os.ReadFile("../testdata/obudpst/ds_default_v4/client.json")
	if err != nil {
		t.Fatal(err)
	}
	body := func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"agent":"probe-a","start":"2026-01-02T03:04:05Z","doc":%s}`, id, doc)
	}
	post := func(credDir, url string, b []byte) (int, error) {
		tc, err := collector.LoadCredential(credDir)
		if err != nil {
			t.Fatal(err)
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: await.Deadline}
		defer cl.CloseIdleConnections()
		resp, err := cl.Post(url+"v1/results", "application/json", bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	mallory := cred("mallory")
	const forgedID, afterRevokeID, foreignID = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
	if code, err := post(mallory, cols[0].url, body(forgedID)); err != nil || code != http.StatusOK {
		t.Fatalf("mallory's upload: %d %v", code, err)
	}
	runCLI(t, "collector", "revoke", "mallory", "--store", dsn)
	if code, err := post(mallory, cols[1].url, body(afterRevokeID)); err != nil || code != http.StatusForbidden {
		t.Errorf("a revoked probe's upload at the other collector: %d %v, want 403", code, err)
	}
	// Another CA's certificate named probe-a.
	otherCA := filepath.Join(dir, "other-ca")
	if err := collector.InitCA(otherCA, time.Now()); err != nil {
		t.Fatal(err)
	}
	oca, err := collector.LoadCA(otherCA)
	if err != nil {
		t.Fatal(err)
	}
	is, err := oca.Issue("probe-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(serverCA)
	if err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "forged")
	if err := collector.WriteCredential(forged, is, pem); err != nil {
		t.Fatal(err)
	}
	if code, err := post(forged, cols[0].url, body(foreignID)); err == nil {
		t.Errorf("another CA's certificate: answered %d, want a refused handshake", code)
	}

	// A configuration changed on the collector reaches every agent.
	config2 := filepath.Join(dir, "agent2.toml")
	writeAgentFile(t, config2, fmt.Sprintf(`tolerance = "20m"
[[test]]
name = "down"
servers = ["127.0.0.1:%d"]
direction = "down"
every = "1s"
options = { test-time = 5, rate-index = "20" }
`, port))
	b2, err := os.ReadFile(config2)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		runCLI(t, "collector", "config", "set", a.name, config2, "--store", dsn, "--test-min-every", "1s")
	}
	for _, a := range agents[1:] {
		a.signal(t, syscall.SIGHUP)
	}
	for _, a := range agents {
		a.waitLine(t, "agent configuration from the collector changed; reloading", await.Deadline)
		waitUntil(t, await.Deadline, a.name+": runs the new configuration", func() (bool, string) {
			l := a.log()
			i := strings.Index(l, "hash="+collector.Hash(b2))
			return i >= 0 && strings.Contains(l[i:], "configuration reloaded"), l
		})
	}

	for _, a := range agents {
		a.signal(t, os.Interrupt)
	}
	for _, a := range agents {
		if a.exit(t, await.Deadline) != 0 {
			t.Errorf("%s: %v\n%s", a.name, a.exitErr(), a.log())
		}
	}
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, a := range agents {
		rows, err := st.List(ctx, store.Filter{Agent: a.name})
		if err != nil {
			t.Fatal(err)
		}
		inDB := map[string]int{}
		for _, r := range rows {
			inDB[r.ID]++
		}
		logged := a.stored()
		for _, id := range logged {
			if inDB[id] != 1 {
				t.Errorf("%s: result %s logged as stored is in PostgreSQL %d times", a.name, id, inDB[id])
			}
			delete(inDB, id)
		}
		for id := range inDB {
			t.Errorf("%s: result %s in PostgreSQL under its name was never logged by it", a.name, id)
		}
		t.Logf("%s: %d results, each in PostgreSQL once", a.name, len(logged))
	}
	if r, err := st.Get(ctx, forgedID); err != nil || r.Agent != "mallory" {
		t.Errorf("the upload claiming probe-a's name: %+v %v, want it stored as mallory's", r, err)
	}
	for _, id := range []string{afterRevokeID, foreignID} {
		if _, err := st.Get(ctx, id); err == nil {
			t.Errorf("refused upload %s is in PostgreSQL", id)
		}
	}
}
