package store

import "testing"

// TestRedact: a password in the user information or a password=
// parameter is hidden; a path is left as written.
func TestRedact(t *testing.T) {
	for spec, want := range map[string]string{
		"sqlite:/a b/x.db?_pragma=busy_timeout(5000)":     "sqlite:/a b/x.db?_pragma=busy_timeout(5000)",
		"postgres://u:secret@h:5432/db?sslmode=disable":   "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://h/db?password=secret&sslmode=disable": "postgres://h/db?password=xxxxx&sslmode=disable",
		"postgresql://u:p%40ss@h/db":                      "postgresql://u:xxxxx@h/db",
		"postgres://u:se@cret@h/db":                       "postgres://u:xxxxx@h/db",
		"https://collector.example/":                      "https://collector.example/",
	} {
		if got := Redact(spec); got != want {
			t.Errorf("Redact(%q) = %q, want %q", spec, got, want)
		}
	}
}
