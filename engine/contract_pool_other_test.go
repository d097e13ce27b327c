//go:build !linux || portable

package engine

// sharedPoolExecutors: none here, where a Pool runs each Test Connection
// on its own Engine Thread (pool_other.go).
var sharedPoolExecutors []executor
