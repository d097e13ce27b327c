//go:build !small

package collector

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// rig is a collector on a real TLS listener over an SQLite store, with
// its CA, and a server certificate from a CA of the test's.
type rig struct {
	t        *testing.T
	st       store.Store
	ca       *CA
	srv      *Server
	ts       *httptest.Server
	serverCA []byte
	conns    *atomic.Int64 // connections the collector accepted
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(dir, "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := InitCA(filepath.Join(dir, "ca"), time.Now()); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	serverCert, serverCA := testServerCert(t, "127.0.0.1")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.TLS = TLSConfig(serverCert, pool)
	conns := new(atomic.Int64)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return &rig{t: t, st: st, ca: ca, srv: srv, ts: ts, serverCA: serverCA, conns: conns}
}

// enrol issues and records a credential for name and returns its directory.
func (g *rig) enrol(name string) string {
	g.t.Helper()
	is, err := g.ca.Issue(name, time.Now())
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.st.(store.Probes).Enrol(context.Background(), name, is.Serial, time.Now()); err != nil {
		g.t.Fatal(err)
	}
	dir := filepath.Join(g.t.TempDir(), name)
	if err := WriteCredential(dir, is, g.serverCA); err != nil {
		g.t.Fatal(err)
	}
	return dir
}

// client is an HTTPS client with the credential in dir ("" for none: the
// server's CA only).
func (g *rig) client(dir string) *http.Client {
	g.t.Helper()
	var tc *tls.Config
	if dir != "" {
		var err error
		if tc, err = LoadCredential(dir); err != nil {
			g.t.Fatal(err)
		}
	} else {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(g.serverCA)
		tc = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

func (g *rig) post(c *http.Client, body []byte) (*http.Response, string) {
	g.t.Helper()
	resp, err := c.Post(g.ts.URL+"/v1/results", "application/json", bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (g *rig) count() int {
	g.t.Helper()
	rs, err := g.st.List(context.Background(), store.Filter{})
	if err != nil {
		g.t.Fatal(err)
	}
	return len(rs)
}

func testDoc(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/obudpst/ds_default_v4/client.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var idN int

func upload(t *testing.T, doc []byte, extra string) []byte {
	idN++
	return fmt.Appendf(nil, `{"id":"00000000-0000-4000-8000-%012d","test":"t","start":"2026-01-02T03:04:05Z","end":"2026-01-02T03:04:15Z"%s,"doc":%s}`, idN, extra, doc)
}

// TestUploadStoredUnderCertificateName: the result goes in under the
// certificate's name, not the one the document or the envelope claims,
// and an upload sent twice is stored once and answered as a success both
// times.
func TestUploadStoredUnderCertificateName(t *testing.T) {
	g := newRig(t, Config{})
	c := g.client(g.enrol("probe-a"))
	body := upload(t, testDoc(t), `,"agent":"probe-b"`)
	for i := range 2 {
		resp, msg := g.post(c, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("upload %d: %s %s", i, resp.Status, msg)
		}
	}
	rs, err := g.st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Agent != "probe-a" || rs[0].MaxMbps == nil {
		t.Fatalf("stored %+v, want one result of probe-a with its figures", rs)
	}
}

// TestRefusals attacks each defence with a real TLS client and checks
// the answer and that nothing was stored.
func TestRefusals(t *testing.T) {
	g := newRig(t, Config{MaxBody: 64 << 10})
	doc := testDoc(t)
	good := g.enrol("good")
	cases := []struct {
		name   string
		client func() *http.Client
		body   []byte
		code   int
		says   string
	}{
		{"no certificate", func() *http.Client { return g.client("") }, upload(t, doc, ""), 401, "client certificate"},
		{"revoked", func() *http.Client {
			dir := g.enrol("gone")
			if n, err := g.st.(store.Probes).Revoke(context.Background(), "gone", time.Now()); err != nil || n != 1 {
				t.Fatalf("revoke: %d %v", n, err)
			}
			return g.client(dir)
		}, upload(t, doc, ""), 403, "revoked"},
		{"our CA, not enrolled", func() *http.Client {
			is, err := g.ca.Issue("good", time.Now()) // another's name, never recorded
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			WriteCredential(dir, is, g.serverCA)
			return g.client(dir)
		}, upload(t, doc, ""), 403, "not enrolled"},
		{"too large", func() *http.Client { return g.client(good) }, upload(t, []byte(`{"ErrorStatus":0,"x":"`+strings.Repeat("a", 70<<10)+`"}`), ""), 413, "at most"},
		{"not a result", func() *http.Client { return g.client(good) }, upload(t, []byte(`{"hello":1}`), ""), 400, "doc"},
		{"bad id", func() *http.Client { return g.client(good) }, []byte(`{"id":"../x","start":"2026-01-02T03:04:05Z","doc":{}}`), 400, "id"},
		{"not JSON", func() *http.Client { return g.client(good) }, []byte(`\x00\x01`), 400, "not an upload"},
		{"no doc", func() *http.Client { return g.client(good) }, []byte(`{"id":"00000000-0000-4000-8000-000000000999","start":"2026-01-02T03:04:05Z"}`), 400, "doc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := g.count()
			resp, msg := g.post(c.client(), c.body)
			if resp.StatusCode != c.code || !strings.Contains(msg, c.says) {
				t.Fatalf("%s: %s", resp.Status, msg)
			}
			if n := g.count(); n != before {
				t.Fatalf("%d results stored, want %d", n, before)
			}
		})
	}
}

// TestForeignCA: a certificate of another CA, with an enrolled probe's
// name, ends the handshake: no request reaches a handler.
func TestForeignCA(t *testing.T) {
	g := newRig(t, Config{})
	g.enrol("victim")
	dir := t.TempDir()
	if err := InitCA(dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	other, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	is, err := other.Issue("victim", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cred := t.TempDir()
	WriteCredential(cred, is, g.serverCA)
	_, err = g.client(cred).Post(g.ts.URL+"/v1/results", "application/json", bytes.NewReader(upload(t, testDoc(t), "")))
	if err == nil {
		t.Fatal("a certificate of another CA was taken")
	}
	if g.count() != 0 {
		t.Fatal("a result was stored")
	}
}

// TestRateLimit: past its burst a probe gets 429 with Retry-After, and
// another probe is not held up by it.
func TestRateLimit(t *testing.T) {
	now := time.Unix(1e9, 0)
	g := newRig(t, Config{Rate: 0.1, Burst: 2, Now: func() time.Time { return now }})
	a, b := g.client(g.enrol("a")), g.client(g.enrol("b"))
	doc := testDoc(t)
	for i := range 2 {
		if resp, msg := g.post(a, upload(t, doc, "")); resp.StatusCode != 200 {
			t.Fatalf("upload %d: %s %s", i, resp.Status, msg)
		}
	}
	resp, msg := g.post(a, upload(t, doc, ""))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("over the rate: %s %q %s", resp.Status, resp.Header.Get("Retry-After"), msg)
	}
	if g.count() != 2 {
		t.Fatalf("%d stored, want 2", g.count())
	}
	if resp, msg := g.post(b, upload(t, doc, "")); resp.StatusCode != 200 {
		t.Fatalf("another probe: %s %s", resp.Status, msg)
	}
	now = now.Add(10 * time.Second)
	if resp, msg := g.post(a, upload(t, doc, "")); resp.StatusCode != 200 {
		t.Fatalf("after Retry-After: %s %s", resp.Status, msg)
	}
}

// TestRemoteThroughSpool: an agent's spool uploads through Remote; while
// the collector refuses (the probe revoked) results wait, and a result
// the collector refuses for good does not hold up the ones after it.
func TestRemoteThroughSpool(t *testing.T) {
	g := newRig(t, Config{})
	cred := g.enrol("p")
	tc, err := LoadCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	link, err := NewLink(g.ts.URL, tc)
	if err != nil {
		t.Fatal(err)
	}
	rem := NewRemote(link, nil)
	sp, err := store.OpenSpoolTo(context.Background(), rem, filepath.Join(t.TempDir(), "spool.db"),
		store.SpoolOptions{LocalReads: true, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	ctx := context.Background()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bad := &store.Result{ID: "00000000-0000-4000-8000-00000000aaaa", Origin: store.OriginClient, Start: start, Status: store.StatusOK, Doc: []byte(`{"nope":1}`)}
	r, err := store.Summarize(testDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	r.ID, r.Origin, r.Agent, r.Start = "00000000-0000-4000-8000-00000000bbbb", store.OriginClient, "p", start
	for _, x := range []*store.Result{bad, &r} {
		if err := sp.Put(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := sp.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if g.count() != 1 || rem.Refused() != 1 {
		t.Fatalf("stored %d (want 1), refused %d (want 1)", g.count(), rem.Refused())
	}
	if rs, err := sp.List(ctx, store.Filter{}); err != nil || len(rs) != 2 {
		t.Fatalf("local reads: %d %v", len(rs), err)
	}
	if _, err := g.st.Get(ctx, bad.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused result is in the collector's store: %v", err)
	}
}

// TestPagePlainHTTPLoopbackOnly: the page and /metrics are plain HTTP,
// so Serve refuses to put them on an address that is not loopback.
func TestPagePlainHTTPLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":8081", "192.0.2.1:80"} {
		err := Serve(context.Background(), ServeConfig{HTTP: addr})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--http %s: %v, want a refusal naming loopback", addr, err)
		}
	}
}

// TestLinkSharesConnection: a probe's uploads and its configuration
// fetches go over one TLS connection to its collector.
func TestLinkSharesConnection(t *testing.T) {
	g := newRig(t, Config{})
	tc, err := LoadCredential(g.enrol("p"))
	if err != nil {
		t.Fatal(err)
	}
	link, err := NewLink(g.ts.URL+"/", tc)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	r, err := store.Summarize(testDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	r.ID, r.Origin, r.Agent, r.Start = "00000000-0000-4000-8000-00000000cccc", store.OriginClient, "p", time.Now().UTC()
	f := NewConfigFetcher(link, filepath.Join(t.TempDir(), "config.toml"))
	f.Parse = func(string, []byte) error { return nil }
	ctx := context.Background()
	for i := range 3 {
		if err := NewRemote(link, nil).Put(ctx, &r); err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		_, _ = f.Fetch(ctx) // none set yet: an answer, not a success
	}
	if n := g.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 uploads and 3 fetches, want 1", n)
	}
	for _, base := range []string{"http://127.0.0.1/", "https://", "ftp://x/", "::"} {
		if _, err := NewLink(base, tc); err == nil || !strings.Contains(err.Error(), "want https://HOST[:PORT]/") {
			t.Errorf("NewLink(%q): %v", base, err)
		}
	}
}
