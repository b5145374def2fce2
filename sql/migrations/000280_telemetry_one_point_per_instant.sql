-- One telemetry point per vehicle and instant (issue 41). The ingest (bin/ingest.ts) receives vehicle
-- reports at least once (MQTT QoS 1): a report whose acknowledgement was lost comes again, maybe to
-- another ingest process, maybe at the same moment. The unique index decides, with INSERT … ON
-- CONFLICT DO NOTHING: a vehicle cannot be at two places at one millisecond, so (device_id, ts) is
-- the report's identity. It replaces the plain index on the same columns (same order, so the
-- "latest point of a vehicle" scans keep it).
--
-- History written before may hold such duplicates (two writers of one instant): the later copies
-- are removed first, the append-only trigger set aside for that one statement (the table's owner may;
-- no superuser needed).
ALTER TABLE telemetry DISABLE TRIGGER telemetry_append_only;
DELETE FROM telemetry t
 USING telemetry d
 WHERE d.device_id = t.device_id AND d.ts = t.ts AND d.telemetry_id < t.telemetry_id;
ALTER TABLE telemetry ENABLE TRIGGER telemetry_append_only;

DROP INDEX telemetry_device_ts;
CREATE UNIQUE INDEX telemetry_device_ts ON telemetry (device_id, ts DESC);

-- A vehicle's own state reports (vehicles/{id}/state): its lock, its faults and when it last said
-- so. A report older than the last one applied changes nothing (reports may come out of order).
ALTER TABLE vehicles
  ADD COLUMN state_reported_at timestamptz,
  ADD COLUMN faults text[] NOT NULL DEFAULT '{}';
