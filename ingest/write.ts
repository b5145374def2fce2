/**
 * One batch of vehicle reports, one transaction (sql/queries/ingest.sql): the batch's vehicles
 * locked in id order, every position appended to telemetry with the vehicle's current state, every
 * state report applied, and the MDS events the reports imply (ingest/events.ts) recorded through the
 * state machine. A few statements whatever the batch's size: the cost is in the rows, not in round
 * trips. A redelivered report (the same vehicle and ts) is not stored twice (migration 000280's
 * unique index), and a report older than what the vehicle has reported since goes to history only.
 */
import type { Tx } from '../lib/core/db.js';
import { sql } from '../lib/core/sql/typed.js';
import { recordEvent } from '../lib/domain/fleet/events.js';
import { impliedEvent, mayImplyEvent } from './events.js';
import type { Report } from './reports.js';

export interface Received {
  report: Report;
  receivedAt: Date;
}

export interface BatchResult {
  telemetry: { stored: number; duplicate: number };
  state: { applied: number; stale: number };
  /** the reports of vehicles the platform does not know, by channel */
  unknown: { telemetry: number; state: number };
  events: Array<{ vehicleId: string; eventType: string }>;
}

export async function writeBatch(tx: Tx, batch: readonly Received[]): Promise<BatchResult> {
  const ids = [...new Set(batch.map((r) => r.report.vehicleId))];
  const known = new Map((await tx.many(sql('IngestLockVehicles'), [ids])).map((v) => [v.id, v]));
  const result: BatchResult = { telemetry: { stored: 0, duplicate: 0 }, state: { applied: 0, stale: 0 }, unknown: { telemetry: 0, state: 0 }, events: [] };

  // what the batch reported of each vehicle that bears on the events it may imply (ingest/events.ts)
  const reported = new Map<string, { batteries: number[]; faulty: boolean }>();
  const t = { ids: [] as string[], ts: [] as Date[], lng: [] as number[], lat: [] as number[], battery: [] as number[], received: [] as Date[] };
  const s = { ids: [] as string[], ts: [] as Date[], locked: [] as boolean[], battery: [] as Array<number | null>, faults: [] as string[] };
  for (const { report, receivedAt } of batch) {
    if (!known.has(report.vehicleId)) {
      result.unknown[report.channel]++;
      continue;
    }
    const r = reported.get(report.vehicleId) ?? { batteries: [], faulty: false };
    reported.set(report.vehicleId, r);
    if (report.body.battery_percent !== undefined) r.batteries.push(report.body.battery_percent);
    if (report.channel === 'state' && (report.body.faults?.length ?? 0) > 0) r.faulty = true;
    if (report.channel === 'telemetry') {
      t.ids.push(report.vehicleId);
      t.ts.push(report.ts);
      t.lng.push(report.body.lng);
      t.lat.push(report.body.lat);
      t.battery.push(report.body.battery_percent);
      t.received.push(receivedAt);
    } else {
      s.ids.push(report.vehicleId);
      s.ts.push(report.ts);
      s.locked.push(report.body.locked);
      s.battery.push(report.body.battery_percent ?? null);
      s.faults.push(toPgArray(report.body.faults ?? []));
    }
  }
  if (t.ids.length > 0) {
    const r = await tx.one(sql('IngestTelemetry'), [t.ids, t.ts, t.lng, t.lat, t.battery, t.received]);
    result.telemetry = { stored: r.stored, duplicate: t.ids.length - r.stored };
  }
  if (s.ids.length > 0) {
    const applied = (await tx.many(sql('IngestState'), [s.ids, s.ts, s.locked, s.battery, s.faults])).length;
    result.state = { applied, stale: s.ids.length - applied };
  }
  const candidates = [...reported].filter(([id, r]) => mayImplyEvent(known.get(id)!, r.batteries, r.faulty)).map(([id]) => id);
  if (candidates.length > 0) {
    for (const c of await tx.many(sql('IngestImpliedEventCandidates'), [candidates])) {
      const implied = impliedEvent(known.get(c.id)!, c);
      if (!implied) continue;
      await recordEvent(tx, {
        deviceId: c.id,
        zoneId: c.zone_id,
        eventTypes: [implied.eventType],
        vehicleState: implied.vehicleState,
        // the moment the vehicle said so, after the vehicle's last event (the feeds order a vehicle's
        // events by time, and two of one instant would have no order)
        ts: c.last_event_ts && c.last_event_ts >= c.last_seen_at ? new Date(c.last_event_ts.getTime() + 1) : c.last_seen_at,
        location: { lat: c.lat, lng: c.lng },
        batteryPercent: c.battery_percent,
        lockedState: c.mds_state,
      });
      await tx.query(sql('IngestSetStatus'), [c.id, implied.status]);
      result.events.push({ vehicleId: c.id, eventType: implied.eventType });
    }
  }
  return result;
}

/** A Postgres array literal of fault codes (schema-checked: lower-case letters, digits and _ only). */
function toPgArray(codes: readonly string[]): string {
  return `{${codes.join(',')}}`;
}
