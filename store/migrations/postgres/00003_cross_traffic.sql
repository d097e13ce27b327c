-- Cross-traffic (docs/agent.md, "Cross-traffic"): the other traffic the
-- probe's interface carried around a test, in Mbit/s (NULL: not
-- measured, as for every row written before this version), and whether
-- it was above the agent's threshold then. Same version and columns as
-- the SQLite one; added columns only.

-- +goose Up
ALTER TABLE results ADD COLUMN cross_mbps DOUBLE PRECISION;
ALTER TABLE results ADD COLUMN cross_busy BOOLEAN NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE results DROP COLUMN cross_busy;
ALTER TABLE results DROP COLUMN cross_mbps;
