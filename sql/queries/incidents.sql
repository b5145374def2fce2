-- MDS 2.1 incidents (migration 000330; lib/domain/incidents.ts writes them, api/feeds/incidents.ts
-- serves them). publication_time and last_updated are the database's now() (as telemetry's
-- recorded_at): the paging cut-off (MdsEventsCutoff) is in that clock.

-- name: IncidentFromTicket
-- The incident of a TOMP support ticket ($1) of MDS type $2, written in the ticket's transaction:
-- the booking's vehicle, in its rental's zone (the vehicle's when the booking never started), on
-- the rental's trip when the ticket's time falls within the ride, linked to the vehicle's last known
-- position at that time (incident_telemetry_point). `preliminary` until the ticket is resolved
-- (trigger support_tickets_incident). The ticket's comment and the traveller's contact are not
-- copied: they are the traveller's words and personal data, and cities get the incident, not them.
INSERT INTO incidents (zone_id, device_id, trip_id, incident_type, incident_time, telemetry_ts, source, support_ticket_id,
                       description, report_id, report_type, preliminary)
SELECT coalesce(r.zone_id, v.zone_id), b.vehicle_id,
       CASE WHEN r.started_at <= st.occurred_at AND (r.ended_at IS NULL OR r.ended_at >= st.occurred_at) THEN r.trip_id END,
       $2::text, st.occurred_at, incident_telemetry_point(b.vehicle_id, st.occurred_at), 'tomp', st.id,
       'reported through a TOMP support ticket (' || st.support_type || ')', st.id::text, 'customer support ticket (TOMP)', st.status <> 'RESOLVED'
  FROM support_tickets st
  JOIN tomp_bookings b ON b.id = st.booking_id
  JOIN vehicles v ON v.id = b.vehicle_id
  LEFT JOIN rentals r ON r.id = b.rental_id
 WHERE st.id = $1
RETURNING incident_id;

-- name: IncidentVehicle
-- The vehicle an ops incident is about (by id or printed code), and the trip it was on at $3 (a
-- rental running then), for `ops incidents add`.
SELECT v.id AS device_id, v.zone_id,
       (SELECT r.trip_id FROM rentals r
         WHERE r.vehicle_id = v.id AND r.started_at <= $3::timestamptz AND (r.ended_at IS NULL OR r.ended_at >= $3::timestamptz)
         ORDER BY r.started_at DESC LIMIT 1) AS trip_id
  FROM vehicles v
 WHERE v.id = $1::uuid OR v.code = $2::text;

-- name: IncidentTripOfVehicle
-- Whether trip $2 is a rental of vehicle $1 (an ops --trip must be the vehicle's).
SELECT r.trip_id FROM rentals r WHERE r.vehicle_id = $1 AND r.trip_id = $2;

-- name: IncidentInsertOps
-- An incident raised by operator staff. With a place ($6 lng, $7 lat), the vehicle gets a telemetry
-- point there at the incident's time (unless it has one at that instant already: the point at that
-- instant is the one linked), so the place reaches cities as MDS 2.1 puts it, through the point
-- that references the incident; without, it is linked to the vehicle's last known position then.
WITH point AS (
  INSERT INTO telemetry (device_id, zone_id, ts, location, trip_id)
  SELECT $2::uuid, $1::text, $5::timestamptz, ST_SetSRID(ST_MakePoint($6::float8, $7::float8), 4326), $3::uuid
   WHERE $6::float8 IS NOT NULL AND $7::float8 IS NOT NULL
  ON CONFLICT DO NOTHING
  RETURNING ts)
INSERT INTO incidents (zone_id, device_id, trip_id, incident_type, incident_time, location, telemetry_ts, source,
                       description, severity, report_id, report_type, preliminary)
SELECT $1, $2, $3, $4::text, $5,
       CASE WHEN $6::float8 IS NOT NULL THEN ST_SetSRID(ST_MakePoint($6::float8, $7::float8), 4326) END,
       CASE WHEN $6::float8 IS NOT NULL THEN $5 ELSE incident_telemetry_point($2, $5) END,
       'ops', $8::text, $9::text, $10::text, $11::text, $12::boolean
  FROM (SELECT count(*) FROM point) p
RETURNING incident_id, telemetry_ts;

-- name: IncidentUpdateOps
-- Changes an incident's descriptive members (null: unchanged) and moves its last_updated.
UPDATE incidents
   SET description = coalesce($2::text, description), severity = coalesce($3::text, severity),
       preliminary = coalesce($4::boolean, preliminary), last_updated = greatest(now(), publication_time)
 WHERE incident_id = $1
RETURNING incident_id;

-- name: IncidentList
-- The incidents of a zone ($1, null: every zone), newest first, at most $2: `ops incidents list`.
-- not null: incident_time
SELECT i.incident_id, i.zone_id, v.code AS vehicle_code, i.incident_type, i.incident_time, i.source, i.trip_id,
       i.telemetry_ts, i.preliminary, i.publication_time, i.last_updated, i.description
  FROM incidents i
  JOIN vehicles v ON v.id = i.device_id
 WHERE $1::text IS NULL OR i.zone_id = $1
 ORDER BY i.publication_time DESC, i.incident_id DESC
 LIMIT $2;

-- name: MdsIncidentsPage
-- One page of /incidents of zone $1 in (publication_time, incident_id) order, with the 2.1 filters
-- ($2 incident_id, $3 incident_type, $4/$5 publication window, $6/$7 last-updated window; null: no
-- filter), after the position ($8 publication_time in µs, $9 incident id), only incidents published
-- before the cut-off ($10, µs), at most $11, skipping $12 first (0 but for a page[number] page, which
-- starts at the nil position): a range scan of incidents (zone_id, publication_time, incident_id).
-- publication_ms, publication_us, last_updated_ms: of NOT NULL columns.
-- not null: publication_ms, publication_us, last_updated_ms
SELECT i.incident_id, i.incident_type,
       floor(extract(epoch FROM i.publication_time) * 1000)::int8 AS publication_ms,
       (extract(epoch FROM i.publication_time) * 1000000)::int8 AS publication_us,
       floor(extract(epoch FROM i.last_updated) * 1000)::int8 AS last_updated_ms,
       i.description, i.severity, i.report_id, i.report_type, i.contact_info, i.preliminary
  FROM incidents i
 WHERE i.zone_id = $1
   AND ($2::uuid IS NULL OR i.incident_id = $2::uuid)
   AND ($3::text IS NULL OR i.incident_type = $3::text)
   AND ($4::timestamptz IS NULL OR i.publication_time >= $4::timestamptz)
   AND ($5::timestamptz IS NULL OR i.publication_time < $5::timestamptz)
   AND ($6::timestamptz IS NULL OR i.last_updated >= $6::timestamptz)
   AND ($7::timestamptz IS NULL OR i.last_updated < $7::timestamptz)
   AND (i.publication_time, i.incident_id) > (timestamptz 'epoch' + $8::int8 * interval '1 microsecond', $9::uuid)
   AND i.publication_time < timestamptz 'epoch' + $10::int8 * interval '1 microsecond'
 ORDER BY i.publication_time, i.incident_id
 LIMIT $11 OFFSET $12;

-- name: MdsIncidentsCount
-- The incidents of zone $1 a page[number] traversal pages through: the filters of MdsIncidentsPage
-- ($2–$7), published before the cut-off ($8, µs).
-- not null: n
-- (The filters written out again rather than read through a set-returning function: the column
-- types sql-types derives, the incident_type enum and NOT NULLs, come from the table's own columns.)
SELECT count(*)::int AS n
  FROM incidents i
 WHERE i.zone_id = $1
   AND ($2::uuid IS NULL OR i.incident_id = $2::uuid)
   AND ($3::text IS NULL OR i.incident_type = $3::text)
   AND ($4::timestamptz IS NULL OR i.publication_time >= $4::timestamptz)
   AND ($5::timestamptz IS NULL OR i.publication_time < $5::timestamptz)
   AND ($6::timestamptz IS NULL OR i.last_updated >= $6::timestamptz)
   AND ($7::timestamptz IS NULL OR i.last_updated < $7::timestamptz)
   AND i.publication_time < timestamptz 'epoch' + $8::int8 * interval '1 microsecond';
