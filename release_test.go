package udpstp

import "testing"

func TestReleaseOf(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"# Changes\n\n## Unreleased\n\n- x\n\n## v0.1.0 (2026-12-01): the first release\n\n## v0.0.9\n", "v0.1.0"},
		{"## v1.2.0-rc1 (2027-01-01)\n", "v1.2.0-rc1"},
		{"## v2.0.0\n## v1.0.0\n", "v2.0.0"},
		{"# Changes\n\n## Unreleased\n", ""},
		{"## v1.2 (no patch)\n### v1.0.0 (a sub-heading)\n", ""},
	} {
		got, err := ReleaseOf(tt.text)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("ReleaseOf(%q) = %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
}

// The repository's own CHANGELOG.md names a release: a build from a clone
// without tags takes its version from there.
func TestReleaseOfThisTree(t *testing.T) {
	v, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if v != "v0.1.0" && v < "v0.1.0" {
		t.Errorf("Release() = %q", v)
	}
}
