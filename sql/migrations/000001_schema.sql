-- The whole data model of the partner platform. Forward-only: later changes go into new files.
-- Invariants live here as constraints so that concurrency is decided by Postgres, not by callers.

CREATE EXTENSION IF NOT EXISTS postgis;

-- ---------------------------------------------------------------------------------------------
-- Zones, areas, vehicle types, pricing
-- ---------------------------------------------------------------------------------------------

CREATE TABLE zones (
  id                             text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$'),
  name                           text NOT NULL,
  city                           text NOT NULL,
  country                        char(2) NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  timezone                       text NOT NULL,
  currency                       char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  vat_rate                       numeric(5,4) NOT NULL CHECK (vat_rate >= 0 AND vat_rate < 1),
  language                       text NOT NULL DEFAULT 'en',
  parking_mode                   text NOT NULL CHECK (parking_mode IN ('free-floating', 'parking-spot')),
  licence_verification_required  boolean NOT NULL DEFAULT false,
  max_speed_kph                  integer NOT NULL DEFAULT 20 CHECK (max_speed_kph > 0),
  reduced_speed_kph              integer NOT NULL DEFAULT 15 CHECK (reduced_speed_kph > 0),
  min_required_rides             integer NOT NULL DEFAULT 3 CHECK (min_required_rides >= 0),
  speed_unit                     text NOT NULL DEFAULT 'km/h' CHECK (speed_unit IN ('km/h', 'mph')),
  min_battery_percent            integer NOT NULL DEFAULT 15 CHECK (min_battery_percent BETWEEN 0 AND 100),
  unlock_distance_m              integer NOT NULL DEFAULT 50 CHECK (unlock_distance_m > 0),
  -- local wall-clock windows in the zone's timezone, e.g. [{"start":"01:00","end":"05:00"}];
  -- a window whose end is before its start runs over midnight.
  sleep_windows                  jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(sleep_windows) = 'array'),
  status                         text NOT NULL DEFAULT 'operating' CHECK (status IN ('operating', 'closed')),
  support_email                  text NOT NULL DEFAULT 'support@example.com',
  boundary                       geometry(MultiPolygon, 4326) NOT NULL CHECK (ST_IsValid(boundary)),
  created_at                     timestamptz NOT NULL DEFAULT now(),
  updated_at                     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX zones_boundary_gist ON zones USING gist (boundary);

CREATE TABLE vehicle_types (
  id                 text PRIMARY KEY CHECK (id ~ '^[a-z0-9_-]{1,32}$'),
  form_factor        text NOT NULL CHECK (form_factor IN ('scooter', 'bicycle')),
  propulsion_type    text NOT NULL CHECK (propulsion_type IN ('electric', 'electric_assist', 'human')),
  name               text NOT NULL,
  make               text NOT NULL,
  model              text NOT NULL,
  color              text NOT NULL DEFAULT 'black',
  max_range_meters   integer NOT NULL CHECK (max_range_meters >= 0),
  max_speed_kph      integer NOT NULL CHECK (max_speed_kph > 0),
  rated_power_w      integer NOT NULL DEFAULT 250 CHECK (rated_power_w >= 0),
  wheel_count        integer NOT NULL DEFAULT 2 CHECK (wheel_count > 0),
  rider_capacity     integer NOT NULL DEFAULT 1 CHECK (rider_capacity > 0)
);

CREATE TABLE areas (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  zone_id        text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  name           text NOT NULL,
  area_type      text NOT NULL CHECK (area_type IN
                   ('operations', 'no-parking', 'parking-spot', 'slow-zone', 'no-riding', 'incentive', 'free-floating')),
  vehicle_types  text[] NOT NULL DEFAULT '{}',
  geom           geometry(MultiPolygon, 4326) NOT NULL CHECK (ST_IsValid(geom)),
  capacity       integer CHECK (capacity IS NULL OR capacity >= 0),
  max_speed_kph  integer CHECK (max_speed_kph IS NULL OR max_speed_kph > 0),
  created_at     timestamptz NOT NULL DEFAULT now(),
  CHECK ((area_type = 'parking-spot') = (capacity IS NOT NULL))
);
CREATE INDEX areas_zone ON areas (zone_id, area_type);
CREATE INDEX areas_geom_gist ON areas USING gist (geom);

-- A zone has either no-parking areas or parking-spot areas, never both; parking-spot areas only in
-- parking-spot zones. Enforced in the database so that neither an import nor a race can break it.
CREATE FUNCTION areas_parking_rule() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE mode text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('areas_parking_rule:' || NEW.zone_id));
  SELECT parking_mode INTO mode FROM zones WHERE id = NEW.zone_id;
  IF NEW.area_type = 'parking-spot' AND mode <> 'parking-spot' THEN
    RAISE EXCEPTION 'parking-spot area in free-floating zone %', NEW.zone_id USING ERRCODE = '23514';
  END IF;
  IF NEW.area_type = 'no-parking' AND mode = 'parking-spot' THEN
    RAISE EXCEPTION 'no-parking area in parking-spot zone %', NEW.zone_id USING ERRCODE = '23514';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER areas_parking_rule BEFORE INSERT OR UPDATE ON areas FOR EACH ROW EXECUTE FUNCTION areas_parking_rule();

CREATE TABLE pricing (
  zone_id            text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  vehicle_type_id    text NOT NULL REFERENCES vehicle_types (id),
  -- prices include VAT, integer minor units of the zone's currency
  start_price        integer NOT NULL CHECK (start_price >= 0),
  price_per_minute   integer NOT NULL CHECK (price_per_minute >= 0),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (zone_id, vehicle_type_id)
);

-- ---------------------------------------------------------------------------------------------
-- Vehicles
-- ---------------------------------------------------------------------------------------------

CREATE TABLE vehicles (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  code               char(4) NOT NULL UNIQUE CHECK (code ~ '^[A-Z0-9]{4}$'),
  zone_id            text NOT NULL REFERENCES zones (id),
  vehicle_type_id    text NOT NULL REFERENCES vehicle_types (id),
  -- partner-API status; the MDS vehicle_state is tracked separately in mds_state
  status             text NOT NULL DEFAULT 'ready' CHECK (status IN ('ready', 'riding', 'booked', 'unavailable')),
  mds_state          text NOT NULL DEFAULT 'removed' CHECK (mds_state IN
                       ('removed', 'available', 'non_operational', 'reserved', 'on_trip', 'non_contactable', 'missing', 'elsewhere')),
  locked             boolean NOT NULL DEFAULT true,
  battery_percent    integer NOT NULL CHECK (battery_percent BETWEEN 0 AND 100),
  location           geometry(Point, 4326) NOT NULL,
  last_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_moved_at      timestamptz NOT NULL DEFAULT now(),
  -- GBFS privacy: a random id that rotates after every trip; never the device id nor the code
  gbfs_id            uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  license_plate      text NOT NULL,
  license_plate_id   text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vehicles_zone_status ON vehicles (zone_id, status);
CREATE INDEX vehicles_location_gist ON vehicles USING gist (location);

-- ---------------------------------------------------------------------------------------------
-- Partners, credentials
-- ---------------------------------------------------------------------------------------------

CREATE TABLE partners (
  id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name                    text NOT NULL UNIQUE,
  kind                    text NOT NULL CHECK (kind IN ('rental', 'maas', 'insurer')),
  -- what the partner's rides are in the insurance feed and MDS trip_type
  trip_type               text NOT NULL DEFAULT 'rider' CHECK (trip_type IN ('rider', 'maas', 'operator')),
  -- TOMP: bookings wait for a COMMIT event instead of AUTO_COMMIT
  tomp_postponed_commit   boolean NOT NULL DEFAULT false,
  rate_limit_per_minute   integer NOT NULL DEFAULT 4000 CHECK (rate_limit_per_minute > 0),
  created_at              timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE partner_zones (
  partner_id  uuid NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
  zone_id     text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  PRIMARY KEY (partner_id, zone_id)
);

-- API keys are stored as sha256 of the key (keys are long random strings, so a fast hash is enough).
CREATE TABLE api_keys (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id   uuid NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
  scope        text NOT NULL CHECK (scope IN ('partner', 'tomp', 'insurance')),
  key_hash     bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
  key_prefix   text NOT NULL,
  label        text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX api_keys_partner ON api_keys (partner_id);

-- OAuth 2.0 client_credentials clients of the feeds. The secret is stored as scrypt (salted).
CREATE TABLE feed_clients (
  client_id    text PRIMARY KEY CHECK (client_id ~ '^[A-Za-z0-9._-]{1,128}$'),
  secret_hash  text NOT NULL,
  role         text NOT NULL CHECK (role IN ('city', 'insurer', 'gbfs', 'data')),
  -- null: every zone; otherwise the zones the client may read
  zones        text[],
  label        text NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);

-- Fixed one-minute windows per key, summed over every API process.
CREATE UNLOGGED TABLE rate_limit_counters (
  key_id        text NOT NULL,
  window_start  timestamptz NOT NULL,
  count         integer NOT NULL,
  PRIMARY KEY (key_id, window_start)
);

-- ---------------------------------------------------------------------------------------------
-- Users and rentals
-- ---------------------------------------------------------------------------------------------

CREATE TABLE users (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id    uuid NOT NULL REFERENCES partners (id),
  -- null after GDPR erasure; the row stays so that rentals keep their accounting link
  email         text,
  external_id   text,
  blocked       boolean NOT NULL DEFAULT false,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  deleted_at    timestamptz,
  CHECK ((deleted_at IS NULL) = (email IS NOT NULL AND external_id IS NOT NULL))
);
CREATE INDEX users_partner_external ON users (partner_id, external_id) WHERE deleted_at IS NULL;

CREATE TABLE rentals (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id           uuid NOT NULL REFERENCES partners (id),
  user_id              uuid NOT NULL REFERENCES users (id),
  vehicle_id           uuid NOT NULL REFERENCES vehicles (id),
  zone_id              text NOT NULL REFERENCES zones (id),
  trip_id              uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
  source               text NOT NULL DEFAULT 'partner' CHECK (source IN ('partner', 'tomp', 'simulator')),
  state                text NOT NULL DEFAULT 'RUNNING' CHECK (state IN ('RUNNING', 'ENDED', 'ENDED_WITH_NO_CHARGE', 'ENDED_INTERNALLY')),
  beginners_mode       boolean NOT NULL DEFAULT false,
  licence_validated    boolean NOT NULL DEFAULT false,
  group_id             uuid,
  ride_type            text NOT NULL DEFAULT 'solo' CHECK (ride_type IN ('solo', 'group-host', 'group-guest')),
  -- prices committed at start (include VAT, minor units)
  currency             char(3) NOT NULL,
  vat_rate             numeric(5,4) NOT NULL CHECK (vat_rate >= 0 AND vat_rate < 1),
  start_price          integer CHECK (start_price >= 0),
  price_per_minute     integer CHECK (price_per_minute >= 0),
  started_at           timestamptz NOT NULL,
  ended_at             timestamptz,
  user_start_location     geometry(Point, 4326),
  user_end_location       geometry(Point, 4326),
  vehicle_start_location  geometry(Point, 4326) NOT NULL,
  vehicle_end_location    geometry(Point, 4326),
  start_battery_percent   integer CHECK (start_battery_percent BETWEEN 0 AND 100),
  end_battery_percent     integer CHECK (end_battery_percent BETWEEN 0 AND 100),
  duration_min         integer CHECK (duration_min >= 0),
  distance_m           integer CHECK (distance_m >= 0),
  subtotal             integer CHECK (subtotal >= 0),
  total_amount         integer CHECK (total_amount >= 0),
  vat_amount           integer CHECK (vat_amount >= 0),
  receipt_key          text,
  photo_key            text,
  photo_decision       text CHECK (photo_decision IN ('good-parking', 'bad-parking', 'bad-photo', 'no-decision', 'unknown')),
  photo_decided_at     timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'RUNNING') = (ended_at IS NULL)),
  CHECK (ended_at IS NULL OR ended_at >= started_at),
  CHECK (state = 'RUNNING' OR (total_amount IS NOT NULL AND subtotal IS NOT NULL AND vat_amount IS NOT NULL
                                AND duration_min IS NOT NULL AND distance_m IS NOT NULL AND vehicle_end_location IS NOT NULL)),
  CHECK (total_amount IS NULL OR total_amount = subtotal + vat_amount)
);
-- one running rental per user and per vehicle: the race-proof rule
CREATE UNIQUE INDEX rentals_one_running_per_user ON rentals (user_id) WHERE state = 'RUNNING';
CREATE UNIQUE INDEX rentals_one_running_per_vehicle ON rentals (vehicle_id) WHERE state = 'RUNNING';
CREATE INDEX rentals_user ON rentals (user_id, started_at DESC);
CREATE INDEX rentals_partner ON rentals (partner_id);
CREATE INDEX rentals_vehicle ON rentals (vehicle_id, started_at DESC);
CREATE INDEX rentals_photo_pending ON rentals (ended_at) WHERE state <> 'RUNNING' AND photo_decision IS NULL;

-- ---------------------------------------------------------------------------------------------
-- Append-only operational history: MDS events, telemetry, trips
-- ---------------------------------------------------------------------------------------------

CREATE TABLE events (
  event_id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  device_id        uuid NOT NULL REFERENCES vehicles (id),
  zone_id          text NOT NULL REFERENCES zones (id),
  event_types      text[] NOT NULL CHECK (cardinality(event_types) >= 1),
  vehicle_state    text NOT NULL CHECK (vehicle_state IN
                     ('removed', 'available', 'non_operational', 'reserved', 'on_trip', 'non_contactable', 'missing', 'elsewhere')),
  ts               timestamptz NOT NULL,
  -- the UTC hour the event belongs to, for the historical events / status_changes files
  hour             timestamp GENERATED ALWAYS AS (date_trunc('hour', ts AT TIME ZONE 'UTC')) STORED,
  location         geometry(Point, 4326) NOT NULL,
  battery_percent  integer CHECK (battery_percent BETWEEN 0 AND 100),
  trip_ids         uuid[],
  -- when the row reached us (late data has recorded_at well after ts)
  recorded_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_zone_hour ON events (zone_id, hour, ts, event_id);
CREATE INDEX events_device_ts ON events (device_id, ts DESC);
CREATE INDEX events_zone_ts ON events (zone_id, ts);

CREATE TABLE telemetry (
  telemetry_id     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  device_id        uuid NOT NULL REFERENCES vehicles (id),
  zone_id          text NOT NULL REFERENCES zones (id),
  ts               timestamptz NOT NULL,
  location         geometry(Point, 4326) NOT NULL,
  battery_percent  integer CHECK (battery_percent BETWEEN 0 AND 100),
  trip_id          uuid,
  recorded_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX telemetry_device_ts ON telemetry (device_id, ts DESC);
CREATE INDEX telemetry_trip ON telemetry (trip_id, ts) WHERE trip_id IS NOT NULL;

CREATE TABLE trips (
  trip_id          uuid PRIMARY KEY,
  rental_id        uuid UNIQUE REFERENCES rentals (id),
  device_id        uuid NOT NULL REFERENCES vehicles (id),
  zone_id          text NOT NULL REFERENCES zones (id),
  vehicle_type_id  text NOT NULL REFERENCES vehicle_types (id),
  trip_type        text NOT NULL CHECK (trip_type IN ('rider', 'maas', 'operator')),
  start_time       timestamptz NOT NULL,
  end_time         timestamptz NOT NULL CHECK (end_time >= start_time),
  -- the UTC hour of end_time: MDS trips are queried by the hour they ended in
  end_hour         timestamp GENERATED ALWAYS AS (date_trunc('hour', end_time AT TIME ZONE 'UTC')) STORED,
  start_location   geometry(Point, 4326) NOT NULL,
  end_location     geometry(Point, 4326) NOT NULL,
  distance_m       integer NOT NULL CHECK (distance_m >= 0),
  duration_s       integer NOT NULL CHECK (duration_s >= 0),
  is_group_ride    boolean NOT NULL DEFAULT false,
  ride_type        text NOT NULL DEFAULT 'solo' CHECK (ride_type IN ('solo', 'group-host', 'group-guest')),
  user_ride_count  integer NOT NULL DEFAULT 1 CHECK (user_ride_count >= 1),
  recorded_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX trips_zone_hour ON trips (zone_id, end_hour, end_time, trip_id);

-- Events and telemetry are history: nobody rewrites it.
CREATE FUNCTION forbid_history_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = '55000';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION forbid_history_rewrite();
CREATE TRIGGER telemetry_append_only BEFORE UPDATE OR DELETE ON telemetry FOR EACH ROW EXECUTE FUNCTION forbid_history_rewrite();

-- ---------------------------------------------------------------------------------------------
-- TOMP bookings and legs, support tickets
-- ---------------------------------------------------------------------------------------------

CREATE TABLE tomp_bookings (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id            uuid NOT NULL REFERENCES partners (id),
  user_id               uuid NOT NULL REFERENCES users (id),
  vehicle_id            uuid NOT NULL REFERENCES vehicles (id),
  rental_id             uuid UNIQUE REFERENCES rentals (id),
  state                 text NOT NULL CHECK (state IN ('PENDING', 'CONFIRMED', 'STARTED', 'START_FINISHING', 'FINISHED', 'CANCELLED', 'EXPIRED')),
  from_location         geometry(Point, 4326) NOT NULL,
  customer_external_id  text NOT NULL,
  language              text NOT NULL DEFAULT 'en',
  expires_at            timestamptz NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  CHECK (state IN ('PENDING', 'CANCELLED', 'EXPIRED') OR rental_id IS NOT NULL)
);
-- a vehicle can be held by one pending booking at a time
CREATE UNIQUE INDEX tomp_bookings_one_pending_per_vehicle ON tomp_bookings (vehicle_id) WHERE state = 'PENDING';
CREATE INDEX tomp_bookings_partner ON tomp_bookings (partner_id);

CREATE TABLE tomp_legs (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  booking_id      uuid NOT NULL UNIQUE REFERENCES tomp_bookings (id),
  state           text NOT NULL CHECK (state IN ('NOT_STARTED', 'IN_USE', 'STARTED', 'START_FINISHING', 'FINISHED', 'CANCELLED')),
  departure_time  timestamptz NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE support_tickets (
  id                           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  booking_id                   uuid NOT NULL REFERENCES tomp_bookings (id),
  partner_id                   uuid NOT NULL REFERENCES partners (id),
  support_type                 text NOT NULL CHECK (support_type IN ('BROKEN_DOWN', 'NOT_AT_LOCATION', 'MISSING_AFTER_PAUSE',
                                 'NOT_CLEAN', 'NOT_AVAILABLE', 'UNABLE_TO_OPEN', 'UNABLE_TO_CLOSE', 'API_TECHNICAL',
                                 'API_FUNCTIONAL', 'ACCIDENT', 'OTHER')),
  occurred_at                  timestamptz NOT NULL,
  contact_information_end_user text NOT NULL,
  comment                      text NOT NULL,
  status                       text NOT NULL DEFAULT 'PROCESSING' CHECK (status IN ('PROCESSING', 'RESOLVED')),
  created_at                   timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------------------------------------
-- Feed publications
-- ---------------------------------------------------------------------------------------------

-- One row per hourly file: feed in ('mds_trips', 'mds_events', 'mds_status_changes', 'insurance_trips'),
-- version in ('2.0', '1.2', '0.4'), scope = zone id. Missing row = never published.
CREATE TABLE feed_publications (
  feed              text NOT NULL CHECK (feed IN ('mds_trips', 'mds_events', 'mds_status_changes', 'insurance_trips')),
  version           text NOT NULL CHECK (version IN ('2.0', '1.2', '0.4')),
  scope             text NOT NULL,
  hour              timestamp NOT NULL CHECK (date_trunc('hour', hour) = hour),
  status            text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'failed')),
  object_key        text,
  sha256            text,
  record_count      integer CHECK (record_count >= 0),
  bytes             bigint CHECK (bytes >= 0),
  last_updated      timestamptz,
  published_at      timestamptz,
  source_watermark  timestamptz,
  dirty             boolean NOT NULL DEFAULT false,
  attempts          integer NOT NULL DEFAULT 0,
  last_error        text,
  failed_at         timestamptz,
  PRIMARY KEY (feed, version, scope, hour),
  CHECK (status = 'failed' OR (object_key IS NOT NULL AND sha256 IS NOT NULL AND record_count IS NOT NULL))
);
CREATE INDEX feed_publications_dirty ON feed_publications (hour) WHERE dirty;

-- GBFS snapshots: one row per (version, scope, file); scope is a zone id (3.0) or a role (2.2).
CREATE TABLE gbfs_snapshots (
  version       text NOT NULL CHECK (version IN ('2.2', '3.0')),
  scope         text NOT NULL,
  file          text NOT NULL CHECK (file ~ '^[a-z_]+$'),
  object_key    text NOT NULL,
  sha256        text NOT NULL,
  bytes         bigint NOT NULL,
  ttl           integer NOT NULL CHECK (ttl >= 0),
  last_updated  timestamptz NOT NULL,
  published_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (version, scope, file)
);

-- Late data: a trip or event written for an hour whose files exist marks those files dirty, so that
-- the republish job picks them up. Statement-level with transition tables keeps bulk COPY cheap.
CREATE FUNCTION mark_trip_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, end_hour FROM changed_rows) c
   WHERE p.feed IN ('mds_trips', 'insurance_trips') AND p.scope = c.zone_id AND p.hour = c.end_hour AND NOT p.dirty;
  RETURN NULL;
END $$;
CREATE FUNCTION mark_event_hours_dirty() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_publications p SET dirty = true
    FROM (SELECT DISTINCT zone_id, hour FROM changed_rows) c
   WHERE p.feed IN ('mds_events', 'mds_status_changes') AND p.scope = c.zone_id AND p.hour = c.hour AND NOT p.dirty;
  RETURN NULL;
END $$;
CREATE TRIGGER trips_dirty_insert AFTER INSERT ON trips REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER trips_dirty_update_new AFTER UPDATE ON trips REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER trips_dirty_update_old AFTER UPDATE ON trips REFERENCING OLD TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_trip_hours_dirty();
CREATE TRIGGER events_dirty_insert AFTER INSERT ON events REFERENCING NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION mark_event_hours_dirty();
