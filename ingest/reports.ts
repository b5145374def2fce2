/**
 * What the ingest makes of one MQTT message: a vehicle's telemetry or state report, or the reason it
 * is refused. Decided here, once, before anything touches the database; the refused are counted by
 * reason (ingest_rejected_total), sampled into the log (ingest/index.ts) and dropped, never retried:
 * the same bytes would be refused again, and a stream that waited for them would stop for every
 * vehicle behind.
 *
 * Refused:
 * - `topic`: not a vehicle's telemetry or state topic (lib/domain/vehicles/protocol.ts);
 * - `malformed_json`: not a JSON object in UTF-8;
 * - `schema`: not a VehicleTelemetry / VehicleState (schemas/vehicles/messages.ts: coordinates and
 *   battery out of their ranges included);
 * - `impossible_position`: 0°, 0° (a receiver without a fix reports it);
 * - `future`: stamped more than INGEST_MAX_AHEAD_MS ahead of this process's clock (a vehicle's clock
 *   that is wrong: storing it would put the vehicle's current state in the future);
 * - `too_old`: taken more than INGEST_MAX_AGE_HOURS ago (older than any hour the feeds republish);
 * - `flood`: beyond INGEST_MAX_REPORTS_PER_MINUTE of one vehicle (FloodGuard);
 * - `unknown_vehicle` is decided by the batch's write, against the vehicles table (ingest/write.ts).
 */
import { compile, describeErrors } from '../lib/core/validate.js';
import { parseVehicleTopic } from '../lib/domain/vehicles/protocol.js';
import { VehicleStateSchema, VehicleTelemetrySchema, type VehicleState, type VehicleTelemetry } from '../schemas/vehicles/messages.js';

export const REJECT_REASONS = ['topic', 'malformed_json', 'schema', 'impossible_position', 'future', 'too_old', 'flood', 'unknown_vehicle'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export type Report =
  { channel: 'telemetry'; vehicleId: string; ts: Date; body: VehicleTelemetry } | { channel: 'state'; vehicleId: string; ts: Date; body: VehicleState };

export type Decoded = { ok: true; report: Report } | { ok: false; reason: RejectReason; channel: string; detail: string; vehicleId?: string };

const validTelemetry = compile<VehicleTelemetry>(VehicleTelemetrySchema);
const validState = compile<VehicleState>(VehicleStateSchema);

export interface DecodeLimits {
  maxAheadMs: number;
  maxAgeHours: number;
}

export function decodeReport(topic: string, payload: Buffer, now: number, limits: DecodeLimits): Decoded {
  const at = parseVehicleTopic(topic);
  if (!at || (at.channel !== 'telemetry' && at.channel !== 'state'))
    return { ok: false, reason: 'topic', channel: 'other', detail: `not a report topic: ${topic.slice(0, 200)}` };
  const { vehicleId, channel } = at;
  let body: unknown;
  try {
    body = JSON.parse(payload.toString('utf8'));
  } catch (err) {
    return { ok: false, reason: 'malformed_json', channel, vehicleId, detail: (err as Error).message };
  }
  const valid = channel === 'telemetry' ? validTelemetry : validState;
  if (!valid(body)) return { ok: false, reason: 'schema', channel, vehicleId, detail: describeErrors(valid.errors) };
  const report = body;
  if (channel === 'telemetry' && (report as VehicleTelemetry).lat === 0 && (report as VehicleTelemetry).lng === 0)
    return { ok: false, reason: 'impossible_position', channel, vehicleId, detail: 'lat 0, lng 0: no fix' };
  if (report.ts > now + limits.maxAheadMs) return { ok: false, reason: 'future', channel, vehicleId, detail: `ts ${report.ts} is ${report.ts - now} ms ahead` };
  if (report.ts < now - limits.maxAgeHours * 3_600_000)
    return { ok: false, reason: 'too_old', channel, vehicleId, detail: `ts ${report.ts} is older than ${limits.maxAgeHours} h` };
  const ts = new Date(report.ts);
  return {
    ok: true,
    report: channel === 'telemetry' ? { channel, vehicleId, ts, body: report as VehicleTelemetry } : { channel, vehicleId, ts, body: report as VehicleState },
  };
}

/**
 * One token bucket per vehicle, in the vehicle's own time: `perMinute` reports a minute of report
 * timestamps, bursts of as many. A vehicle that sends more (a firmware loop, a replay of one instant)
 * is refused beyond it, so that it cannot take the batches of the others. Report time, not arrival
 * time: a vehicle that uploads the hour it spent offline, or the backlog the broker kept for an
 * ingest that restarted, arrives in seconds but spans its hour, and is no flood. A vehicle cannot buy
 * itself tokens with made-up timestamps: they may run at most INGEST_MAX_AHEAD_MS ahead of the clock
 * (decodeReport). Buckets of vehicles that fell silent are dropped by `sweep` (ingest/index.ts runs it
 * every minute): memory follows the vehicles reporting, not every vehicle ever seen.
 */
export class FloodGuard {
  private readonly buckets = new Map<string, { tokens: number; ts: number; seen: number }>();
  private readonly perMs: number;

  constructor(private readonly perMinute: number) {
    this.perMs = perMinute / 60_000;
  }

  allow(vehicleId: string, ts: number, now: number): boolean {
    const b = this.buckets.get(vehicleId);
    if (!b) {
      this.buckets.set(vehicleId, { tokens: this.perMinute - 1, ts, seen: now });
      return true;
    }
    // a report older than the last one (out of order) refills nothing
    if (ts > b.ts) {
      b.tokens = Math.min(this.perMinute, b.tokens + (ts - b.ts) * this.perMs);
      b.ts = ts;
    }
    b.seen = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Drops the buckets of vehicles that sent nothing for a minute. */
  sweep(now: number): void {
    for (const [id, b] of this.buckets) if (now - b.seen >= 60_000) this.buckets.delete(id);
  }
}
