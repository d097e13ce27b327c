-- Cross-traffic (docs/agent.md, "Cross-traffic"): the other traffic the
-- probe's interface carried around a test, in Mbit/s (NULL: not
-- measured, as for every row written before this version), and whether
-- it was above the agent's threshold then (1). Added columns only: a
-- store of version 1 reads as before, its rows unmeasured.

-- +goose Up
ALTER TABLE results ADD COLUMN cross_mbps REAL;
ALTER TABLE results ADD COLUMN cross_busy INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE results DROP COLUMN cross_busy;
ALTER TABLE results DROP COLUMN cross_mbps;
