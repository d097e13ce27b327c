// Package udpstp carries what the repository itself says about the release:
// the version of the latest release, read from CHANGELOG.md, so that a
// build from a fresh clone (which has no git tag) or from a copy of the tree
// without .git still knows it. internal/buildinfo reads it; the shell side
// (contrib/release/version) reads the same heading.
package udpstp

import (
	_ "embed"
	"fmt"
	"regexp"
)

//go:embed CHANGELOG.md
var changelog string

// releaseHeading is a released version's heading in CHANGELOG.md,
// "## v0.1.0 (2026-12-01): ...": "## Unreleased" does not match.
var releaseHeading = regexp.MustCompile(`(?m)^## (v[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)(?:[ \t]|$)`)

// Release is the latest released version in CHANGELOG.md, e.g. "v0.1.0".
// The tests hold CHANGELOG.md to having one, so an error here means a
// broken tree.
func Release() (string, error) { return ReleaseOf(changelog) }

// ReleaseOf is the first released version heading of a changelog's text
// (the newest: the file lists releases newest first).
func ReleaseOf(text string) (string, error) {
	m := releaseHeading.FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("changelog: no release heading (\"## vX.Y.Z ...\")")
	}
	return m[1], nil
}
