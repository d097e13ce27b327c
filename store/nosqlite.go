//go:build small || mips || mipsle

package store

// sqliteEngine is nil: the small build and soft-float MIPS have no SQLite
// (sqlite.go), and Open says so.
func sqliteEngine() engine { return nil }
