/**
 * Vehicle telemetry (position + battery). Each point is appended to `telemetry` and becomes the
 * vehicle's last known position; `last_moved_at` only advances when it moved more than 5 m, so
 * GPS jitter of a parked vehicle does not count as movement.
 */
import { type Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';

export interface TelemetryInput {
  deviceId: string;
  zoneId: string;
  ts: Date;
  location: { lat: number; lng: number };
  batteryPercent: number;
  tripId?: string | null;
  /** When the point reached us; defaults to the database's now(). */
  recordedAt?: Date;
}

export async function recordTelemetry(q: Queryable, t: TelemetryInput): Promise<void> {
  await q.query(sql('FleetInsertTelemetry'), [
    t.deviceId,
    t.zoneId,
    t.ts,
    t.location.lng,
    t.location.lat,
    Math.max(0, Math.min(100, Math.round(t.batteryPercent))),
    t.tripId ?? null,
    t.recordedAt ?? null,
  ]);
}
