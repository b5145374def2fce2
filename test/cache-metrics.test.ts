/**
 * Named caches (lib/core/cache.ts): every cache of the code has a name of CACHES and reports its
 * entries, bytes, hits, misses and evictions on /metrics; the GBFS memory belongs to whoever made it
 * (publisher/feeds/gbfs/memory.ts), so two contexts in one process never share it.
 */
import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CACHES, NamedCache } from '../lib/core/cache.js';
import { registry } from '../lib/core/metrics.js';
import { ROOT } from '../lib/core/paths.js';
import { GbfsMemory, publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { useTestContext } from './support/context.js';
import { gbfsVehicle, gbfsZone } from './support/gbfs-fixtures.js';

/** `name{cache="…"} value` of the registry's text. */
async function series(name: string, cache: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const m = new RegExp(`^${name}\\{cache="${cache}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('named caches report on /metrics', () => {
  it('counts hits, misses and evictions of get and fetch, and reports entries and bytes at scrape time', async () => {
    const before = {
      hits: (await series('cache_hits_total', 'hot_path_memo')) ?? 0,
      misses: (await series('cache_misses_total', 'hot_path_memo')) ?? 0,
      evictions: (await series('cache_evictions_total', 'hot_path_memo')) ?? 0,
    };
    const c = new NamedCache<string, { n: number }>('hot_path_memo', { max: 2 });
    c.set('a', { n: 1 });
    expect(c.get('a')).to.deep.equal({ n: 1 });
    expect(c.get('b')).to.equal(undefined);
    c.set('b', { n: 2 });
    c.set('c', { n: 3 }); // a, the least recently used, is evicted
    expect(c.get('a')).to.equal(undefined);
    expect(await series('cache_hits_total', 'hot_path_memo')).to.equal(before.hits + 1);
    expect(await series('cache_misses_total', 'hot_path_memo')).to.equal(before.misses + 2);
    expect(await series('cache_evictions_total', 'hot_path_memo')).to.equal(before.evictions + 1);
    expect(await series('cache_entries', 'hot_path_memo')).to.be.at.least(2);

    let loads = 0;
    const fetched = new NamedCache<string, Buffer>('object_bodies', {
      maxSize: 1024,
      sizeCalculation: (b) => b.length,
      fetchMethod: () => {
        loads++;
        return Promise.resolve(Buffer.alloc(100));
      },
    });
    const hits = (await series('cache_hits_total', 'object_bodies')) ?? 0;
    const misses = (await series('cache_misses_total', 'object_bodies')) ?? 0;
    await fetched.fetch('x');
    await fetched.fetch('x');
    expect(loads).to.equal(1);
    expect(await series('cache_misses_total', 'object_bodies')).to.equal(misses + 1);
    expect(await series('cache_hits_total', 'object_bodies')).to.equal(hits + 1);
    expect(await series('cache_size_bytes', 'object_bodies')).to.be.at.least(100);
  });

  it('every name of CACHES is a cache of the code, and every cache of the code has a name', () => {
    const code = ['api', 'lib', 'publisher', 'ops'].flatMap((d) => sources(join(ROOT, d)));
    const named = new Map<string, string[]>();
    for (const file of code) {
      const text = readFileSync(file, 'utf8');
      expect(text, `${relative(ROOT, file)} makes an LRUCache without a name`).not.to.match(/new LRUCache\b/);
      for (const m of text.matchAll(/new (?:NamedCache|CachedRows)(?:<[^(]*>)?\(\s*'([a-z_]+)'/g))
        named.set(m[1], [...(named.get(m[1]) ?? []), relative(ROOT, file)]);
      for (const m of text.matchAll(/super\(\s*'([a-z_]+)'/g)) named.set(m[1], [...(named.get(m[1]) ?? []), relative(ROOT, file)]);
    }
    expect([...named.keys()].sort()).to.deep.equal(Object.keys(CACHES).sort());
  });
});

describe('the GBFS memory belongs to its maker', function () {
  this.timeout(60_000);
  const a = useTestContext();
  const b = useTestContext();

  it('two contexts in one process keep apart: what one built is not held for the other', async () => {
    // one zone id in both databases, with other vehicles
    const zone = 'memory_zone';
    for (const [t, vehicles] of [
      [a, 20],
      [b, 5],
    ] as const) {
      const z = await gbfsZone(t.ctx.db, { id: zone });
      for (let i = 0; i < vehicles; i++) await gbfsVehicle(t.ctx.db, zone, z.lat + i * 0.0001, z.lng);
    }
    const ma = new GbfsMemory();
    const mb = new GbfsMemory();
    expect(await publishGbfsSnapshots(a.ctx, { only: 'all', memory: ma })).to.include({ failed: 0 });
    const heldA = ma.heldBlocks(zone);
    expect(heldA?.flatMap((blk) => blk?.vehicles ?? [])).to.have.length(20);
    expect(mb.heldBlocks(zone), 'the other database has its own memory').to.equal(undefined);
    expect(await publishGbfsSnapshots(b.ctx, { only: 'all', memory: mb })).to.include({ failed: 0 });
    expect(mb.heldBlocks(zone)?.flatMap((blk) => blk?.vehicles ?? [])).to.have.length(5);
    expect(ma.heldBlocks(zone)?.flatMap((blk) => blk?.vehicles ?? [])).to.have.length(20);
  });
});
