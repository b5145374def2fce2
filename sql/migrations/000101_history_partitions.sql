-- Time-partitioned history (issue 14): events and telemetry by ts, trips by end_time, one partition
-- per UTC day plus a DEFAULT partition, so a write for a day whose partition does not exist yet is
-- kept (the maintenance job of publisher/jobs/history.ts later moves it into its own partition).
-- Whole days can then be dropped by the retention job instead of deleting rows.
--
-- The existing tables are converted in place: renamed, their rows copied into the partitioned table
-- (daily partitions created for every day they cover), then dropped. The late-data triggers are
-- created after the copy, so the conversion marks no published file dirty.
--
-- A partitioned table's unique keys must contain the partition key: the primary keys become
-- (event_id, ts), (telemetry_id, ts) and (trip_id, end_time). trips.rental_id loses its UNIQUE
-- constraint (a plain index remains): a rental's trip is written once, by the end of the rental in
-- the transaction that moves the locked rental out of RUNNING (sql/queries/rentals.sql).

-- The history guard lets exactly one thing delete rows: history_ensure_partition moving the rows of a
-- day out of a DEFAULT partition into the day's new partition, flagged by a transaction-local
-- setting. Any other UPDATE or DELETE of events and telemetry still fails.
CREATE OR REPLACE FUNCTION forbid_history_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND TG_TABLE_NAME LIKE '%\_default' AND current_setting('history.partition_maintenance', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = '55000';
END $$;

-- The daily partition of one history table ('events', 'telemetry' or 'trips') for a UTC day, created
-- if missing; rows of that day waiting in the DEFAULT partition move into it. True when created.
-- Serialised per table by an advisory lock, so concurrent callers (maintenance job, simulator,
-- migration) create each partition once.
CREATE FUNCTION history_ensure_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := format('%s_p%s', parent, to_char(day, 'YYYYMMDD'));
  def text := parent || '_default';
  key text;
  lo timestamptz := day::timestamp AT TIME ZONE 'UTC';
  hi timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
  cols text;
BEGIN
  IF parent NOT IN ('events', 'telemetry', 'trips') THEN
    RAISE EXCEPTION 'history_ensure_partition: unknown history table %', parent USING ERRCODE = '22023';
  END IF;
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('history_partition:' || parent));
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  key := CASE parent WHEN 'trips' THEN 'end_time' ELSE 'ts' END;
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = parent::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
  -- writers of this day wait until the partition exists: a row committed into the DEFAULT partition
  -- between the move and the attach would make the attach fail
  EXECUTE format('LOCK TABLE %I IN EXCLUSIVE MODE', def);
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)', part, parent);
  PERFORM set_config('history.partition_maintenance', 'on', true);
  EXECUTE format('WITH m AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING %s) INSERT INTO %I (%s) SELECT %s FROM m',
                 def, key, lo, key, hi, cols, part, cols, cols);
  PERFORM set_config('history.partition_maintenance', 'off', true);
  -- the matching CHECK spares the attach a validation scan of the new partition
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', part, part || '_range', key, lo, key, hi);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, part, lo, hi);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
  RETURN true;
END $$;

-- Every history table's partitions for the UTC days [from_day, to_day]; the number created.
CREATE FUNCTION history_ensure_partitions(from_day date, to_day date) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  n int := 0;
  p text;
  d date;
BEGIN
  FOREACH p IN ARRAY ARRAY['events', 'telemetry', 'trips'] LOOP
    FOR d IN SELECT g::date FROM generate_series(from_day, to_day, interval '1 day') AS g LOOP
      IF history_ensure_partition(p, d) THEN n := n + 1; END IF;
    END LOOP;
  END LOOP;
  RETURN n;
END $$;

-- events ----------------------------------------------------------------------------------------
DROP INDEX events_zone_hour, events_device_ts, events_zone_ts;
ALTER TABLE events DROP CONSTRAINT events_pkey;
ALTER TABLE events RENAME TO events_unpartitioned;
CREATE TABLE events (
  LIKE events_unpartitioned INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
  PRIMARY KEY (event_id, ts),
  FOREIGN KEY (device_id) REFERENCES vehicles (id),
  FOREIGN KEY (zone_id) REFERENCES zones (id)
) PARTITION BY RANGE (ts);
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_zone_hour ON events (zone_id, hour, ts, event_id);
CREATE INDEX events_device_ts ON events (device_id, ts DESC);
CREATE INDEX events_zone_ts ON events (zone_id, ts);
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION forbid_history_rewrite();

-- telemetry -------------------------------------------------------------------------------------
DROP INDEX telemetry_device_ts, telemetry_trip;
ALTER TABLE telemetry DROP CONSTRAINT telemetry_pkey;
ALTER TABLE telemetry RENAME TO telemetry_unpartitioned;
CREATE TABLE telemetry (
  LIKE telemetry_unpartitioned INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
  PRIMARY KEY (telemetry_id, ts),
  FOREIGN KEY (device_id) REFERENCES vehicles (id),
  FOREIGN KEY (zone_id) REFERENCES zones (id)
) PARTITION BY RANGE (ts);
CREATE TABLE telemetry_default PARTITION OF telemetry DEFAULT;
CREATE INDEX telemetry_device_ts ON telemetry (device_id, ts DESC);
CREATE INDEX telemetry_trip ON telemetry (trip_id, ts) WHERE trip_id IS NOT NULL;
CREATE TRIGGER telemetry_append_only BEFORE UPDATE OR DELETE ON telemetry FOR EACH ROW EXECUTE FUNCTION forbid_history_rewrite();

-- trips -----------------------------------------------------------------------------------------
DROP INDEX trips_zone_hour;
ALTER TABLE trips DROP CONSTRAINT trips_pkey, DROP CONSTRAINT trips_rental_id_key;
ALTER TABLE trips RENAME TO trips_unpartitioned;
CREATE TABLE trips (
  LIKE trips_unpartitioned INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS,
  PRIMARY KEY (trip_id, end_time),
  FOREIGN KEY (rental_id) REFERENCES rentals (id),
  FOREIGN KEY (device_id) REFERENCES vehicles (id),
  FOREIGN KEY (zone_id) REFERENCES zones (id),
  FOREIGN KEY (vehicle_type_id) REFERENCES vehicle_types (id)
) PARTITION BY RANGE (end_time);
CREATE TABLE trips_default PARTITION OF trips DEFAULT;
CREATE INDEX trips_zone_hour ON trips (zone_id, end_hour, end_time, trip_id);
CREATE INDEX trips_rental ON trips (rental_id);
CREATE INDEX trips_trip_id ON trips (trip_id);

-- copy the rows: daily partitions for every day present, then one INSERT … SELECT per table ---------
SELECT history_ensure_partition('events', d) FROM (SELECT DISTINCT (ts AT TIME ZONE 'UTC')::date AS d FROM events_unpartitioned) x;
SELECT history_ensure_partition('telemetry', d) FROM (SELECT DISTINCT (ts AT TIME ZONE 'UTC')::date AS d FROM telemetry_unpartitioned) x;
SELECT history_ensure_partition('trips', d) FROM (SELECT DISTINCT (end_time AT TIME ZONE 'UTC')::date AS d FROM trips_unpartitioned) x;
INSERT INTO events (event_id, device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids, recorded_at)
SELECT event_id, device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids, recorded_at FROM events_unpartitioned;
INSERT INTO telemetry (telemetry_id, device_id, zone_id, ts, location, battery_percent, trip_id, recorded_at)
SELECT telemetry_id, device_id, zone_id, ts, location, battery_percent, trip_id, recorded_at FROM telemetry_unpartitioned;
INSERT INTO trips (trip_id, rental_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location,
                   end_location, distance_m, duration_s, is_group_ride, ride_type, user_ride_count, recorded_at)
SELECT trip_id, rental_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location,
       end_location, distance_m, duration_s, is_group_ride, ride_type, user_ride_count, recorded_at FROM trips_unpartitioned;
DROP TABLE events_unpartitioned, telemetry_unpartitioned, trips_unpartitioned;

-- the late-data triggers of 000001 (functions from 000100), on the partitioned tables
CREATE TRIGGER trips_dirty_insert AFTER INSERT ON trips REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER trips_dirty_update_new AFTER UPDATE ON trips REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER trips_dirty_update_old AFTER UPDATE ON trips REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER events_dirty_insert AFTER INSERT ON events REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_event_hours_dirty();
