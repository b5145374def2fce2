-- MDS 2.1 incidents (issue 40; MDS PR #944, data-types.md "Incidents", provider/README.md
-- "/incidents"): crashes, unplanned stops, tip-overs… of our vehicles, raised by a TOMP support
-- ticket of type ACCIDENT or BROKEN_DOWN (api/tomp/bookings.ts) or by operator staff (`ops
-- incidents add`), served to cities by GET /v1/partner-apis/mds/{zoneID}/incidents
-- (api/feeds/incidents.ts). lib/domain/incidents.ts writes them; the type mapping is there.
--
-- An MDS 2.1 Incident has no time, place or device of its own: "the time of incident occurrence is
-- found in the Telemetry data points that reference this incident_id". So an incident names one
-- telemetry point of its device (device_id, telemetry_ts: telemetry's unique key, migration
-- 000280), and that point's `incident_ids` lists it (sql/queries/mds.sql MdsTelemetryOfHour,
-- MdsVehicleStatus). incident_time, location and trip_id are kept here for that link and for ops.
--
-- Not history: an incident is updated in place (last_updated moves), so the table is neither
-- partitioned nor under the history guard, and nothing drops it (a few rows a day per zone).
CREATE TABLE incidents (
  incident_id       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  zone_id           text NOT NULL REFERENCES zones (id),
  device_id         uuid NOT NULL REFERENCES vehicles (id),
  -- the trip (rentals.trip_id) the vehicle was on, when it was on one
  trip_id           uuid,
  -- the MDS 2.1 enum, verbatim
  incident_type     text NOT NULL CHECK (incident_type IN ('unplanned_stop', 'remote_takeover', 'tip_over', 'harsh_stopping', 'harsh_starting', 'near_miss', 'vandalism', 'crash')),
  incident_time     timestamptz NOT NULL,
  -- where it happened when the reporter said so (ops --lat/--lng); else the linked point's
  location          geometry(Point, 4326),
  -- the telemetry point of the device that carries this incident (null: none within 30 minutes)
  telemetry_ts      timestamptz,
  source            text NOT NULL CHECK (source IN ('tomp', 'ops')),
  support_ticket_id uuid UNIQUE REFERENCES support_tickets (id),
  description       text CHECK (length(description) <= 5000),
  severity          text CHECK (length(severity) <= 255),
  report_id         text CHECK (length(report_id) <= 255),
  report_type       text CHECK (length(report_type) <= 255),
  contact_info      text CHECK (length(contact_info) <= 500),
  preliminary       boolean,
  -- the transaction's time (now()), as telemetry's recorded_at: the paging cut-off (MdsEventsCutoff)
  -- relies on an incident of a transaction still open being published at or after that transaction's start
  publication_time  timestamptz NOT NULL DEFAULT now(),
  last_updated      timestamptz NOT NULL DEFAULT now(),
  CHECK ((source = 'tomp') = (support_ticket_id IS NOT NULL)),
  CHECK (last_updated >= publication_time)
);

-- the pages of /incidents: (zone, publication_time, incident_id) order, one range scan per page
CREATE INDEX incidents_zone_publication ON incidents (zone_id, publication_time, incident_id);
-- a telemetry point's incident_ids: one probe per point by its key
CREATE INDEX incidents_telemetry_point ON incidents (device_id, telemetry_ts) WHERE telemetry_ts IS NOT NULL;

-- A point that gains (or loses) an incident changes the hourly telemetry file of its hour: mark it
-- dirty as late telemetry does (mark_feed_hours_dirty, migration 000160), so the file is republished
-- with the point's incident_ids.
CREATE FUNCTION incidents_mark_telemetry_dirty() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.telemetry_ts IS NOT DISTINCT FROM NEW.telemetry_ts THEN
    RETURN NULL;
  END IF;
  PERFORM mark_feed_hours_dirty('telemetry', array_agg(zone_id), array_agg(hour))
     FROM (SELECT DISTINCT z AS zone_id, date_trunc('hour', ts AT TIME ZONE 'UTC') AS hour
             FROM (VALUES (NEW.zone_id, NEW.telemetry_ts), (CASE WHEN TG_OP = 'UPDATE' THEN OLD.zone_id END, CASE WHEN TG_OP = 'UPDATE' THEN OLD.telemetry_ts END)) v (z, ts)
            WHERE ts IS NOT NULL) c;
  RETURN NULL;
END $$;

CREATE TRIGGER incidents_telemetry_dirty AFTER INSERT OR UPDATE ON incidents
  FOR EACH ROW EXECUTE FUNCTION incidents_mark_telemetry_dirty();

-- A support ticket that changes (its status: PROCESSING → RESOLVED, its comment) updates its
-- incident: last_updated moves, so a city polling the last-updated window sees it again, and an
-- incident is `preliminary` until its ticket is resolved. Here, not in the code that changes the
-- ticket, so that every way of changing one (today none but SQL, later a console) does it.
CREATE FUNCTION incidents_follow_ticket() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status IS DISTINCT FROM NEW.status OR OLD.comment IS DISTINCT FROM NEW.comment THEN
    UPDATE incidents
       SET preliminary = (NEW.status <> 'RESOLVED'), description = NEW.comment, last_updated = greatest(now(), publication_time)
     WHERE support_ticket_id = NEW.id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER support_tickets_incident AFTER UPDATE ON support_tickets
  FOR EACH ROW EXECUTE FUNCTION incidents_follow_ticket();

-- The telemetry point an incident without a place of its own is linked to: the device's last point
-- at or before the incident's time ("the vehicle's last known position at the time"), else its first
-- point after it, each within 30 minutes; null when the device reported nothing in that hour. One
-- probe of telemetry (device_id, ts DESC) per daily partition of the hour.
CREATE FUNCTION incident_telemetry_point(p_device uuid, p_time timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT t.ts FROM telemetry t WHERE t.device_id = p_device AND t.ts <= p_time AND t.ts >= p_time - interval '30 minutes' ORDER BY t.ts DESC LIMIT 1),
    (SELECT t.ts FROM telemetry t WHERE t.device_id = p_device AND t.ts > p_time AND t.ts <= p_time + interval '30 minutes' ORDER BY t.ts LIMIT 1))
$$;
