package validate

import (
	"os/exec"
	"strings"
	"testing"
)

// debversion runs contrib/release/debversion, which turns git describe's
// output into the Debian package's version.
func debversion(t *testing.T, v string) string {
	t.Helper()
	out, err := exec.Command("sh", "../release/debversion", v).CombinedOutput()
	if err != nil {
		t.Fatalf("debversion %q: %v: %s", v, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestDebversion(t *testing.T) {
	cases := []struct{ in, want string }{
		{"v0.1.0", "0.1.0"},
		{"v0.1.0+dirty", "0.1.0+dirty"},
		{"v1.2.0", "1.2.0"},
		{"v1.2.0-rc1", "1.2.0~rc1"},
		{"v1.2.0-3-gabc1234", "1.2.0+git3.abc1234"},
		{"v1.2.0-3-gabc1234-dirty", "1.2.0+git3.abc1234+dirty"},
		{"1.2.0", "1.2.0"},
		{"dev", "0~dev"},
	}
	for _, c := range cases {
		if got := debversion(t, c.in); got != c.want {
			t.Errorf("debversion %q = %q, want %q", c.in, got, c.want)
		}
	}
	// contrib/release/version's snapshot of a commit: the release, then
	// HEAD's commit date and the hash.
	for in, suffix := range map[string]string{"v0.1.0+0123456789ab": ".0123456789ab", "v0.1.0+0123456789ab.dirty": ".0123456789ab+dirty"} {
		got := debversion(t, in)
		if !strings.HasPrefix(got, "0.1.0+git") || !strings.HasSuffix(got, suffix) {
			t.Errorf("debversion %q = %q, want 0.1.0+gitYYYYMMDD%s", in, got, suffix)
		}
	}
	// No tag yet: an abbreviated hash, which may start with a digit, gets
	// HEAD's commit date: 0~gitYYYYMMDD.HASH.
	for _, h := range []string{"e7cb859", "256a170"} {
		got := debversion(t, h)
		if !strings.HasPrefix(got, "0~git") || !strings.HasSuffix(got, "."+h) {
			t.Errorf("debversion %q = %q, want 0~gitYYYYMMDD.%s", h, got, h)
		}
	}
}

// TestDebversionOrder checks with dpkg itself that versions sort as
// releases do: a snapshot before any tag < a pre-release < the release <
// commits after it < the next release.
func TestDebversionOrder(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("dpkg not installed: cannot compare Debian versions")
	}
	order := []string{"256a170", "v1.2.0-rc1", "v1.2.0-rc1-2-gabc1234", "v1.2.0", "v1.2.0+dirty", "v1.2.0+0123456789ab", "v1.2.0+0123456789ab.dirty", "v1.2.1"}
	for i := 1; i < len(order); i++ {
		a, b := debversion(t, order[i-1]), debversion(t, order[i])
		if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg says %s (%s) is not before %s (%s)", a, order[i-1], b, order[i])
		}
	}
}
