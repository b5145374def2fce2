-- MDS /vehicles/status reads the current state, not history (issue 14): one row per vehicle with its
-- last event and last telemetry, kept by statement triggers on the partitioned history tables, so
-- that every writer (rental engine, simulator COPY batches, imports) keeps it, one upsert per
-- statement whatever the batch size. The upsert's row lock orders concurrent writers of a vehicle,
-- and its WHERE keeps the newest (ts, id): commit order cannot roll a vehicle back. Retention drops
-- history partitions, never these rows.
CREATE TABLE vehicle_current_state (
  device_id                  uuid PRIMARY KEY REFERENCES vehicles (id) ON DELETE CASCADE,
  event_id                   uuid,
  event_types                text[],
  vehicle_state              text,
  event_ts                   timestamptz,
  event_location             geometry(Point, 4326),
  event_battery_percent      integer,
  event_trip_ids             uuid[],
  telemetry_id               uuid,
  telemetry_ts               timestamptz,
  telemetry_location         geometry(Point, 4326),
  telemetry_battery_percent  integer,
  telemetry_trip_id          uuid
);

CREATE FUNCTION current_state_from_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO vehicle_current_state AS c (device_id, event_id, event_types, vehicle_state, event_ts, event_location, event_battery_percent, event_trip_ids)
  SELECT DISTINCT ON (device_id) device_id, event_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids
    FROM changed_rows
   ORDER BY device_id, ts DESC, event_id DESC
  ON CONFLICT (device_id) DO UPDATE
     SET event_id = excluded.event_id, event_types = excluded.event_types, vehicle_state = excluded.vehicle_state,
         event_ts = excluded.event_ts, event_location = excluded.event_location,
         event_battery_percent = excluded.event_battery_percent, event_trip_ids = excluded.event_trip_ids
   WHERE c.event_ts IS NULL OR (excluded.event_ts, excluded.event_id) > (c.event_ts, c.event_id);
  RETURN NULL;
END $$;

CREATE FUNCTION current_state_from_telemetry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO vehicle_current_state AS c (device_id, telemetry_id, telemetry_ts, telemetry_location, telemetry_battery_percent, telemetry_trip_id)
  SELECT DISTINCT ON (device_id) device_id, telemetry_id, ts, location, battery_percent, trip_id
    FROM changed_rows
   ORDER BY device_id, ts DESC, telemetry_id DESC
  ON CONFLICT (device_id) DO UPDATE
     SET telemetry_id = excluded.telemetry_id, telemetry_ts = excluded.telemetry_ts, telemetry_location = excluded.telemetry_location,
         telemetry_battery_percent = excluded.telemetry_battery_percent, telemetry_trip_id = excluded.telemetry_trip_id
   WHERE c.telemetry_ts IS NULL OR (excluded.telemetry_ts, excluded.telemetry_id) > (c.telemetry_ts, c.telemetry_id);
  RETURN NULL;
END $$;

CREATE TRIGGER events_current_state AFTER INSERT ON events REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION current_state_from_events();
CREATE TRIGGER telemetry_current_state AFTER INSERT ON telemetry REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION current_state_from_telemetry();

-- the state of an existing database, from its history
INSERT INTO vehicle_current_state (device_id, event_id, event_types, vehicle_state, event_ts, event_location, event_battery_percent, event_trip_ids)
SELECT DISTINCT ON (device_id) device_id, event_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids
  FROM events ORDER BY device_id, ts DESC, event_id DESC;
INSERT INTO vehicle_current_state AS c (device_id, telemetry_id, telemetry_ts, telemetry_location, telemetry_battery_percent, telemetry_trip_id)
SELECT DISTINCT ON (device_id) device_id, telemetry_id, ts, location, battery_percent, trip_id
  FROM telemetry ORDER BY device_id, ts DESC, telemetry_id DESC
ON CONFLICT (device_id) DO UPDATE
   SET telemetry_id = excluded.telemetry_id, telemetry_ts = excluded.telemetry_ts, telemetry_location = excluded.telemetry_location,
       telemetry_battery_percent = excluded.telemetry_battery_percent, telemetry_trip_id = excluded.telemetry_trip_id;

-- events/recent and legacy POST /events page through a zone's window in (ts, event_id) order
-- (api/feeds/paging.ts): this index answers each page with an ordered range scan and a LIMIT, on
-- every daily partition; it also serves everything events_zone_ts served.
CREATE INDEX events_zone_ts_id ON events (zone_id, ts, event_id);
DROP INDEX events_zone_ts;
