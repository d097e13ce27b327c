package pgtest

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestPostgresStopStart: Stop closes the cluster's port and Start opens
// it again, on the same port, with the data kept (createdb's database is
// still there: NewDatabase's next name does not collide).
func TestPostgresStopStart(t *testing.T) {
	c := Start(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port()))
	dial := func() error {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err
	}
	if err := dial(); err != nil {
		t.Fatalf("a started cluster: %v", err)
	}
	c.NewDatabase(t)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err == nil {
		t.Fatal("a stopped cluster accepts connections")
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop twice: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err != nil {
		t.Fatalf("a restarted cluster: %v", err)
	}
	// The database made before is there: createdb of the same name fails.
	err := c.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres", "db1")
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("the database made before the restart is gone: createdb: %v", err)
	}
}
