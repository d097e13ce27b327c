//go:build small

package store

// postgresEngine is nil: the small build has no PostgreSQL (postgres.go),
// and Open says so.
func postgresEngine() engine { return nil }

// Refused is false: no PostgreSQL server to refuse (postgres.go).
func Refused(error) bool { return false }
