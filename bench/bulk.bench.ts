/**
 * Bulk writes benchmark (issue 41): one transaction that changes n vehicles of one zone, timed
 * statement by statement and at its COMMIT, for n = 1,000 and 10,000 (BENCH_BULK_SIZES, e.g.
 * `1000,2000,4000,8000,10000,16000`), each size BENCH_BULK_REPEAT times (3), medians. The change
 * is a report of every vehicle (battery, place, last report), which moves the zone's version and
 * its gbfs_status: what `ops simulate`'s final vehicle update and an import write. Two shapes:
 *   - one UPDATE of the n rows;
 *   - UPDATEs of 100 rows each (n / 100 statements), as a writer in batches does.
 * Goal: a row costs the same in a big transaction as in a small one, the per-row total time of
 * 10,000 rows ÷ 1,000 ≤ 1.2 in each shape. Before migration 000250 the zone's bumps ran once per
 * changed row at commit, each on the same shard row, and the commit grew with the square of n.
 *
 * Runs in a fresh database cloned from the migrated template; `node --import tsx bench/bulk.bench.ts`
 * runs it directly.
 */
import { testConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { cloneDatabase } from '../test/support/db.js';
import { bulkVehicles, feedZone } from '../test/support/feed-fixtures.js';
import { runIfMain } from './main.js';
import type { BenchResult } from './types.js';

const SIZES = (process.env.BENCH_BULK_SIZES ?? '1000,10000').split(',').map(Number);
const REPEAT = Number(process.env.BENCH_BULK_REPEAT ?? 3);
const BATCH = 100;
const GOAL = 1.2;

function median(values: number[]): number {
  const v = [...values].sort((x, y) => x - y);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

const round = (v: number) => Math.round(v * 100) / 100;

/** The vehicles $1, each reporting a new battery, place and time. */
const CHANGE = `UPDATE vehicles SET battery_percent = (battery_percent + 1) % 101,
                      location = ST_Translate(location, 0.00001, 0), last_seen_at = last_seen_at + interval '1 second'
                 WHERE id = ANY ($1::uuid[])`;

export async function run(): Promise<BenchResult> {
  const database = await cloneDatabase();
  const log = createLogger('silent');
  const config = testConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
  const db = new Db(config.databaseUrl, log, { max: 2, statementTimeoutMs: 3_600_000 });
  try {
    const zone = await feedZone(db, { id: 'bulk-zone' });
    const largest = Math.max(...SIZES);
    await bulkVehicles(db, zone, largest, 'K');
    await db.query('ANALYZE vehicles');
    const ids = (await db.many<{ id: string }>(`SELECT id FROM vehicles WHERE zone_id = $1 ORDER BY code`, [zone])).map((r) => r.id);
    const version = async () =>
      (await db.one<{ v: string }>(`SELECT (version + gbfs_status + gbfs_static)::text AS v FROM zone_versions WHERE zone_id = $1`, [zone])).v;

    const metrics: BenchResult['metrics'] = {};
    const perRow: Record<string, Record<number, number>> = { one: {}, batched: {} };
    let transactions = 0;
    for (const shape of ['one', 'batched'] as const) {
      for (const n of SIZES) {
        const totals: number[] = [];
        const commits: number[] = [];
        const bumps: number[] = [];
        for (let i = 0; i < REPEAT; i++) {
          transactions++;
          const before = BigInt(await version());
          // a client of its own, so that the COMMIT is timed alone
          const client = await db.pool.connect();
          try {
            const started = performance.now();
            await client.query('BEGIN');
            if (shape === 'one') await client.query(CHANGE, [ids.slice(0, n)]);
            else for (let off = 0; off < n; off += BATCH) await client.query(CHANGE, [ids.slice(off, Math.min(off + BATCH, n))]);
            const committing = performance.now();
            await client.query('COMMIT');
            const ended = performance.now();
            totals.push(ended - started);
            commits.push(ended - committing);
          } finally {
            client.release();
          }
          bumps.push(Number(BigInt(await version()) - before));
        }
        const total = median(totals);
        const key = `${shape === 'one' ? 'one statement' : `statements of ${BATCH}`}, ${n} rows`;
        metrics[`${key}: total ms`] = round(total);
        metrics[`${key}: commit ms`] = round(median(commits));
        metrics[`${key}: µs per row`] = round((total * 1000) / n);
        metrics[`${key}: counter moves`] = median(bumps);
        perRow[shape][n] = total / n;
      }
    }
    const goals: BenchResult['goals'] = [];
    if (SIZES.includes(1000) && SIZES.includes(10000)) {
      for (const shape of ['one', 'batched'] as const) {
        const metric = `per-row total, 10,000 ÷ 1,000 rows (${shape === 'one' ? 'one statement' : `statements of ${BATCH}`})`;
        const ratio = perRow[shape][10000] / perRow[shape][1000];
        metrics[metric] = round(ratio);
        goals.push({ metric, goal: `≤ ${GOAL}×`, met: ratio <= GOAL });
      }
    }
    return {
      name: 'bulk',
      metrics,
      goals,
      notes: [
        `${transactions} transactions on one zone of ${largest.toLocaleString('en-US')} vehicles; medians of ${REPEAT}`,
        'counter moves: how far the zone’s version + gbfs_status + gbfs_static moved in one transaction',
      ],
    };
  } finally {
    await db.close();
    await database.drop();
  }
}

runIfMain(import.meta.url, run);
