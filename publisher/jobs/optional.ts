/**
 * Jobs owned by other modules (rental housekeeping, TOMP holds, GBFS snapshots), loaded by path at
 * start so that the publisher runs even where one of them does not exist (yet): a missing module or
 * export is logged once and its schedule left out.
 */
import type { AppContext } from '../../lib/context.js';
import type { Logger } from '../../lib/log.js';

export type Sweep = (ctx: AppContext) => Promise<unknown>;

export interface OptionalJobs {
  autoEndIdleRentals?: Sweep;
  expirePhotoWindows?: Sweep;
  expirePendingBookings?: Sweep;
  publishGbfsSnapshots?: Sweep;
}

async function load(spec: string, name: string, log: Logger): Promise<Sweep | undefined> {
  try {
    const mod = (await import(spec)) as Record<string, unknown>;
    const fn = mod[name];
    if (typeof fn === 'function') return (ctx) => (fn as (c: AppContext) => Promise<unknown>)(ctx);
    log.warn({ module: spec, name }, 'scheduled job export missing; not scheduled');
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND') throw err;
    log.warn({ module: spec, name }, 'scheduled job module missing; not scheduled');
  }
  return undefined;
}

export async function loadOptionalJobs(log: Logger): Promise<OptionalJobs> {
  return {
    autoEndIdleRentals: await load('./rentals.js', 'autoEndIdleRentals', log),
    expirePhotoWindows: await load('./rentals.js', 'expirePhotoWindows', log),
    expirePendingBookings: await load('../../lib/tomp/holds.js', 'expirePendingBookings', log),
    publishGbfsSnapshots: await load('../feeds/gbfs/index.js', 'publishGbfsSnapshots', log),
  };
}
