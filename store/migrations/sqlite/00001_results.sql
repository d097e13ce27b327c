-- The results table (docs/store.md says what each column is). Times are
-- microseconds since the Unix epoch, UTC; doc is the gzip-compressed
-- OB-UDPST JSON document. Same version and columns as the PostgreSQL one.

-- +goose Up
CREATE TABLE results (
	id           TEXT    NOT NULL PRIMARY KEY,
	origin       TEXT    NOT NULL,
	test         TEXT    NOT NULL DEFAULT '',
	agent        TEXT    NOT NULL DEFAULT '',
	server       TEXT    NOT NULL DEFAULT '',
	client       TEXT    NOT NULL DEFAULT '',
	start        INTEGER NOT NULL,
	"end"        INTEGER NOT NULL,
	direction    TEXT    NOT NULL DEFAULT '',
	status       TEXT    NOT NULL,
	error_status INTEGER NOT NULL DEFAULT 0,
	warning      TEXT    NOT NULL DEFAULT '',
	max_mbps     REAL,
	summary_mbps REAL,
	loss_ratio   REAL,
	rtt_min_ms   REAL,
	rtt_range_ms REAL,
	delay_var_ms REAL,
	loaded_ms    REAL,
	rpm          REAL,
	grade        TEXT    NOT NULL DEFAULT '',
	doc          BLOB
) STRICT;
CREATE INDEX results_start ON results (start);
CREATE INDEX results_test_start ON results (test, start);
CREATE INDEX results_server_start ON results (server, start);
CREATE INDEX results_agent_start ON results (agent, start);

-- +goose Down
DROP TABLE results;
