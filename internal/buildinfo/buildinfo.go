// Package buildinfo is what a udpstp binary knows about its own build: its
// version, the commit it was built from and the Go toolchain, so that the
// version command, the text banner and the JSON result all name the same
// build.
//
// The version comes, in order of precedence, from the linker (the
// Makefile's -ldflags "-X main.version=...", handed over by SetLinked),
// from a release version Go records in the binary (a `go install
// github.com/udpstp/udpstp/cmd/udpstp@v1.2.3` binary knows it is v1.2.3,
// and `go build` in a tagged checkout stamps the tag), else from the
// repository's own files: the latest release in CHANGELOG.md, with the
// commit as build metadata where Go recorded one ("v0.1.0+0123456789ab",
// ".dirty" for a modified work tree). A fresh clone has no tag, and a copy
// of the tree no .git, yet both know which release they are.
package buildinfo

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/udpstp/udpstp"
)

// Devel is the version of a build that carries none.
const Devel = "devel"

// Info describes one build.
type Info struct {
	Version   string // e.g. "v1.2.3", "v0.1.1-0.20260101120000-abcdef012345+dirty", Devel
	Commit    string // VCS revision, "" when not recorded (-buildvcs=false, no checkout)
	Time      string // commit time (RFC 3339) when recorded
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string // toolchain, e.g. "go1.26.8"
	Platform  string // GOOS/GOARCH
}

var (
	mu     sync.Mutex
	linked Linked
	cached *Info
)

// Linked is what the linker set in the main package (-ldflags -X); empty
// fields are not set.
type Linked struct {
	Version string
	Commit  string
}

// SetLinked records the linker's values. Call it before the first Get
// (from an init function of the main package).
func SetLinked(l Linked) {
	mu.Lock()
	defer mu.Unlock()
	linked, cached = l, nil
}

// Get returns this binary's build information.
func Get() Info {
	mu.Lock()
	defer mu.Unlock()
	if cached == nil {
		bi, _ := debug.ReadBuildInfo()
		release, _ := udpstp.Release() // its test holds CHANGELOG.md to having one
		i := FromBuildInfo(bi, linked, release)
		cached = &i
	}
	return *cached
}

// FromBuildInfo derives Info from what debug.ReadBuildInfo returned (bi may
// be nil: a binary built without module support), the linker's values,
// which win (a Makefile build names its commit even where Go could not
// stamp the VCS information: -buildvcs=false, a copied tree), and the
// repository's release (CHANGELOG.md's latest), which stands in for a
// version Go could only make up (a pseudo-version or "(devel)").
func FromBuildInfo(bi *debug.BuildInfo, l Linked, release string) Info {
	i := Info{Version: Devel, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		// "(devel)" is what Go records for a build from a work tree it
		// could not stamp, a pseudo-version what it records for a commit
		// after no tag it can see: neither names the release.
		if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Time = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Version == Devel && release != "" {
		i.Version = Snapshot(release, i.Commit, i.Modified)
	}
	if l.Version != "" {
		i.Version = l.Version
	}
	if l.Commit != "" && l.Commit != i.Commit {
		// The recorded time and state belong to another commit.
		i.Commit, i.Time, i.Modified = l.Commit, "", false
	}
	return i
}

// pseudoVersion matches the end of a Go pseudo-version
// (v0.0.0-20261130031105-0123456789ab, v1.2.4-0.20261130031105-0123456789ab,
// each maybe +dirty): a timestamp and 12 hex digits of the commit.
var pseudoVersion = regexp.MustCompile(`[-.][0-9]{14}-[0-9a-f]{12}(\+dirty)?$`)

// Snapshot is the version of a build of commit (maybe modified) of a tree
// whose latest release is release: the release, with the commit's first 12
// hex digits as semantic-versioning build metadata ("v0.1.0+0123456789ab",
// "v0.1.0+0123456789ab.dirty"), or the bare release where no commit is
// known (a copy of the tree without .git). contrib/release/version writes
// the same form for the Makefile.
func Snapshot(release, commit string, modified bool) string {
	if commit == "" {
		return release
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	v := release + "+" + commit
	if modified {
		v += ".dirty"
	}
	return v
}

// ShortCommit is the first 12 hex digits of the commit, "" if unknown.
func (i Info) ShortCommit() string {
	if len(i.Commit) > 12 {
		return i.Commit[:12]
	}
	return i.Commit
}

// SoftwareVersion is what udpstp writes where OB-UDPST writes its
// SOFTWARE_VER ("9.0.0"): the JSON's IPLayerCapSupported.SoftwareVersion,
// the server statistics' software_version and the banner's "Software Ver:".
// It keeps OB-UDPST's version, whose formats udpstp produces, and adds
// udpstp's own as semantic-versioning build metadata:
// "9.0.0+udpstp.v1.2.3". A parser that reads the leading number still
// reads 9.0.0, and semver precedence ignores build metadata, so version
// checks written for OB-UDPST 9.0.0 still pass, while the string says
// honestly which software produced the result.
func SoftwareVersion(compatible, version string) string {
	return compatible + "+udpstp." + metadata(version)
}

// metadata turns a version into a dot-separated sequence of build
// metadata identifiers ([0-9A-Za-z-]+ each): other characters become '-',
// empty identifiers are dropped.
func metadata(v string) string {
	mapped := strings.Map(func(r rune) rune {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			return r
		}
		return '-'
	}, v)
	var ids []string
	for _, id := range strings.Split(mapped, ".") {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return Devel
	}
	return strings.Join(ids, ".")
}
