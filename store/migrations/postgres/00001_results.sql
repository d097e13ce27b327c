-- The results table (docs/store.md says what each column is). doc is the
-- gzip-compressed OB-UDPST JSON document. Same version and columns as the
-- SQLite one.

-- +goose Up
CREATE TABLE results (
	id           TEXT             NOT NULL PRIMARY KEY,
	origin       TEXT             NOT NULL,
	test         TEXT             NOT NULL DEFAULT '',
	agent        TEXT             NOT NULL DEFAULT '',
	server       TEXT             NOT NULL DEFAULT '',
	client       TEXT             NOT NULL DEFAULT '',
	start        TIMESTAMPTZ      NOT NULL,
	"end"        TIMESTAMPTZ      NOT NULL,
	direction    TEXT             NOT NULL DEFAULT '',
	status       TEXT             NOT NULL,
	error_status INTEGER          NOT NULL DEFAULT 0,
	warning      TEXT             NOT NULL DEFAULT '',
	max_mbps     DOUBLE PRECISION,
	summary_mbps DOUBLE PRECISION,
	loss_ratio   DOUBLE PRECISION,
	rtt_min_ms   DOUBLE PRECISION,
	rtt_range_ms DOUBLE PRECISION,
	delay_var_ms DOUBLE PRECISION,
	loaded_ms    DOUBLE PRECISION,
	rpm          DOUBLE PRECISION,
	grade        TEXT             NOT NULL DEFAULT '',
	doc          BYTEA
);
CREATE INDEX results_start ON results (start);
CREATE INDEX results_test_start ON results (test, start);
CREATE INDEX results_server_start ON results (server, start);
CREATE INDEX results_agent_start ON results (agent, start);

-- +goose Down
DROP TABLE results;
