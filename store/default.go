package store

// DefaultSpec is the --store of every command that reads or writes
// results when none is given: the agent's SQLite file in its systemd
// StateDirectory (/var/lib/udpstp).
const DefaultSpec = "sqlite:/var/lib/udpstp/results.db"
