//go:build !portable

package engine

// sharedPoolExecutors: the pool serves many Test Connections on one Engine
// Thread on Linux only.
var sharedPoolExecutors = []executor{poolExecutor{shared: true}}
