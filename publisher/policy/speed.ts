/**
 * The city's speed limits on the vehicles: every riding vehicle inside a city slow zone in force gets
 * `set_speed` through the vehicle gateway (lib/domain/gateway.ts: the MQTT request/response in
 * production), and its normal limit back when it leaves, the rule ends or the ride ends. What each
 * vehicle should have and what it acknowledged is Postgres's (vehicle_speed_commands, migration
 * 000300): the plan is one statement, a command is claimed (attempt recorded) before it is sent, so
 * several publishers never send one twice, and an acknowledgement counts only for the limit it
 * answers. A vehicle that does not acknowledge (no answer in GATEWAY_TIMEOUT_MS, or a refusal) is
 * retried with a doubling backoff from SPEED_RETRY_SECONDS, counted in the compliance view and in
 * city_policy_speed_commands_total.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { metrics } from '../../lib/core/metrics.js';
import { GatewayError } from '../../lib/domain/gateway.js';

/** The first retry of an unacknowledged command; then 2×, 4×, 8×, 16× (sql/queries/policy.sql PolicySpeedClaim). */
const SPEED_RETRY_SECONDS = 15;
/** Commands claimed per round, and in flight at once. */
const CLAIM = 2000;
const IN_FLIGHT = 1000;

export interface SpeedResult {
  wanted: number;
  released: number;
  sent: number;
  acked: number;
  failed: number;
}

export async function enforceSpeeds(ctx: AppContext, now = ctx.clock.now()): Promise<SpeedResult> {
  const plan = await ctx.db.one(sql('PolicySpeedPlan'), [now]);
  await ctx.db.query(sql('PolicySpeedDeleteRestored'));
  const result: SpeedResult = { ...plan, sent: 0, acked: 0, failed: 0 };
  for (;;) {
    const claimed = await ctx.db.many(sql('PolicySpeedClaim'), [now, SPEED_RETRY_SECONDS, CLAIM]);
    if (!claimed.length) break;
    const acked: Array<{ id: string; kph: number }> = [];
    const failed: Array<{ id: string; kph: number; err: string }> = [];
    const queue = [...claimed];
    const sender = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        try {
          await ctx.gateway.setMaxSpeed(c.vehicle_id, c.wanted_kph);
          acked.push({ id: c.vehicle_id, kph: c.wanted_kph });
        } catch (err) {
          const reason = err instanceof GatewayError ? err.reason : 'error';
          failed.push({ id: c.vehicle_id, kph: c.wanted_kph, err: `${reason}: ${(err as Error).message}`.slice(0, 300) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, queue.length) }, sender));
    const at = ctx.clock.now();
    if (acked.length) await ctx.db.query(sql('PolicySpeedAcked'), [at, acked.map((a) => a.id), acked.map((a) => a.kph)]);
    if (failed.length) await ctx.db.query(sql('PolicySpeedFailed'), [failed.map((f) => f.id), failed.map((f) => f.kph), failed.map((f) => f.err)]);
    metrics.cityPolicySpeedCommands.inc({ outcome: 'acknowledged' }, acked.length);
    metrics.cityPolicySpeedCommands.inc({ outcome: 'unacknowledged' }, failed.length);
    result.sent += claimed.length;
    result.acked += acked.length;
    result.failed += failed.length;
    if (claimed.length < CLAIM) break;
  }
  if (result.sent || result.wanted || result.released) ctx.log.info({ component: 'city-policy', ...result }, 'speed limits commanded');
  return result;
}
