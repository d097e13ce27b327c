// Package report turns a client's per-connection Sub-Interval results into
// OB-UDPST 9.0.0's outputs: the live text lines, the final Summary, Minimum
// and Maximum lines, the JSON document (json, jsonb, jsonf) and the
// ErrorStatus that is also the exit status (measurement.md sections 5 and 6).
//
// The outputs are byte-compatible with OB-UDPST's so that existing parsers
// of its text and JSON keep working; our own additions never change an
// OB-UDPST line or key (see Collector.Add and the "udpstp" JSON key).
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
