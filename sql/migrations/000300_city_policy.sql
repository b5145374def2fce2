-- City rules: a zone's MDS Policy and Geography sources, the rules read from them, and the speed
-- commands that carry their speed limits to the vehicles (publisher/policy/, docs/city-policy.md).
--
-- A rule mapped to an area type (slow-zone, no-parking, no-riding) is an `areas` row of source 'city'
-- while it is in force, so the one decision of migration 000081 (zone_rules_at: the rental engine,
-- the partner API, TOMP) and the GBFS geofencing files read it as they read the zone file's areas;
-- its insert and delete bump the zone's GBFS static input once per statement (migration 000250).

CREATE TABLE city_policy_sources (
  zone_id               text PRIMARY KEY REFERENCES zones (id) ON DELETE CASCADE,
  -- a Policy API `/policies` endpoint or a policies.json flat file; the same for geographies
  policy_url            text NOT NULL,
  geography_url         text NOT NULL,
  auth_type             text NOT NULL DEFAULT 'none' CHECK (auth_type IN ('none', 'bearer', 'oauth')),
  -- the bearer token or the OAuth client secret, sealed (lib/core/seal.ts): it must be sent again
  auth_secret_sealed    text,
  oauth_token_url       text,
  oauth_client_id       text,
  oauth_scope           text,
  CHECK ((auth_type = 'none') = (auth_secret_sealed IS NULL)),
  CHECK ((auth_type = 'oauth') = (oauth_token_url IS NOT NULL AND oauth_client_id IS NOT NULL)),
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  -- the reader's conditional-request validators of each document
  policy_etag           text,
  policy_last_modified  text,
  geography_etag        text,
  geography_last_modified text,
  -- the last good documents (both valid, read together): what the rules were mapped from
  policies              jsonb,
  geographies           jsonb,
  good_at               timestamptz,
  -- the last read: when, how it went, and why not (a refused document's reason)
  read_at               timestamptz,
  read_status           text CHECK (read_status IN ('ok', 'not-modified', 'invalid', 'unreachable')),
  read_error            text,
  reads                 bigint NOT NULL DEFAULT 0,
  failed_reads          bigint NOT NULL DEFAULT 0
);

-- Every rule of the last good documents, mapped (lib/domain/policy/mapping.ts) and with its state.
CREATE TABLE city_rules (
  zone_id        text NOT NULL REFERENCES city_policy_sources (zone_id) ON DELETE CASCADE,
  policy_id      uuid NOT NULL,
  rule_id        uuid NOT NULL,
  policy_name    text NOT NULL,
  rule_name      text NOT NULL,
  rule_type      text NOT NULL,
  -- the rule's index in its policy: the order of operations (earlier rules take precedence)
  position       int NOT NULL,
  mapping        text NOT NULL CHECK (mapping IN ('slow-zone', 'no-parking', 'no-riding', 'fleet-cap', 'parking-time', 'ignored')),
  -- what the mapping means or why the rule is ignored, shown in the compliance view
  note           text NOT NULL,
  max_speed_kph  int CHECK (max_speed_kph IS NULL OR max_speed_kph > 0),
  minimum        int,
  maximum        int,
  rule_units     text,
  states         jsonb NOT NULL DEFAULT '{}',
  -- areas.vehicle_types of the rule: our vehicle type ids it applies to ('{}': every one)
  vehicle_types  text[] NOT NULL DEFAULT '{}',
  -- when the policy applies: [starts_at, ends_at) (ends_at also a successor's start_date), on `days`
  -- (0 = Sunday … 6 = Saturday, NULL every day) from start_time to end_time, local to the zone
  starts_at      timestamptz NOT NULL,
  ends_at        timestamptz,
  days           int[],
  start_time     time NOT NULL DEFAULT '00:00:00',
  end_time       time NOT NULL DEFAULT '23:59:59',
  geom           geometry(MultiPolygon, 4326),
  CHECK (geom IS NULL OR ST_IsValid(geom)),
  CHECK ((mapping IN ('slow-zone', 'no-parking', 'no-riding')) <= (geom IS NOT NULL)),
  CHECK ((mapping = 'slow-zone') = (max_speed_kph IS NOT NULL)),
  in_force       boolean NOT NULL DEFAULT false,
  in_force_since timestamptz,
  CHECK (in_force = (in_force_since IS NOT NULL)),
  PRIMARY KEY (zone_id, policy_id, rule_id)
);

ALTER TABLE areas
  ADD COLUMN source text NOT NULL DEFAULT 'operator' CHECK (source IN ('operator', 'city')),
  ADD COLUMN policy_id uuid,
  ADD COLUMN rule_id uuid,
  ADD CONSTRAINT areas_city_rule CHECK ((source = 'city') = (rule_id IS NOT NULL AND policy_id IS NOT NULL)),
  -- a rule replaced or dropped by a read takes its area with it
  ADD CONSTRAINT areas_city_rule_fkey FOREIGN KEY (zone_id, policy_id, rule_id) REFERENCES city_rules (zone_id, policy_id, rule_id) ON DELETE CASCADE;
CREATE INDEX areas_city ON areas (zone_id) WHERE source = 'city';

-- The zone file's rule (a zone has no-parking or parking-spot areas, never both) binds the operator's
-- areas; a city no-parking area in a parking-spot zone is the city's rule and forbids ending there.
CREATE OR REPLACE FUNCTION areas_parking_rule() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE mode text;
BEGIN
  IF NEW.source = 'city' THEN RETURN NEW; END IF;
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

-- The order areas decide in: the city's areas first (where a city rule and the zone file overlap, the
-- city's wins), then zone_area_precedence (the most restrictive type first). The GBFS geofencing
-- features are published in this order (GbfsAreas), so the files say what the engine decides.
CREATE FUNCTION zone_area_order(p_source text, p_area_type text) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p_source = 'city' THEN 0 ELSE 100 END + zone_area_precedence(p_area_type)
$$;

-- zone_rules_at as migration 000220 made it (PL/pgSQL, for its cached plan), deciding by zone_area_order.
CREATE OR REPLACE FUNCTION zone_rules_at(p_zone text, p_lng float8, p_lat float8, p_vehicle_type text,
                              OUT ride_start_allowed boolean, OUT ride_end_allowed boolean,
                              OUT ride_through_allowed boolean, OUT station_parking boolean, OUT area_type text)
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  WITH hit AS (
    SELECT a.area_type
      FROM areas a
      LEFT JOIN vehicle_types vt ON vt.id = p_vehicle_type
     WHERE a.zone_id = p_zone
       AND ST_Intersects(a.geom, ST_SetSRID(ST_MakePoint(p_lng, p_lat), 4326))
       AND (cardinality(a.vehicle_types) = 0 OR p_vehicle_type = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))
     ORDER BY zone_area_order(a.source, a.area_type)
     LIMIT 1
  )
  SELECT r.ride_start_allowed, r.ride_end_allowed, r.ride_through_allowed, r.station_parking, hit.area_type
    INTO ride_start_allowed, ride_end_allowed, ride_through_allowed, station_parking, area_type
    FROM zones z
    LEFT JOIN hit ON true
   CROSS JOIN LATERAL zone_area_rule(z.parking_mode, hit.area_type) ar
   CROSS JOIN LATERAL zone_global_rule(z.id) g
   CROSS JOIN LATERAL (SELECT CASE WHEN hit.area_type IS NULL THEN g.ride_start_allowed ELSE ar.ride_start_allowed END AS ride_start_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_end_allowed ELSE ar.ride_end_allowed END AS ride_end_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.ride_through_allowed ELSE ar.ride_through_allowed END AS ride_through_allowed,
                              CASE WHEN hit.area_type IS NULL THEN g.station_parking ELSE ar.station_parking END AS station_parking) r
   WHERE z.id = p_zone;
END $$;

-- The speed limit each vehicle should have and the one it acknowledged (publisher/policy/speed.ts).
-- A row exists while a city limit applies to the vehicle or its normal limit is not yet back:
-- area_id names the city slow zone whose limit it is, NULL the normal limit being restored; a
-- restored row is deleted. Acknowledgements are conditional on the limit they answer (a reply to a
-- superseded command changes nothing).
CREATE TABLE vehicle_speed_commands (
  vehicle_id      uuid PRIMARY KEY REFERENCES vehicles (id) ON DELETE CASCADE,
  zone_id         text NOT NULL REFERENCES zones (id) ON DELETE CASCADE,
  area_id         uuid,
  policy_id       uuid,
  rule_id         uuid,
  wanted_kph      int NOT NULL CHECK (wanted_kph > 0),
  wanted_at       timestamptz NOT NULL,
  acked_kph       int,
  acked_at        timestamptz,
  attempts        int NOT NULL DEFAULT 0,
  last_attempt_at timestamptz,
  last_error      text,
  -- attempts without an acknowledgement (no answer in time, or refused)
  failures        int NOT NULL DEFAULT 0
);
CREATE INDEX vehicle_speed_commands_pending ON vehicle_speed_commands (last_attempt_at NULLS FIRST) WHERE acked_kph IS DISTINCT FROM wanted_kph;
CREATE INDEX vehicle_speed_commands_rule ON vehicle_speed_commands (zone_id, policy_id, rule_id);
