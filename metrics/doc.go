// Package metrics exports a server's counters to Prometheus; it is the
// server's alone (a client's node_exporter textfile is report/textfile,
// which does without the Prometheus library).
//
// The server's endpoint (udpstp server --metrics-listen) is a custom
// prometheus.Collector over Sources: each Source reads what it reports at
// scrape time, from the same tables and snapshots that -G and the systemd
// STATUS= line read (control.ServerSnapshot.Each, engine's socket counter
// table, engine.PoolStats), so a counter is declared once, where it is
// counted, and nothing is added to the data path for the endpoint. A
// counter added to one of those tables appears here by itself.
//
// Names follow Prometheus's conventions: the "udpstp_" prefix, the
// table's snake_case name, base units in the name (_bytes, _seconds,
// _bytes_per_second), and _total for counters.
package metrics
