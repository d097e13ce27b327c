//go:build !small

// Package collector is `udpstp collector`: an HTTPS service that takes
// results from probes across the internet and writes them to the result
// store, so that no probe holds the database's password (docs/fleet.md,
// "Probes across the internet: the collector"). Each probe proves who it
// is with a client certificate from the collector's own small CA (ca.go);
// the certificate's serial is looked up in the store on every request, so
// a revocation holds at every collector of that store on the next one.
// The collector stores each result under the name its verified
// certificate carries, never a name from the document.
//
// The probe's side is Remote (remote.go): the store a spool uploads to.
package collector
