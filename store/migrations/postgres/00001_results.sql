-- The results and their documents (docs/store.md says what each column
-- is). Same version, tables and columns as the SQLite one.

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
	grade        TEXT             NOT NULL DEFAULT ''
);
-- An index per filter (docs/store.md, "Schema"), each carrying the
-- columns its readers want, so that they read the index alone: a test's
-- figures for its charts, a server's and a probe's for the fleet.
CREATE INDEX results_start ON results (start);
CREATE INDEX results_test_start ON results (test, start) INCLUDE (direction, max_mbps, summary_mbps, loss_ratio, rtt_min_ms, rtt_range_ms, delay_var_ms, loaded_ms, rpm);
CREATE INDEX results_server_start ON results (server, start) INCLUDE (status, max_mbps);
CREATE INDEX results_agent_start ON results (agent, start) INCLUDE (status, max_mbps);
-- Each result's document, gzip-compressed, apart: the rows that lists,
-- series and summaries read stay small.
CREATE TABLE result_docs (
	id  TEXT NOT NULL PRIMARY KEY REFERENCES results (id) ON DELETE CASCADE,
	doc BYTEA NOT NULL
);

-- +goose Down
DROP TABLE result_docs;
DROP TABLE results;
