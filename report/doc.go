// Package report turns a client's per-connection Sub-Interval results into
// OB-UDPST 9.0.0's outputs: the live text lines, the final Summary, Minimum
// and Maximum lines, the JSON document (json, jsonb, jsonf) and the
// ErrorStatus that is also the exit status, as OB-UDPST 9.0.0's client
// produces them.
//
// The outputs are byte-compatible with OB-UDPST's so that existing parsers
// of its text and JSON keep working; our own additions never change an
// OB-UDPST line or key (see Collector.Add). The JSON document has exactly
// OB-UDPST's keys unless Options.Extensions asks for udpstp's own figures,
// which then follow them under the top-level "udpstp" key (json.go).
//
// # What OB-UDPST 9.0.0 does, which report keeps
//
//   - text.go, json.go: the text lines in its exact formats, and the JSON
//     document with the same keys in the same order, types, units and
//     number precisions. The rates count 28 bytes of overhead per datagram at L3,
//     42 at L2, 46 at L1 and 50 at L1 with a VLAN tag, 20 more each for
//     IPv6; one IP packet per datagram (udpstp adds the fragments of a
//     datagram larger than the path MTU to L2 and L1: docs/accuracy.md).
//   - aggregate.go, record.go: several Test Connections (-C) are reported
//     as one aggregate Test Connection. Each connection's Sub-Interval is
//     merged into the pending aggregate, which is emitted when every active
//     connection has contributed, or when a connection starts its next
//     Sub-Interval first (the late one's goes into the next aggregate);
//     its rates are the sums of the connections' rates. The active count
//     starts at the number of Test Connections set up (Setup Requests sent)
//     and falls as they end; fewer than -C's minimum ends the run with
//     ErrorStatus 200.
//   - serverstats.go: the server performance statistics file of `udpst -G
//     file`: a header, one data record per 10 s, the counters since start.
//
// Typical use by the client:
//
//	col := report.New(os.Stdout, report.Options{Format: f, Connections: n, MinConnections: min})
//	col.Banner("udpstp", version)
//	// a setup or activation error of a connection:
//	col.Error(code, msg+" "+serverAddr)
//	col.ConnEnded(false)
//	// the first Test Activation accepted:
//	if col.Activate(info) {
//		col.WriteHeader(conn)
//	}
//	// from every connection's Data Phase events:
//	col.Add(conn, ev.SubInt)                           // EvSubInterval
//	col.Warning(int(ev.Code), ev.Text+" [Server ...]") // EvWarning
//	col.ConnEnded(ev.End == dataphase.EndStopped)      // EvEnd
//	// every 10 ms or after each ConnEnded:
//	if col.CheckMinConnections() {
//		// stop every connection
//	}
//	// when every connection has ended:
//	col.Finish()
//	if cfg.OutputFile != "" {
//		atomicfile.Write(cfg.OutputFile, col.Document(report.FormatJSONFormatted), 0o644)
//	}
//	os.Exit(col.ErrorStatus())
package report
