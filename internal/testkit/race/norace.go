//go:build !race

// Package race says whether the race detector is built in. Its
// instrumentation allocates and slows everything down several times, so an
// allocation count measured under it is the detector's, not the code's:
// allocation assertions check !race.Enabled (they run in the plain `go
// test` of `make test`, which also runs the race detector separately).
package race

// Enabled is true when the binary was built with -race.
const Enabled = false
