package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/udpstp/udpstp"
)

func stamped(version string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/udpstp/udpstp", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := []string{"vcs.revision", rev, "vcs.time", "2026-11-30T03:11:05Z", "vcs.modified", "true"}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		l    Linked
		rel  string // CHANGELOG.md's latest release
		want Info
	}{
		{"go install @version", stamped("v1.2.3"), Linked{}, "v1.2.3",
			Info{Version: "v1.2.3", GoVersion: "go1.99.1"}},
		{"tagged checkout", stamped("v1.2.3", vcs[:4]...), Linked{}, "v1.2.3",
			Info{Version: "v1.2.3", Commit: rev, Time: "2026-11-30T03:11:05Z", GoVersion: "go1.99.1"}},
		{"go build in a checkout after the tag", stamped("v1.2.4-0.20261130031105-0123456789ab+dirty", vcs...), Linked{}, "v1.2.3",
			Info{Version: "v1.2.3+0123456789ab.dirty", Commit: rev, Time: "2026-11-30T03:11:05Z", Modified: true, GoVersion: "go1.99.1"}},
		{"go build in a clone without tags", stamped("v0.0.0-20261130031105-0123456789ab", vcs[:4]...), Linked{}, "v1.2.3",
			Info{Version: "v1.2.3+0123456789ab", Commit: rev, Time: "2026-11-30T03:11:05Z", GoVersion: "go1.99.1"}},
		{"go build in a copy without .git", stamped("(devel)"), Linked{}, "v1.2.3",
			Info{Version: "v1.2.3", GoVersion: "go1.99.1"}},
		{"go build in a checkout (no release known)", stamped("v1.2.4-0.20261130031105-0123456789ab+dirty", vcs...), Linked{}, "",
			Info{Version: Devel, Commit: rev, Time: "2026-11-30T03:11:05Z", Modified: true, GoVersion: "go1.99.1"}},
		{"unstamped work tree", stamped("(devel)"), Linked{}, "",
			Info{Version: Devel, GoVersion: "go1.99.1"}},
		{"linker version wins", stamped("v1.2.3", vcs...), Linked{Version: "1.3.0"}, "v1.2.3",
			Info{Version: "1.3.0", Commit: rev, Time: "2026-11-30T03:11:05Z", Modified: true, GoVersion: "go1.99.1"}},
		{"linker commit replaces a stale stamp", stamped("(devel)", vcs...), Linked{Version: "1.3.0", Commit: "fedcba"}, "v1.2.3",
			Info{Version: "1.3.0", Commit: "fedcba", GoVersion: "go1.99.1"}},
		{"no build info", nil, Linked{}, "",
			Info{Version: Devel}},
	} {
		got := FromBuildInfo(tt.bi, tt.l, tt.rel)
		if tt.want.GoVersion == "" {
			tt.want.GoVersion = got.GoVersion // runtime.Version()
		}
		tt.want.Platform = got.Platform
		if got != tt.want {
			t.Errorf("%s:\n got  %+v\n want %+v", tt.name, got, tt.want)
		}
		if got.GoVersion == "" || got.Platform == "" {
			t.Errorf("%s: Go version or platform missing: %+v", tt.name, got)
		}
	}
}

func TestShortCommit(t *testing.T) {
	if c := (Info{Commit: "0123456789abcdef"}).ShortCommit(); c != "0123456789ab" {
		t.Errorf("ShortCommit = %q", c)
	}
	if c := (Info{Commit: "abc"}).ShortCommit(); c != "abc" {
		t.Errorf("ShortCommit = %q", c)
	}
}

func TestSoftwareVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":          "9.0.0+udpstp.v1.2.3",
		"1.2.3":           "9.0.0+udpstp.1.2.3",
		"e7cb859-dirty":   "9.0.0+udpstp.e7cb859-dirty",
		"v1.2.4-0.2026+d": "9.0.0+udpstp.v1.2.4-0.2026-d",
		"a..b/c d":        "9.0.0+udpstp.a.b-c-d",
		"":                "9.0.0+udpstp.devel",
		"...":             "9.0.0+udpstp.devel",
	} {
		if got := SoftwareVersion("9.0.0", v); got != want {
			t.Errorf("SoftwareVersion(9.0.0, %q) = %q, want %q", v, got, want)
		}
	}
}

// SetLinked before Get decides what Get reports.
func TestSetLinked(t *testing.T) {
	defer SetLinked(Linked{})
	SetLinked(Linked{Version: "9.9.9", Commit: "abc"})
	if i := Get(); i.Version != "9.9.9" || i.Commit != "abc" {
		t.Errorf("Get after SetLinked = %+v", i)
	}
}

func TestSnapshot(t *testing.T) {
	for _, tt := range []struct {
		commit   string
		modified bool
		want     string
	}{
		{"", false, "v0.1.0"},
		{"0123456789abcdef0123", false, "v0.1.0+0123456789ab"},
		{"0123456789abcdef0123", true, "v0.1.0+0123456789ab.dirty"},
		{"abc1234", false, "v0.1.0+abc1234"},
	} {
		if got := Snapshot("v0.1.0", tt.commit, tt.modified); got != tt.want {
			t.Errorf("Snapshot(v0.1.0, %q, %v) = %q, want %q", tt.commit, tt.modified, got, tt.want)
		}
	}
}

// A binary's version names the repository's release even without a tag:
// this test binary was built from this tree, so its Get says CHANGELOG.md's
// release (plus the commit, where Go stamped one).
func TestGetNamesTheRelease(t *testing.T) {
	rel, err := udpstp.Release()
	if err != nil {
		t.Fatal(err)
	}
	if v := Get().Version; v != rel && !strings.HasPrefix(v, rel+"+") {
		t.Errorf("Get().Version = %q, want %s or %s+COMMIT", v, rel, rel)
	}
}
