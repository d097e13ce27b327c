// Package buildinfo is what a udpstp binary knows about its own build: its
// version, the commit it was built from and the Go toolchain, so that the
// version command, the text banner and the JSON result all name the same
// build.
//
// The version comes, in order of precedence, from the linker (the
// Makefile's -ldflags "-X main.version=...", handed over by SetLinked),
// from the module version Go records in the binary (a `go install
// github.com/udpstp/udpstp/cmd/udpstp@v1.2.3` binary knows it is v1.2.3,
// and `go build` in a tagged checkout stamps the tag), else "devel".
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
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
		i := FromBuildInfo(bi, linked)
		cached = &i
	}
	return *cached
}

// FromBuildInfo derives Info from what debug.ReadBuildInfo returned (bi may
// be nil: a binary built without module support) and the linker's values,
// which win: a Makefile build names its commit even where Go could not
// stamp the VCS information (-buildvcs=false, a copied tree).
func FromBuildInfo(bi *debug.BuildInfo, l Linked) Info {
	i := Info{Version: Devel, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		// "(devel)" is what Go records for a build from a work tree it
		// could not stamp; it says nothing the Devel default does not.
		if v := bi.Main.Version; v != "" && v != "(devel)" {
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
	if l.Version != "" {
		i.Version = l.Version
	}
	if l.Commit != "" && l.Commit != i.Commit {
		// The recorded time and state belong to another commit.
		i.Commit, i.Time, i.Modified = l.Commit, "", false
	}
	return i
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
