-- The fleet summary's rollups (docs/store.md, "The fleet summary's
-- rollups"): the results counted per UTC day (day: its first
-- microsecond), per server, status and capacity bucket, and per probe,
-- kept exact by triggers on every insert and delete of results.
-- A retried write of a result (ON CONFLICT DO NOTHING) inserts no row
-- and counts nothing. Same version, tables and columns as the PostgreSQL
-- one, whose comments say more.
--
-- bucket is the index in store.CapacityEdges of the highest edge at or
-- below max_mbps, -1 for none: the CASE below must list the same edges
-- (TestSQLite/FleetRollup compares with the raw results at every edge);
-- changing them needs a migration that rebuilds these tables. SQLite
-- has no functions of its own: the day and the bucket are written out in
-- each trigger.

-- +goose Up
CREATE TABLE fleet_servers_by_day (
	day    INTEGER NOT NULL,
	origin TEXT    NOT NULL,
	server TEXT    NOT NULL,
	status TEXT    NOT NULL,
	bucket INTEGER NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (day, origin, server, status, bucket)
) STRICT, WITHOUT ROWID;
CREATE TABLE fleet_agents_by_day (
	day    INTEGER NOT NULL,
	origin TEXT    NOT NULL,
	agent  TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	missed INTEGER NOT NULL,
	PRIMARY KEY (day, origin, agent)
) STRICT, WITHOUT ROWID;

-- fleet_rollup_rows is each row's key in the rollups, for the triggers;
-- a day is floored (a start before 1970 is negative, and SQLite's %
-- keeps the sign).
CREATE VIEW fleet_rollup_rows AS SELECT id,
	start - ((start % 86400000000) + 86400000000) % 86400000000 AS day, origin, server, agent, status,
	CASE WHEN max_mbps >= 10000 THEN 11 WHEN max_mbps >= 5000 THEN 10 WHEN max_mbps >= 2500 THEN 9
		WHEN max_mbps >= 1000 THEN 8 WHEN max_mbps >= 500 THEN 7 WHEN max_mbps >= 250 THEN 6
		WHEN max_mbps >= 100 THEN 5 WHEN max_mbps >= 50 THEN 4 WHEN max_mbps >= 25 THEN 3
		WHEN max_mbps >= 10 THEN 2 WHEN max_mbps >= 1 THEN 1 WHEN max_mbps >= 0 THEN 0 ELSE -1 END AS bucket
	FROM results;
-- A row is counted after its insert and taken away before its delete
-- (while fleet_rollup_rows still has it).
-- +goose StatementBegin
CREATE TRIGGER fleet_rollup_insert AFTER INSERT ON results BEGIN
	INSERT INTO fleet_servers_by_day (day, origin, server, status, bucket, n)
	SELECT day, origin, server, status, bucket, 1 FROM fleet_rollup_rows WHERE id = NEW.id
	ON CONFLICT (day, origin, server, status, bucket) DO UPDATE SET n = n + 1;
	INSERT INTO fleet_agents_by_day (day, origin, agent, n, missed)
	SELECT day, origin, agent, 1, status = 'missed' FROM fleet_rollup_rows WHERE id = NEW.id
	ON CONFLICT (day, origin, agent) DO UPDATE SET n = n + 1, missed = missed + excluded.missed;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER fleet_rollup_delete BEFORE DELETE ON results BEGIN
	UPDATE fleet_servers_by_day SET n = n - 1 WHERE (day, origin, server, status, bucket) =
		(SELECT day, origin, server, status, bucket FROM fleet_rollup_rows WHERE id = OLD.id);
	UPDATE fleet_agents_by_day SET n = n - 1, missed = missed - (OLD.status = 'missed') WHERE (day, origin, agent) =
		(SELECT day, origin, agent FROM fleet_rollup_rows WHERE id = OLD.id);
	DELETE FROM fleet_servers_by_day WHERE n = 0 AND day = (SELECT day FROM fleet_rollup_rows WHERE id = OLD.id);
	DELETE FROM fleet_agents_by_day WHERE n = 0 AND day = (SELECT day FROM fleet_rollup_rows WHERE id = OLD.id);
END;
-- +goose StatementEnd
-- A result is written once (Put keeps the first of one ID): an update
-- of what the rollups count is refused rather than counted.
-- +goose StatementBegin
CREATE TRIGGER fleet_rollup_update BEFORE UPDATE OF start, origin, server, agent, status, max_mbps ON results BEGIN
	SELECT RAISE(ABORT, 'a result''s start, origin, server, agent, status and max_mbps are not updated (the fleet rollups count them): delete it and write it again');
END;
-- +goose StatementEnd

-- The results there are now, counted once.
INSERT INTO fleet_servers_by_day (day, origin, server, status, bucket, n)
SELECT day, origin, server, status, bucket, COUNT(*) FROM fleet_rollup_rows GROUP BY 1, 2, 3, 4, 5;
INSERT INTO fleet_agents_by_day (day, origin, agent, n, missed)
SELECT day, origin, agent, COUNT(*), SUM(status = 'missed') FROM fleet_rollup_rows GROUP BY 1, 2, 3;

-- +goose Down
DROP TRIGGER fleet_rollup_update;
DROP TRIGGER fleet_rollup_delete;
DROP TRIGGER fleet_rollup_insert;
DROP VIEW fleet_rollup_rows;
DROP TABLE fleet_agents_by_day;
DROP TABLE fleet_servers_by_day;
