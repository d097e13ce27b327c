// Package metrics exports udpstp's metrics to Prometheus over HTTP: the
// server's endpoint (udpstp server --metrics-listen) and, through its
// Collector, the agent's /metrics and /probe (package agent). A client's
// node_exporter textfile (report/textfile) does without the Prometheus
// client library; it shares the families' declarations (metrics/family)
// and nothing of this package.
//
// Every endpoint is a custom prometheus.Collector over Sources: each
// Source reads what it reports at scrape time and makes its samples from
// families declared once (metrics/family), as constant metrics. The
// server's come from the same tables and snapshots that -G and the
// systemd STATUS= line read (control.ServerSnapshot.Each, engine's socket
// counter table, engine.PoolStats), so a counter is declared once, where
// it is counted, and nothing is added to the data path for the endpoint.
// A counter added to one of those tables appears here by itself.
// TestFamiliesOnce lists every family the binary can expose and fails on
// a name declared twice with other help, type or labels.
//
// Names follow Prometheus's conventions: the "udpstp_" prefix, the
// table's snake_case name, base units in the name (_bytes, _seconds,
// _bytes_per_second), and _total for counters.
package metrics
