package server

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
)

// TestDrainTimeoutInUnitAndManifest holds the systemd unit's
// TimeoutStopSec= and the Kubernetes manifest's
// terminationGracePeriodSeconds to the default --drain-timeout, and the
// manifest's readiness probe to /readyz: a stop manager that gives up
// earlier cuts the tests the drain lets finish.
func TestDrainTimeoutInUnitAndManifest(t *testing.T) {
	want := DefaultDrainTimeout(control.DefaultServerConfig().MaxTestTime)

	unit := readRepoFile(t, "../contrib/systemd/udpstp.service")
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)s?\s*$`).FindAllStringSubmatch(unit, -1)
	if len(m) != 1 {
		t.Fatalf("udpstp.service: want one TimeoutStopSec=<seconds>, found %d", len(m))
	}
	if got := seconds(t, m[0][1]); got != want {
		t.Errorf("udpstp.service: TimeoutStopSec=%v, the default drain timeout is %v", got, want)
	}

	k8s := readRepoFile(t, "../contrib/kubernetes/daemonset.yaml")
	m = regexp.MustCompile(`(?m)^\s*terminationGracePeriodSeconds:\s*(\d+)\s*$`).FindAllStringSubmatch(k8s, -1)
	if len(m) != 1 {
		t.Fatalf("daemonset.yaml: want one terminationGracePeriodSeconds, found %d", len(m))
	}
	if got := seconds(t, m[0][1]); got != want {
		t.Errorf("daemonset.yaml: terminationGracePeriodSeconds %v, the default drain timeout is %v", got, want)
	}
	probe := regexp.MustCompile(`(?s)readinessProbe:\s*\n\s*httpGet:.*?\n\s*path:\s*(\S+)\s*\n\s*port:\s*(\S+)`).FindStringSubmatch(k8s)
	if probe == nil || probe[1] != readyPath || probe[2] != "metrics" {
		t.Errorf("daemonset.yaml: readinessProbe %q, want an httpGet of %s on port metrics", probe, readyPath)
	}
}

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func seconds(t *testing.T, s string) time.Duration {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n) * time.Second
}
