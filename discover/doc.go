// Package discover finds the servers a client may test against when it is
// given `srv:NAME` instead of one host (docs/fleet.md): the DNS SRV
// records of the udpst service under NAME, ordered as RFC 2782 orders
// them, or, when NAME has none, NAME's own addresses. The client tries
// the candidates one at a time (client/failover.go), the next when one
// does not answer or refuses (busy, capacity exceeded, draining).
// LookupList makes candidates of a list of servers instead (the agent's
// servers of a test), for the same search.
//
// Lookup asks a resolver (net.DefaultResolver: the system's, which reads
// /etc/resolv.conf); Order is the pure ordering of RFC 2782 with the
// random source given, so that tests can seed it.
package discover
