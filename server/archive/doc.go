// Package archive keeps the server's record of every test it served
// (docs/fleet.md, "The server's archive"): one JSON record per Test
// Connection, written when its Data Phase has ended, from what the server
// knows then (control.TestRecord): the times, the direction, the client
// (by default as a keyed pseudonym), its Setup Request and Test Activation
// (asked and granted), the Sub-Interval figures the server measured
// (upstream) or the client's Status PDUs carried (downstream), a summary,
// the ErrorStatus and the end reason.
//
// Records go to gzipped NDJSON files in a directory (files.go), to a
// result store as store.Result with Origin server (the record itself as
// its Doc), or both. Nothing here runs per datagram or on an Engine
// Thread: Archive.Add queues the record for a goroutine of its own.
//
// Crash safety: each record is one complete gzip member written with one
// write(2) to a file named *.ndjson.gz.part and synced; a write a full
// disk cut short is cut back out before the next. A finished file is
// renamed to *.ndjson.gz on rotation (by size, and by age: a minute by
// default, so a finished test shows within it). Readers read
// *.ndjson.gz only, so they never see a partial line. After a crash
// (kill -9, power loss), Open turns each *.part file into a finished file
// that holds every complete member: a stretch that is none (cut short,
// failing gzip's CRC, inflating past MaxRecordBytes) is dropped and
// logged, the records after it kept. Recovery and the key file refuse
// what is not a regular file and bound what they read (docs/security.md,
// "The server's archive").
package archive
