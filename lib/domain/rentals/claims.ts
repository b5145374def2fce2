/**
 * Start claims (migration 000260; the two-phase start of lib/domain/rentals/engine.ts): how long a
 * claim holds its vehicle and user, the compensating lock, and the sweep of claims whose process died
 * between the phases.
 */
import type { AppContext } from '../context.js';
import { sql } from '../../core/sql/typed.js';
import { awaitOutside } from '../../core/outside.js';

/**
 * Beyond the gateway's answers a start waits for (the unlock and the beginners' speed limit, each at
 * most GATEWAY_TIMEOUT_MS): the two short transactions, a busy pool, a GC pause. A live process
 * always confirms or releases its claim long before it expires.
 */
const CLAIM_MARGIN_MS = 30_000;

/** When a claim made at `now` stops holding its vehicle and user. */
export function claimExpiry(ctx: Pick<AppContext, 'config'>, now: Date): Date {
  return new Date(now.getTime() + 2 * ctx.config.gateway.timeoutMs + CLAIM_MARGIN_MS);
}

/** A lock command that is not the answer of a request: its failure is logged, never thrown. */
export async function relock(ctx: Pick<AppContext, 'gateway' | 'log'>, vehicleId: string, why: string): Promise<void> {
  try {
    await ctx.gateway.lock(vehicleId);
  } catch (err) {
    ctx.log.error({ err, vehicleId, why }, 'compensating lock failed');
  }
}

const BATCH = 100;

/**
 * The claims left by processes that died between a start's phases (the publisher's rental sweep).
 * Each expired claim is taken for another claim period (so that no start takes its vehicle while
 * the lock goes out), its vehicle locked (the dead process may have unlocked it), and the claim
 * deleted. Several sweepers split the claims (SKIP LOCKED and a conditional update). Returns how many
 * it released.
 */
export async function releaseExpiredClaims(ctx: AppContext): Promise<number> {
  let released = 0;
  for (;;) {
    const now = ctx.clock.now();
    const claims = await ctx.db.many(sql('RentalRenewExpiredClaims'), [now, claimExpiry(ctx, now), BATCH]);
    await awaitOutside(() => Promise.all(claims.map((c) => relock(ctx, c.vehicle_id, 'expired start claim'))));
    for (const c of claims) if (await ctx.db.maybeOne(sql('RentalReleaseClaim'), [c.id])) released++;
    if (claims.length < BATCH) break;
  }
  if (released) ctx.log.warn({ released }, 'expired start claims released');
  return released;
}
