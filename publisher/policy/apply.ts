/**
 * The clock of the city's rules (the `city-speed` queue, every 10 s, and after every read that
 * changed rules): which rules are in force now (lib/domain/policy/mapping.ts `inForce`, in the zone's
 * time zone), the city's areas that follow from them (an `areas` row of source 'city' per mapped rule
 * in force: the rental engine, the partner API, TOMP and the GBFS geofencing files read them as they
 * read the zone file's), then the speed commands (./speed.ts). One transaction for the areas, so a
 * reader sees a rule's area appear or go whole; the GBFS static input of a zone whose areas changed
 * is bumped by the areas' statement triggers (migration 000250) and its files rebuilt on the next
 * GBFS tick.
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { inForce } from '../../lib/domain/policy/mapping.js';

export interface ApplyResult {
  /** rules whose state changed (came into force or left it) */
  changed: number;
  /** zones whose city areas changed */
  zones: string[];
}

export async function applyCityRules(ctx: AppContext, now = ctx.clock.now()): Promise<ApplyResult> {
  return ctx.db.tx(async (tx) => {
    await tx.query(sql('PolicyRulesLock'));
    const rules = await tx.many(sql('PolicyRulesSchedule'));
    const flips = rules
      .map((r) => ({
        r,
        f: inForce({ startsAt: r.starts_at, endsAt: r.ends_at, days: r.days, startTime: r.start_time, endTime: r.end_time }, now, r.timezone),
      }))
      .filter(({ r, f }) => r.in_force !== f);
    if (flips.length)
      await tx.query(sql('PolicyRulesSetInForce'), [
        now,
        flips.map(({ r }) => r.zone_id),
        flips.map(({ r }) => r.policy_id),
        flips.map(({ r }) => r.rule_id),
        flips.map(({ f }) => f),
      ]);
    const removed = await tx.many(sql('PolicyAreasDeleteStale'));
    const added = await tx.many(sql('PolicyAreasInsertInForce'));
    return { changed: flips.length, zones: [...new Set([...removed, ...added].map((z) => z.zone_id))].sort() };
  });
}
