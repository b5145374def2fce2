/**
 * The purge of Idempotency-Key records past their 24 hours (api/kit/idempotency.ts), in the
 * publisher's history sweep (every 10 minutes). A record past its time is already ignored by a
 * request that takes its key; the purge only keeps the table at a day of writes. Batches, so that
 * no statement holds many rows' locks.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';

const BATCH = 5000;

export async function purgeIdempotencyRecords(ctx: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const { n } = await ctx.db.one(sql('IdempotencyPurge'), [ctx.clock.now(), BATCH]);
    total += n;
    if (n < BATCH) break;
  }
  if (total) ctx.log.info({ purged: total }, 'expired idempotency records purged');
  return total;
}
