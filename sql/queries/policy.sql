-- City rules (migration 000300): the Policy and Geography sources of the zones, their rules, the
-- city's areas while the rules are in force, the speed commands, the compliance view
-- (publisher/policy/, lib/domain/policy/, docs/city-policy.md).

-- name: PolicySourceUpsert
INSERT INTO city_policy_sources (zone_id, policy_url, geography_url, auth_type, auth_secret_sealed, oauth_token_url, oauth_client_id, oauth_scope, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
ON CONFLICT (zone_id) DO UPDATE
  SET policy_url = EXCLUDED.policy_url, geography_url = EXCLUDED.geography_url, auth_type = EXCLUDED.auth_type,
      auth_secret_sealed = EXCLUDED.auth_secret_sealed, oauth_token_url = EXCLUDED.oauth_token_url,
      oauth_client_id = EXCLUDED.oauth_client_id, oauth_scope = EXCLUDED.oauth_scope, updated_at = EXCLUDED.updated_at,
      -- another endpoint is another document: read it in full
      policy_etag = NULL, policy_last_modified = NULL, geography_etag = NULL, geography_last_modified = NULL, read_at = NULL
RETURNING zone_id, (xmax = 0) AS inserted;

-- name: PolicySourceDelete
-- The zone's city rules go with it (city_rules, then their areas: ON DELETE CASCADE).
DELETE FROM city_policy_sources WHERE zone_id = $1 RETURNING zone_id;

-- name: PolicySourceExists
SELECT zone_id FROM city_policy_sources WHERE zone_id = $1;

-- name: PolicyZoneExists
SELECT id, timezone FROM zones WHERE id = $1;

-- name: PolicySourcesDue
-- The sources to read now ($1): not read for $2 seconds, or every one of $3 (a zone, NULL every zone)
-- when $4 (a read by hand).
-- not null: timezone
SELECT s.zone_id, s.policy_url, s.geography_url, s.auth_type, s.auth_secret_sealed, s.oauth_token_url, s.oauth_client_id, s.oauth_scope,
       s.policy_etag, s.policy_last_modified, s.geography_etag, s.geography_last_modified,
       s.policies, s.geographies, z.timezone
  FROM city_policy_sources s
  JOIN zones z ON z.id = s.zone_id
 WHERE ($3::text IS NULL OR s.zone_id = $3)
   AND ($4::boolean OR s.read_at IS NULL OR s.read_at <= $1::timestamptz - make_interval(secs => $2::float8))
 ORDER BY s.read_at NULLS FIRST, s.zone_id;

-- name: PolicySourceReadFailed
-- A read that kept the last good documents: unreachable, or a document refused ($3 the status, $4 why).
UPDATE city_policy_sources
   SET read_at = $2, read_status = $3, read_error = $4, reads = reads + 1, failed_reads = failed_reads + 1
 WHERE zone_id = $1;

-- name: PolicySourceNotModified
UPDATE city_policy_sources SET read_at = $2, read_status = 'not-modified', read_error = NULL, reads = reads + 1 WHERE zone_id = $1;

-- name: PolicySourceGood
-- Both documents valid: they are the zone's rules from now on, with their validators.
UPDATE city_policy_sources
   SET policies = $3, geographies = $4, policy_etag = $5, policy_last_modified = $6, geography_etag = $7, geography_last_modified = $8,
       good_at = $2, read_at = $2, read_status = 'ok', read_error = NULL, reads = reads + 1
 WHERE zone_id = $1;

-- name: PolicyVehicleTypes
SELECT id, form_factor, propulsion_type FROM vehicle_types ORDER BY id;

-- name: PolicyRulesReplace
-- The zone's ($1) rules become those of $2 (lib/domain/policy/mapping.ts MappedRule, as JSON): new
-- ones inserted, changed ones updated (their state kept), the others deleted with their areas. The
-- area of a rule is its geographies' polygons less those of the earlier rules of its policy that
-- match the same vehicles (the order of operations), made valid; a rule left with no area is
-- ignored, saying so.
WITH input AS (
  SELECT t.*
    FROM jsonb_to_recordset($2::jsonb) AS t (policy_id uuid, rule_id uuid, policy_name text, rule_name text, rule_type text, position int,
                                           mapping text, note text, max_speed_kph int, minimum int, maximum int, rule_units text, states jsonb,
                                           vehicle_types text[], starts_at timestamptz, ends_at timestamptz, days int[], start_time time, end_time time,
                                           geometries jsonb, earlier jsonb)
), shaped AS (
  SELECT i.*,
         (SELECT ST_Multi(ST_CollectionExtract(ST_MakeValid(CASE WHEN o.g IS NULL THEN NULL WHEN e.g IS NULL THEN o.g ELSE ST_Difference(o.g, e.g) END), 3))
            FROM (SELECT ST_Union(ST_MakeValid(ST_SetSRID(ST_GeomFromGeoJSON(g), 4326))) AS g FROM jsonb_array_elements_text(i.geometries) g) o,
                 (SELECT ST_Union(ST_MakeValid(ST_SetSRID(ST_GeomFromGeoJSON(g), 4326))) AS g FROM jsonb_array_elements_text(i.earlier) g) e) AS area
    FROM input i
), final AS (
  SELECT s.*, (s.mapping IN ('slow-zone', 'no-parking', 'no-riding') AND (s.area IS NULL OR ST_IsEmpty(s.area))) AS covered
    FROM shaped s
), deleted AS (
  DELETE FROM city_rules r
   WHERE r.zone_id = $1 AND NOT EXISTS (SELECT 1 FROM input i WHERE i.policy_id = r.policy_id AND i.rule_id = r.rule_id)
)
INSERT INTO city_rules AS r (zone_id, policy_id, rule_id, policy_name, rule_name, rule_type, position, mapping, note, max_speed_kph, minimum, maximum,
                             rule_units, states, vehicle_types, starts_at, ends_at, days, start_time, end_time, geom)
SELECT $1, f.policy_id, f.rule_id, f.policy_name, f.rule_name, f.rule_type, f.position,
       CASE WHEN f.covered THEN 'ignored' ELSE f.mapping END,
       CASE WHEN f.covered THEN 'its area is covered by earlier rules of its policy (MDS order of operations)' ELSE f.note END,
       CASE WHEN f.covered THEN NULL ELSE f.max_speed_kph END, f.minimum, f.maximum, f.rule_units, coalesce(f.states, '{}'),
       coalesce(f.vehicle_types, '{}'), f.starts_at, f.ends_at, f.days, f.start_time, f.end_time,
       CASE WHEN f.covered OR f.area IS NULL OR ST_IsEmpty(f.area) THEN NULL ELSE f.area END
  FROM final f
ON CONFLICT (zone_id, policy_id, rule_id) DO UPDATE
  SET policy_name = EXCLUDED.policy_name, rule_name = EXCLUDED.rule_name, rule_type = EXCLUDED.rule_type, position = EXCLUDED.position,
      mapping = EXCLUDED.mapping, note = EXCLUDED.note, max_speed_kph = EXCLUDED.max_speed_kph, minimum = EXCLUDED.minimum,
      maximum = EXCLUDED.maximum, rule_units = EXCLUDED.rule_units, states = EXCLUDED.states, vehicle_types = EXCLUDED.vehicle_types,
      starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, days = EXCLUDED.days, start_time = EXCLUDED.start_time,
      end_time = EXCLUDED.end_time, geom = EXCLUDED.geom;

-- name: PolicyRulesSchedule
-- Every rule with what decides whether it is in force (publisher/policy/apply.ts).
-- start_time, end_time: hh:mm:ss.
-- not null: timezone, start_time, end_time
SELECT r.zone_id, r.policy_id, r.rule_id, r.starts_at, r.ends_at, r.days, r.start_time::text AS start_time, r.end_time::text AS end_time,
       r.in_force, z.timezone
  FROM city_rules r
  JOIN zones z ON z.id = r.zone_id
 ORDER BY r.zone_id, r.policy_id, r.position;

-- name: PolicyRulesSetInForce
-- The rules ($2, $3, $4: zone, policy, rule) whose state changes to $5 at $1.
UPDATE city_rules r
   SET in_force = t.f, in_force_since = CASE WHEN t.f THEN $1::timestamptz END
  FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::boolean[]) AS t (zone_id, policy_id, rule_id, f)
 WHERE r.zone_id = t.zone_id AND r.policy_id = t.policy_id AND r.rule_id = t.rule_id AND r.in_force IS DISTINCT FROM t.f;

-- name: PolicyAreasDeleteStale
-- The city's areas whose rule is no longer in force or no longer says what the area says.
DELETE FROM areas a
 WHERE a.source = 'city'
   AND NOT EXISTS (SELECT 1 FROM city_rules r
                    WHERE r.zone_id = a.zone_id AND r.policy_id = a.policy_id AND r.rule_id = a.rule_id AND r.in_force
                      AND r.mapping = a.area_type AND r.rule_name = a.name AND r.vehicle_types = a.vehicle_types
                      AND r.max_speed_kph IS NOT DISTINCT FROM a.max_speed_kph AND ST_Equals(r.geom, a.geom))
RETURNING a.zone_id;

-- name: PolicyAreasInsertInForce
-- An area for every rule in force that maps to one and has none; its id is derived from the zone and
-- the rule, so it stays the same each time the rule comes into force (partner API, GBFS).
INSERT INTO areas (id, zone_id, name, area_type, vehicle_types, geom, capacity, max_speed_kph, source, policy_id, rule_id)
SELECT md5(r.zone_id || '/' || r.policy_id || '/' || r.rule_id)::uuid, r.zone_id, r.rule_name, r.mapping, r.vehicle_types, r.geom, NULL, r.max_speed_kph,
       'city', r.policy_id, r.rule_id
  FROM city_rules r
 WHERE r.in_force AND r.mapping IN ('slow-zone', 'no-parking', 'no-riding')
   AND NOT EXISTS (SELECT 1 FROM areas a WHERE a.zone_id = r.zone_id AND a.policy_id = r.policy_id AND a.rule_id = r.rule_id)
RETURNING zone_id;

-- name: PolicySpeedPlan
-- The speed limit every vehicle should have ($1 now): a riding vehicle inside a city slow zone in
-- force the lowest such limit (and never above its rental's beginners' limit); one that had a city
-- limit and is no longer inside one (it left, the rule ended, the ride ended) its normal limit back
-- (the rental's beginners' limit, else the zone's). A changed limit resets the attempts.
-- The riding vehicles are found by vehicles_zone_status (zone, 'riding': 5 % of a fleet), not by a
-- spatial index of their own: every vehicle report moves a location, so every index on vehicles is
-- written at each of the ingest's updates (issue 41), and a partial GiST of the riding ones would be
-- written at most of them.
-- wanted, released: the rows changed.
-- not null: wanted, released
WITH inside AS (
  SELECT DISTINCT ON (v.id) v.id AS vehicle_id, v.zone_id, a.id AS area_id, a.policy_id, a.rule_id,
         least(a.max_speed_kph, CASE WHEN r.beginners_mode THEN z.reduced_speed_kph ELSE z.max_speed_kph END) AS kph
    FROM areas a
    JOIN vehicles v ON v.zone_id = a.zone_id AND v.status = 'riding' AND ST_Intersects(a.geom, v.location)
    JOIN vehicle_types vt ON vt.id = v.vehicle_type_id
    JOIN zones z ON z.id = v.zone_id
    LEFT JOIN rentals r ON r.vehicle_id = v.id AND r.state = 'RUNNING'
   WHERE a.source = 'city' AND a.area_type = 'slow-zone'
     AND (cardinality(a.vehicle_types) = 0 OR v.vehicle_type_id = ANY (a.vehicle_types) OR vt.form_factor = ANY (a.vehicle_types))
   ORDER BY v.id, a.max_speed_kph, a.id
), wanted AS (
  INSERT INTO vehicle_speed_commands AS c (vehicle_id, zone_id, area_id, policy_id, rule_id, wanted_kph, wanted_at)
  SELECT i.vehicle_id, i.zone_id, i.area_id, i.policy_id, i.rule_id, i.kph, $1 FROM inside i
  ON CONFLICT (vehicle_id) DO UPDATE
    SET zone_id = EXCLUDED.zone_id, area_id = EXCLUDED.area_id, policy_id = EXCLUDED.policy_id, rule_id = EXCLUDED.rule_id,
        wanted_kph = EXCLUDED.wanted_kph,
        wanted_at = CASE WHEN c.wanted_kph = EXCLUDED.wanted_kph THEN c.wanted_at ELSE EXCLUDED.wanted_at END,
        attempts = CASE WHEN c.wanted_kph = EXCLUDED.wanted_kph THEN c.attempts ELSE 0 END,
        last_attempt_at = CASE WHEN c.wanted_kph = EXCLUDED.wanted_kph THEN c.last_attempt_at END
    WHERE c.area_id IS DISTINCT FROM EXCLUDED.area_id OR c.wanted_kph <> EXCLUDED.wanted_kph
  RETURNING 1
), released AS (
  -- driven from the commands with a city limit (few), each vehicle by its key
  UPDATE vehicle_speed_commands c
     SET area_id = NULL, wanted_kph = n.kph, wanted_at = $1,
         attempts = CASE WHEN c.wanted_kph = n.kph THEN c.attempts ELSE 0 END,
         last_attempt_at = CASE WHEN c.wanted_kph = n.kph THEN c.last_attempt_at END
    FROM (SELECT c2.vehicle_id, CASE WHEN r.beginners_mode THEN z.reduced_speed_kph ELSE z.max_speed_kph END AS kph
            FROM vehicle_speed_commands c2
            JOIN vehicles v ON v.id = c2.vehicle_id
            JOIN zones z ON z.id = v.zone_id
            LEFT JOIN rentals r ON r.vehicle_id = v.id AND r.state = 'RUNNING'
           WHERE c2.area_id IS NOT NULL) n
   WHERE n.vehicle_id = c.vehicle_id AND c.area_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM inside i WHERE i.vehicle_id = c.vehicle_id)
  RETURNING 1
)
SELECT (SELECT count(*) FROM wanted)::int AS wanted, (SELECT count(*) FROM released)::int AS released;

-- name: PolicySpeedDeleteRestored
-- A vehicle whose normal limit is back needs nothing more.
DELETE FROM vehicle_speed_commands WHERE area_id IS NULL AND acked_kph = wanted_kph;

-- name: PolicySpeedClaim
-- Up to $3 commands due at $1: never sent for their limit, or their last attempt older than the
-- backoff ($2 seconds, doubling per attempt up to 16×); the attempt is recorded before the command
-- is sent, so concurrent publishers never send one twice.
UPDATE vehicle_speed_commands c
   SET attempts = c.attempts + 1, last_attempt_at = $1
  FROM (SELECT vehicle_id
          FROM vehicle_speed_commands
         WHERE acked_kph IS DISTINCT FROM wanted_kph
           AND (last_attempt_at IS NULL OR last_attempt_at <= $1::timestamptz - make_interval(secs => $2::float8 * power(2, least(attempts - 1, 4))))
         ORDER BY last_attempt_at NULLS FIRST, wanted_at
         LIMIT $3
           FOR UPDATE SKIP LOCKED) d
 WHERE c.vehicle_id = d.vehicle_id
RETURNING c.vehicle_id, c.zone_id, c.wanted_kph, c.wanted_at, c.attempts;

-- name: PolicySpeedAcked
-- The vehicles ($2) that acknowledged the limits ($3) at $1; a reply to a superseded limit changes nothing.
UPDATE vehicle_speed_commands c
   SET acked_kph = t.kph, acked_at = $1, last_error = NULL
  FROM unnest($2::uuid[], $3::int[]) AS t (vehicle_id, kph)
 WHERE c.vehicle_id = t.vehicle_id AND c.wanted_kph = t.kph;

-- name: PolicySpeedFailed
UPDATE vehicle_speed_commands c
   SET failures = c.failures + 1, last_error = t.err
  FROM unnest($1::uuid[], $2::int[], $3::text[]) AS t (vehicle_id, kph, err)
 WHERE c.vehicle_id = t.vehicle_id AND c.wanted_kph = t.kph;

-- name: PolicyComplianceSources
-- The compliance view's reads, per zone ($1 a zone, NULL every zone).
-- not null: rules, in_force
SELECT s.zone_id, s.policy_url, s.geography_url, s.auth_type, s.read_at, s.read_status, s.read_error, s.good_at, s.reads, s.failed_reads,
       (SELECT count(*) FROM city_rules r WHERE r.zone_id = s.zone_id)::int AS rules,
       (SELECT count(*) FROM city_rules r WHERE r.zone_id = s.zone_id AND r.in_force)::int AS in_force
  FROM city_policy_sources s
 WHERE $1::text IS NULL OR s.zone_id = $1
 ORDER BY s.zone_id;

-- name: PolicyComplianceRules
-- The compliance view's rules ($1 a zone, NULL every zone): mapping, state, the vehicles commanded
-- under the rule and those that have not acknowledged, and the figure of an alert rule: a fleet cap's
-- vehicles in its area and states (vehicles.mds_state), a parking-time limit's vehicles parked in its
-- area for longer than the limit (since their last event, vehicle_current_state).
-- figure: NULL for a rule without one.
-- not null: commanded, unacknowledged, failures
SELECT r.zone_id, r.policy_id, r.rule_id, r.policy_name, r.rule_name, r.rule_type, r.mapping, r.note, r.max_speed_kph, r.minimum, r.maximum,
       r.rule_units, r.starts_at, r.ends_at, r.in_force, r.in_force_since,
       coalesce(c.commanded, 0)::int AS commanded, coalesce(c.unacknowledged, 0)::int AS unacknowledged, coalesce(c.failures, 0)::int AS failures,
       CASE r.mapping
         WHEN 'fleet-cap' THEN (SELECT count(*)::int FROM vehicles v
                                 WHERE v.zone_id = r.zone_id AND (r.states = '{}' OR r.states ? v.mds_state)
                                   AND (cardinality(r.vehicle_types) = 0 OR v.vehicle_type_id = ANY (r.vehicle_types))
                                   AND (r.geom IS NULL OR ST_Intersects(r.geom, v.location)))
         WHEN 'parking-time' THEN (SELECT count(*)::int FROM vehicles v
                                    JOIN vehicle_current_state cs ON cs.device_id = v.id
                                   WHERE v.zone_id = r.zone_id AND v.mds_state IN ('available', 'non_operational', 'reserved')
                                     AND (r.states = '{}' OR r.states ? v.mds_state)
                                     AND (cardinality(r.vehicle_types) = 0 OR v.vehicle_type_id = ANY (r.vehicle_types))
                                     AND (r.geom IS NULL OR ST_Intersects(r.geom, v.location))
                                     AND cs.event_ts < $2::timestamptz - make_interval(secs => r.maximum * CASE r.rule_units WHEN 'seconds' THEN 1 WHEN 'minutes' THEN 60 WHEN 'hours' THEN 3600 ELSE 86400 END))
       END AS figure
  FROM city_rules r
  LEFT JOIN (SELECT zone_id, policy_id, rule_id, count(*) AS commanded,
                    count(*) FILTER (WHERE acked_kph IS DISTINCT FROM wanted_kph) AS unacknowledged, sum(failures) AS failures
               FROM vehicle_speed_commands GROUP BY zone_id, policy_id, rule_id) c
         ON c.zone_id = r.zone_id AND c.policy_id = r.policy_id AND c.rule_id = r.rule_id
 WHERE $1::text IS NULL OR r.zone_id = $1
 ORDER BY r.zone_id, r.policy_name, r.policy_id, r.position;

-- name: PolicySpeedUnacknowledged
-- The vehicles not (yet) at the limit they were asked for, per zone and rule, and their oldest ask.
-- not null: vehicles
SELECT zone_id, policy_id, rule_id, count(*)::int AS vehicles, min(wanted_at) AS oldest, max(attempts) AS attempts
  FROM vehicle_speed_commands
 WHERE acked_kph IS DISTINCT FROM wanted_kph
 GROUP BY zone_id, policy_id, rule_id
 ORDER BY zone_id;

-- name: PolicyRulesLock
-- One writer of the city's rules and areas at a time in the cluster (a read replacing a zone's
-- rules, a round applying them): two rounds inserting the same rule's area would collide.
SELECT pg_advisory_xact_lock(hashtext('city-rules'));
