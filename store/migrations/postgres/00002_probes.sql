-- The probes a collector (docs/fleet.md, "Probes across the internet:
-- the collector") has enrolled: one row per client certificate it issued,
-- by the certificate's serial (lower-case hex), which each request looks
-- up (the primary key's index). Shared by every collector of one store,
-- so a revocation holds at all of them on the next request.

-- +goose Up
CREATE TABLE probes (
	serial   TEXT        NOT NULL PRIMARY KEY,
	name     TEXT        NOT NULL,
	enrolled TIMESTAMPTZ NOT NULL,
	revoked  TIMESTAMPTZ
);
CREATE INDEX probes_name ON probes (name);
-- Each probe's agent configuration (TOML, docs/agent.md), set with
-- `udpstp collector config set` and fetched by the probe (GET /v1/config).
CREATE TABLE probe_configs (
	name    TEXT        NOT NULL PRIMARY KEY,
	config  TEXT        NOT NULL,
	updated TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE probe_configs;
DROP TABLE probes;
