// Package pgtest starts a throw-away PostgreSQL cluster for tests: Debian's
// PostgreSQL 15 (the postgresql package) run from a temporary directory by
// initdb and pg_ctl, never a mock. Tests that use it have Postgres in their
// names; Start fails them when CI=true and PostgreSQL is missing, and skips
// them otherwise (docs/store.md, "Tests").
//
// initdb refuses to run as root: as root, the cluster runs as the
// unprivileged user nobody, and its directory is chowned to it. It listens
// on a free TCP port on 127.0.0.1 and on a unix socket in its directory,
// trusts every local connection, and is stopped and removed when the test
// ends. Cluster.Stop and Cluster.Start take it down and up again on the same port and
// data (a test of an outage: writes fail while it is down, and the data
// written before is there after); Cluster.Freeze stops its processes with
// SIGSTOP (a database that hangs rather than refuses; Linux).
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Version is the PostgreSQL major version the tests use (Debian's).
const Version = "15"

// Cluster is a running (or stopped) throw-away cluster.
type Cluster struct {
	bin     string // PostgreSQL's binaries
	dir     string // the cluster's directory: data/, the log, the socket
	port    int
	asUser  func(*exec.Cmd) // nil: run as this process's user
	options string          // the server's settings (pg_ctl -o)

	mu      sync.Mutex
	running bool
	dbs     atomic.Int64
	thaws   []func() error // Freeze's, run before the cluster is removed
}

// Bin finds PostgreSQL's binaries: in $PG_BIN where it is set, else
// Debian's for Version.
func Bin() (string, error) {
	dir := os.Getenv("PG_BIN")
	if dir == "" {
		dir = "/usr/lib/postgresql/" + Version + "/bin"
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres", "createdb"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("no PostgreSQL %s: %w (apt-get install postgresql, or set PG_BIN)", Version, err)
		}
	}
	return dir, nil
}

// Start starts a fresh cluster for t and stops and removes it when t
// ends. settings are extra server settings, "name=value" each; by default
// fsync is off (a throw-away cluster: a crash of the machine loses it
// anyway); a benchmark that measures durable writes passes "fsync=on".
func Start(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin, err := Bin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL: %v (CI must have it)", err)
		}
		t.Skipf("PostgreSQL: %v", err)
	}
	c, err := start(bin, settings)
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := c.remove(); err != nil {
			t.Errorf("PostgreSQL: %v", err)
		}
	})
	return c
}

func start(bin string, settings []string) (_ *Cluster, err error) {
	c := &Cluster{bin: bin}
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		// initdb refuses root: the cluster is nobody's.
		if c.asUser, uid, gid, err = unprivileged(); err != nil {
			return nil, err
		}
	}
	// Not t.TempDir: its parents are root's, mode 0700, closed to nobody.
	if c.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(c.dir)
		}
	}()
	if c.asUser != nil {
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := c.run("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--no-sync",
		"-E", "UTF8", "--locale=C.UTF-8"); err != nil {
		return nil, err
	}
	all := append([]string{"fsync=off", "full_page_writes=off", "max_connections=200"}, settings...)
	// A port that was free a moment ago can be taken by another test: try
	// a few.
	for try := 0; ; try++ {
		if c.port, err = freePort(); err != nil {
			return nil, err
		}
		c.options = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", c.port, c.dir)
		for _, s := range all {
			c.options += " -c " + s
		}
		if err = c.Start(); err == nil || try == 2 {
			break
		}
	}
	return c, err
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs one of PostgreSQL's binaries as the cluster's user.
func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if c.asUser != nil {
		c.asUser(cmd)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// DSN is the URL of the cluster's database postgres, as the superuser.
func (c *Cluster) DSN() string { return c.dsn("postgres") }

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Port is the TCP port the cluster listens on (127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// NewDatabase creates an empty database in the cluster and returns its URL.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("db%d", c.dbs.Add(1))
	if err := c.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres", name); err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	return c.dsn(name)
}

// Stop shuts the cluster down (fast: sessions are ended, what was
// committed is kept) and returns when it no longer accepts connections.
// Connections to it fail until Start.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	if err := c.run("pg_ctl", "stop", "-D", c.data(), "-m", "fast", "-w", "-t", "120"); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	c.running = false
	return nil
}

// Start starts the cluster again (after Stop) on the same port and data, and
// returns when it accepts connections.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	if err := c.run("pg_ctl", "start", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "120",
		"-o", c.options); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("starting: %w\n%s", err, tail(log))
	}
	c.running = true
	return nil
}

// remove stops the cluster and deletes its directory.
func (c *Cluster) remove() error {
	c.mu.Lock()
	thaws := c.thaws
	c.mu.Unlock()
	for _, thaw := range thaws {
		thaw()
	}
	err := c.Stop()
	if err != nil {
		// Stopped or not, its files go: kill what is left.
		_ = c.run("pg_ctl", "stop", "-D", c.data(), "-m", "immediate", "-w")
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the last lines of a log, for an error.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// Outage is how long a spool test keeps PostgreSQL down:
// $UDPSTP_SPOOL_OUTAGE (a Go duration; asked for a minute, "1m"), 10 s by
// default so that make test stays short.
func Outage(t testing.TB) time.Duration {
	t.Helper()
	v := os.Getenv("UDPSTP_SPOOL_OUTAGE")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("UDPSTP_SPOOL_OUTAGE=%q: want a duration such as 1m", v)
	}
	return d
}
