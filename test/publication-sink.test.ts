/**
 * The publication sink, its lock and the serving decision (lib/publication/, issue 27): hourly
 * files, GBFS snapshots and monthly reports are stored gzip and indexed with the sha256 of the
 * stored bytes, whichever writer made them; the sink writes nothing for the same bytes, again when
 * the store lost them, and records no row for an object it could not store; it counts what it
 * writes, by kind, object for object and byte for byte (store_objects_written_total,
 * store_bytes_written_total, store_writes_skipped_total); one writer per unit in the cluster; the
 * decision answers the same request from the same object the same way.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import type { AppContext } from '../lib/domain/context.js';
import { HOUR_MS, parseHour } from '../lib/feeds/hours.js';
import { fragment } from '../lib/core/gzip.js';
import { metrics, STORE_KINDS, type StoreKind } from '../lib/core/metrics.js';
import { GzipSpool, gzipBytes, stitchedBytes, type StoredBytes } from '../publisher/publication/bytes.js';
import { REPORT_INDEX, type ReportIndexRow } from '../publisher/publication/indexes.js';
import { gbfsUnit, tryPublicationLock, withPublicationLock } from '../publisher/publication/lock.js';
import { answerOf, hourFile, hourlyObject, servedObject, type ConditionalRequest } from '../api/kit/serve.js';
import { PublicationSink } from '../publisher/publication/sink.js';
import type { ObjectMeta, ObjectStore } from '../lib/core/store/types.js';
import { buildGbfsZone, GbfsMemory, publishGbfsSnapshots } from '../publisher/feeds/gbfs/index.js';
import { publishHourSet } from '../publisher/publish.js';
import { publishDueReports } from '../publisher/reports.js';
import { useTestContext } from './support/context.js';
import { feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function bytesOf(body: Buffer | Readable): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function stored(store: ObjectStore, key: string): Promise<{ meta: ObjectMeta; bytes: Buffer } | undefined> {
  const o = await store.get(key);
  return o && { meta: o.meta, bytes: await bytesOf(o.body) };
}

/** The sink's counters of each kind now (lib/core/metrics.ts). */
async function storeCounts(): Promise<Record<StoreKind, { written: number; bytes: number; skipped: number }>> {
  const of = async (c: typeof metrics.storeObjectsWritten, kind: StoreKind) => (await c.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;
  const out = {} as Record<StoreKind, { written: number; bytes: number; skipped: number }>;
  for (const kind of STORE_KINDS) {
    out[kind] = {
      written: await of(metrics.storeObjectsWritten, kind),
      bytes: await of(metrics.storeBytesWritten, kind),
      skipped: await of(metrics.storeWritesSkipped, kind),
    };
  }
  return out;
}

/** What the counters moved by since `before`, per kind. */
async function countsSince(before: Awaited<ReturnType<typeof storeCounts>>) {
  const now = await storeCounts();
  const d = (k: StoreKind) => ({
    written: now[k].written - before[k].written,
    bytes: now[k].bytes - before[k].bytes,
    skipped: now[k].skipped - before[k].skipped,
  });
  return { hourly: d('hourly'), gbfs: d('gbfs'), report: d('report') };
}

/** Counts puts; `fail` makes every put throw. */
function countingStore(inner: ObjectStore, fail = false) {
  const w = {
    ...inner,
    puts: 0,
    head: inner.head.bind(inner),
    get: inner.get.bind(inner),
    async put(key: string, body: Buffer | Readable, o: Parameters<ObjectStore['put']>[2]) {
      w.puts++;
      if (fail) throw new Error('store unavailable');
      return inner.put(key, body, o);
    },
  };
  return w;
}

describe('publication: stored bytes', () => {
  it('describe exactly the gzip bytes they give, whichever way they are made', async () => {
    const text = JSON.stringify({ trips: Array.from({ length: 2000 }, (_, i) => ({ trip_id: `t${i}` })) });
    const dir = await mkdtemp(join(tmpdir(), 'spool-'));
    const spool = new GzipSpool(join(dir, 'file.gz'), '{"a":');
    spool.write(text);
    const made: Array<[string, StoredBytes, string]> = [
      ['gzipBytes', gzipBytes(text), text],
      ['stitchedBytes', stitchedBytes([fragment('{"a":'), fragment(text), fragment('}')]), `{"a":${text}}`],
      ['GzipSpool', await spool.end('}'), `{"a":${text}}`],
    ];
    for (const [how, s, plain] of made) {
      const gz = await bytesOf(s.body());
      expect(s.sha256, how).to.equal(sha(gz));
      expect(s.bytes, how).to.equal(gz.length);
      expect(gunzipSync(gz).toString(), how).to.equal(plain);
      // a second reader gives the same bytes (a put may be repeated)
      expect((await bytesOf(s.body())).equals(gz), how).to.equal(true);
    }
    await rm(dir, { recursive: true, force: true });
  });
});

describe('publication: the sink', () => {
  const t = useTestContext({ now: '2026-11-21T12:00:00Z' });
  const row = (key: string, s: StoredBytes): ReportIndexRow => ({ zone: '', month: '2026-10', key, sha256: s.sha256, bytes: s.bytes, rows: 1 });

  it('writes gzip with the sha256 of the stored bytes; the same bytes again write nothing; a lost object is written again; force rewrites', async () => {
    const store = countingStore(t.ctx.store);
    const sink = new PublicationSink<ReportIndexRow>(store, REPORT_INDEX);
    const key = 'test/sink/a.csv.gz';
    const s = gzipBytes('a,b\n1,2\n');
    const other = gzipBytes('a,b\n1,3\n');
    const before = await storeCounts();
    const first = await sink.put(undefined, { key, stored: s, contentType: 'text/csv' }, (o) => [row(o.key, s)]);
    expect(first).to.deep.equal({ key, sha256: s.sha256, bytes: s.bytes, outcome: 'written' });
    const obj = (await stored(t.ctx.store, key))!;
    expect(obj.meta).to.include({ contentEncoding: 'gzip', contentType: 'text/csv', size: s.bytes });
    expect(obj.meta.metadata.sha256).to.equal(sha(obj.bytes));

    const prev = { sha256: s.sha256, object_key: key };
    expect((await sink.put(prev, { key, stored: s, contentType: 'text/csv' }, () => [])).outcome).to.equal('unchanged');
    expect(store.puts).to.equal(1);
    // another key or other bytes are not "the same"
    expect((await sink.put(prev, { key, stored: other, contentType: 'text/csv' }, () => [])).outcome).to.equal('written');
    expect((await sink.put(prev, { key: 'test/sink/b.csv.gz', stored: s, contentType: 'text/csv' }, () => [])).outcome).to.equal('written');
    await t.ctx.store.delete(key);
    expect((await sink.put(prev, { key, stored: s, contentType: 'text/csv' }, () => [])).outcome).to.equal('written');
    expect((await sink.put(prev, { key, stored: s, contentType: 'text/csv' }, () => [], { force: true })).outcome).to.equal('written');
    expect(store.puts).to.equal(5);
    // counted as the report index's kind, whatever the key: five objects written, one found unchanged
    expect(await countsSince(before)).to.deep.equal({
      hourly: { written: 0, bytes: 0, skipped: 0 },
      gbfs: { written: 0, bytes: 0, skipped: 0 },
      report: { written: 5, bytes: 4 * s.bytes + other.bytes, skipped: 1 },
    });
  });

  it('records an index row only for an object the store took', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-09-01T00:00:00Z') });
    const s = gzipBytes('x\n');
    const failing = new PublicationSink<ReportIndexRow>(countingStore(t.ctx.store, true), REPORT_INDEX);
    const r = { ...row(`test/sink/${zone}.csv.gz`, s), zone };
    let err: unknown;
    const before = await storeCounts();
    await failing.put(undefined, { key: r.key, stored: s, contentType: 'text/csv' }, () => [r]).catch((e: unknown) => (err = e));
    expect(String(err)).to.match(/store unavailable/);
    expect((await countsSince(before)).report, 'a put that failed wrote nothing').to.deep.equal({ written: 0, bytes: 0, skipped: 0 });
    await failing.flush(t.ctx.db, t.ctx.clock.now());
    expect(await t.ctx.db.many(`SELECT 1 FROM feed_reports WHERE scope = $1`, [zone])).to.deep.equal([]);

    const sink = new PublicationSink<ReportIndexRow>(t.ctx.store, REPORT_INDEX);
    await sink.put(undefined, { key: r.key, stored: s, contentType: 'text/csv' }, () => [r]);
    await sink.flush(t.ctx.db, t.ctx.clock.now());
    expect(await t.ctx.db.one(`SELECT object_key, sha256, bytes FROM feed_reports WHERE scope = $1`, [zone])).to.deep.equal({
      object_key: r.key,
      sha256: s.sha256,
      bytes: s.bytes,
    });
  });
});

describe('publication: every writer indexes the sha256 of the stored bytes', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T12:00:00Z' });

  it('hourly files, GBFS snapshots and monthly reports: gzip objects whose bytes hash to their row', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-10-01T00:00:00Z') });
    const v = await feedVehicle(t.ctx.db, zone);
    await feedTrip(t.ctx.db, { deviceId: v.id, zoneId: zone, start: new Date('2026-10-05T09:00:00Z'), end: new Date('2026-10-05T09:20:00Z') });
    await feedTrip(t.ctx.db, { deviceId: v.id, zoneId: zone, start: new Date('2026-11-21T09:00:00Z'), end: new Date('2026-11-21T09:20:00Z') });
    // every put of the three writers, seen by the store: the counters move by exactly these
    const puts: Array<{ key: string; size: number }> = [];
    const inner = t.ctx.store;
    const store: ObjectStore = {
      put: async (key, body, o) => {
        const meta = await inner.put(key, body, o);
        puts.push({ key, size: meta.size });
        return meta;
      },
      get: (key) => inner.get(key),
      head: (key) => inner.head(key),
      list: (prefix) => inner.list(prefix),
      delete: (key) => inner.delete(key),
      check: () => inner.check(),
      close: () => inner.close(),
    };
    const ctx = { ...t.ctx, store };
    const before = await storeCounts();
    await publishHourSet(ctx, zone, parseHour('2026-11-21T09')!);
    await publishGbfsSnapshots(ctx);
    await publishDueReports(ctx);
    const kindOf = (key: string): StoreKind => (key.startsWith('gbfs/') ? 'gbfs' : key.includes('/reports/') ? 'report' : 'hourly');
    const seen = Object.fromEntries(STORE_KINDS.map((k) => [k, { written: 0, bytes: 0, skipped: 0 }])) as Record<
      StoreKind,
      { written: number; bytes: number; skipped: number }
    >;
    for (const p of puts) {
      seen[kindOf(p.key)].written++;
      seen[kindOf(p.key)].bytes += p.size;
    }
    for (const k of STORE_KINDS) expect(seen[k].written, k).to.be.greaterThan(0);
    expect(await countsSince(before)).to.deep.equal(seen);

    const rows = [
      ...(await t.ctx.db.many<{ kind: string; object_key: string; sha256: string; bytes: number }>(
        `SELECT 'hourly' AS kind, object_key, sha256, bytes FROM feed_publications WHERE scope = $1`,
        [zone],
      )),
      ...(await t.ctx.db.many<{ kind: string; object_key: string; sha256: string; bytes: number }>(
        `SELECT 'gbfs' AS kind, object_key, sha256, bytes FROM gbfs_snapshots WHERE scope = $1`,
        [zone],
      )),
      ...(await t.ctx.db.many<{ kind: string; object_key: string; sha256: string; bytes: number }>(
        `SELECT 'report' AS kind, object_key, sha256, bytes FROM feed_reports WHERE scope = $1`,
        [zone],
      )),
    ];
    expect(new Set(rows.map((r) => r.kind))).to.deep.equal(new Set(['hourly', 'gbfs', 'report']));
    for (const r of rows) {
      const obj = (await stored(t.ctx.store, r.object_key))!;
      expect(obj.meta.contentEncoding, r.object_key).to.equal('gzip');
      expect(r.sha256, r.object_key).to.equal(sha(obj.bytes));
      expect(obj.meta.metadata.sha256, r.object_key).to.equal(r.sha256);
      expect(Number(r.bytes), r.object_key).to.equal(obj.bytes.length);
      gunzipSync(obj.bytes);
    }
    const report = rows.find((r) => r.kind === 'report')!;
    expect(report.object_key).to.equal(`mds/2.0/${zone}/reports/2026-10.csv.gz`);
    expect((await stored(t.ctx.store, report.object_key))!.meta.contentType).to.equal('text/csv; charset=utf-8');
    // GBFS keeps its data's digest beside it, to tell unchanged data without compressing it again
    expect((await t.ctx.db.many(`SELECT 1 FROM gbfs_snapshots WHERE scope = $1 AND content_digest IS NULL`, [zone])).length).to.equal(0);
    const written = await storeCounts();
    const again = await publishGbfsSnapshots(ctx);
    expect(again.written).to.equal(0);
    expect((await countsSince(written)).gbfs.written, 'nothing written, nothing counted').to.equal(0);
  });
});

describe('publication: the lock', () => {
  const t = useTestContext();
  const ctx = (): AppContext => t.ctx;

  it('one writer per unit across connections: a try leaves a held unit alone, a waiter gets it once released', async () => {
    let release!: () => void;
    const holding = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const first = withPublicationLock(ctx(), ['unit/b', 'unit/a'], async () => {
      entered();
      await holding;
      return 'first';
    });
    await inside;
    expect(await tryPublicationLock(ctx(), 'unit/a', () => Promise.resolve('second'))).to.deep.equal({ locked: false });
    expect(await tryPublicationLock(ctx(), 'unit/c', () => Promise.resolve('other unit'))).to.deep.equal({ locked: true, value: 'other unit' });
    const order: string[] = [];
    const waiter = withPublicationLock(ctx(), ['unit/b'], () => Promise.resolve(void order.push('waiter')));
    await new Promise((r) => setTimeout(r, 100));
    order.push('release');
    release();
    expect(await first).to.equal('first');
    await waiter;
    expect(order).to.deep.equal(['release', 'waiter']);
    expect(await tryPublicationLock(ctx(), 'unit/a', () => Promise.resolve('free'))).to.deep.equal({ locked: true, value: 'free' });
  });

  it('a GBFS build leaves a zone another process holds to it, and builds it once free', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-10-01T00:00:00Z') });
    let release!: () => void;
    const holding = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const other = withPublicationLock(ctx(), [gbfsUnit('zone', zone)], async () => {
      entered();
      await holding;
    });
    await inside;
    expect(await buildGbfsZone(t.ctx, new GbfsMemory(), zone, { force: 'all' })).to.include({ busy: true, written: 0 });
    release();
    await other;
    const built = await buildGbfsZone(t.ctx, new GbfsMemory(), zone, { force: 'all' });
    expect(built.busy).to.equal(false);
    expect(built.written).to.be.greaterThan(0);
  });

  it('an error of the writer releases its locks; a failed transaction rolls back', async () => {
    await withPublicationLock(ctx(), ['unit/x'], (held) =>
      held.tx(async (tx) => {
        await tx.query(`CREATE TEMP TABLE lock_probe (n int)`);
        throw new Error('writer failed');
      }),
    ).catch((e: unknown) => expect(String(e)).to.match(/writer failed/));
    expect(
      await tryPublicationLock(ctx(), 'unit/x', async (held) => (await held.conn.many(`SELECT 1 FROM pg_tables WHERE tablename = 'lock_probe'`)).length),
    ).to.deep.equal({ locked: true, value: 0 });
  });
});

describe('publication: the serving decision', () => {
  const meta = (over: Partial<ObjectMeta> = {}): ObjectMeta => ({
    key: 'k',
    size: 42,
    contentType: 'application/json',
    contentEncoding: 'gzip',
    etag: '"abc"',
    lastModified: new Date('2026-11-21T09:05:00Z'),
    metadata: {},
    ...over,
  });
  const req = (over: Partial<ConditionalRequest> = {}): ConditionalRequest => ({
    head: false,
    ifNoneMatch: undefined,
    ifModifiedSince: undefined,
    acceptsGzip: true,
    ...over,
  });
  const rule = { cacheControl: 'private, max-age=60', contentType: 'application/vnd.mds+json;version=2.0' };

  it('an hour that has not ended, or before its zone, does not exist; a closed hour serves only a current row', () => {
    const h = Date.parse('2026-11-21T09:00:00Z');
    expect(hourFile(h, h + HOUR_MS - 1, 0)).to.equal('not_in_past');
    expect(hourFile(h, h + HOUR_MS, h + HOUR_MS)).to.equal('before_zone');
    expect(hourFile(h, h + HOUR_MS, h)).to.equal('closed');
    const published = { status: 'published' as const, dirty: false, object_key: 'k', sha256: 's' };
    expect(hourlyObject(published)).to.deep.equal({ key: 'k', version: 'k|s' });
    // one object per row: the hot path allocates nothing per request
    expect(hourlyObject(published)).to.equal(hourlyObject(published));
    for (const r of [
      undefined,
      { ...published, dirty: true },
      { ...published, status: 'failed' as const },
      { ...published, status: 'pending' as const },
      { ...published, object_key: null },
    ]) {
      expect(hourlyObject(r), JSON.stringify(r)).to.equal(undefined);
    }
    expect(servedObject({ object_key: null, sha256: null })).to.equal(undefined);
  });

  it('200 with the stored gzip, decoded with a weak ETag, 304 on either validator, HEAD without a body; answers built once per object', () => {
    const m = meta();
    const full = answerOf({ meta: m }, req(), rule);
    expect(full).to.deep.equal({
      status: 200,
      body: 'stored',
      headers: [
        'ETag',
        '"abc"',
        'Last-Modified',
        'Sat, 21 Nov 2026 09:05:00 GMT',
        'Cache-Control',
        rule.cacheControl,
        'Vary',
        'Accept-Encoding',
        'Content-Type',
        rule.contentType,
        'Content-Encoding',
        'gzip',
        'Content-Length',
        '42',
      ],
    });
    expect(answerOf({ meta: m }, req(), rule)).to.equal(full);
    expect(answerOf({ meta: m }, req({ head: true }), rule)).to.deep.equal({ ...full, body: 'none' });
    const decoded = answerOf({ meta: m }, req({ acceptsGzip: false }), rule);
    expect(decoded.body).to.equal('decoded');
    expect(decoded.headers.slice(0, 2)).to.deep.equal(['ETag', 'W/"abc"']);
    expect(decoded.headers).to.not.include('Content-Length');
    const nm = answerOf({ meta: m }, req({ ifNoneMatch: '"abc"' }), rule);
    expect(nm).to.deep.equal({ status: 304, body: 'none', headers: full.headers.slice(0, 8) });
    expect(answerOf({ meta: m }, req({ acceptsGzip: false, ifNoneMatch: 'W/"abc"' }), rule).status).to.equal(304);
    expect(answerOf({ meta: m }, req({ ifNoneMatch: '"other"', ifModifiedSince: 'Sat, 21 Nov 2026 10:00:00 GMT' }), rule).status).to.equal(200);
    expect(answerOf({ meta: m }, req({ ifModifiedSince: 'Sat, 21 Nov 2026 10:00:00 GMT' }), rule).status).to.equal(304);
    expect(answerOf({ meta: m }, req({ ifModifiedSince: 'Sat, 21 Nov 2026 09:00:00 GMT' }), rule).status).to.equal(200);
  });

  it('an object stored without gzip goes out as it is, whatever the client accepts', () => {
    const plain = answerOf({ meta: meta({ contentEncoding: undefined, contentType: 'text/csv' }) }, req({ acceptsGzip: false }), { cacheControl: 'private' });
    expect(plain).to.deep.equal({
      status: 200,
      body: 'stored',
      headers: [
        'ETag',
        '"abc"',
        'Last-Modified',
        'Sat, 21 Nov 2026 09:05:00 GMT',
        'Cache-Control',
        'private',
        'Content-Type',
        'text/csv',
        'Content-Length',
        '42',
      ],
    });
  });
});
