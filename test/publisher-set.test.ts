/**
 * The single-pass publisher (publishHourSet: each source read once, fanned out to every file of the
 * hour) writes the same files as publishing them one by one, and one file's failure does not stop
 * the others of its hour.
 */
import { expect } from 'chai';
import { gunzipSync } from 'node:zlib';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { FeedValidationError, publishHour, publishHourSet, type HourFileResult } from '../publisher/publish.js';
import { feedById, HOURLY_FEEDS, objectKey } from '../lib/feeds/publications.js';
import { parseHour } from '../lib/feeds/hours.js';
import type { ObjectStore } from '../lib/core/store/types.js';

const H9 = parseHour('2026-11-21T09')!;
const at = (iso: string) => new Date(iso);

async function readText(store: ObjectStore, key: string): Promise<string | undefined> {
  const obj = await store.get(key);
  if (!obj) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of obj.body) chunks.push(c as Buffer);
  return gunzipSync(Buffer.concat(chunks)).toString('utf8');
}

async function fill(db: Parameters<typeof feedZone>[0], zone: string, n: number): Promise<void> {
  const v = await feedVehicle(db, zone);
  const b = await feedVehicle(db, zone, { type: 'feed-bike' });
  for (let i = 0; i < n; i++) {
    const dev = i % 2 ? v.id : b.id;
    const start = new Date(H9.getTime() + i * 60_000);
    const end = new Date(start.getTime() + 30_000);
    const trip = await feedTrip(db, { deviceId: dev, zoneId: zone, start, end, tripType: i % 3 ? 'rider' : 'maas' });
    await feedEvent(db, { deviceId: dev, zoneId: zone, ts: start, eventTypes: ['trip_start'], state: 'on_trip', tripIds: [trip] });
    await feedEvent(db, { deviceId: dev, zoneId: zone, ts: end, eventTypes: ['trip_end'], state: 'available', tripIds: [trip], battery: i % 4 ? 70 : null });
  }
  await feedEvent(db, { deviceId: v.id, zoneId: zone, ts: at('2026-11-21T09:59:00Z'), eventTypes: ['reservation_start'], state: 'reserved' });
}

describe('publisher: one pass per hour (publishHourSet)', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T12:00:00Z' });

  it('writes, byte for byte, the files that publishing them one by one writes', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T00:00:00Z') });
    await fill(t.ctx.db, zone, 40);
    const set = await publishHourSet(t.ctx, zone, H9);
    expect(set.map((r) => r.outcome)).to.deep.equal(HOURLY_FEEDS.map(() => 'written'));
    const texts = new Map<string, string>();
    for (const f of HOURLY_FEEDS) texts.set(f.id, (await readText(t.ctx.store, objectKey(f, zone, H9)))!);
    expect(JSON.parse(texts.get('mds-2.0-trips')!).trips).to.have.length(40);
    // 0.4 has no record for a reservation without a trip: one fewer than 1.2
    expect(JSON.parse(texts.get('mds-0.4-status_changes')!).data.status_changes).to.have.length(80);
    expect(JSON.parse(texts.get('mds-1.2-status_changes')!).data.status_changes).to.have.length(81);

    for (const f of HOURLY_FEEDS) {
      const one = await publishHour(t.ctx, f, zone, H9, { force: true });
      const inSet = set.find((r) => r.feed === f.id) as Exclude<HourFileResult, { outcome: 'failed' }>;
      expect(one).to.include({ outcome: 'written', sha256: inSet.sha256, records: inSet.records, bytes: inSet.bytes });
      expect(await readText(t.ctx.store, objectKey(f, zone, H9))).to.equal(texts.get(f.id));
    }
    // and the set again: same content, nothing written
    const again = await publishHourSet(t.ctx, zone, H9);
    expect(again.map((r) => r.outcome)).to.deep.equal(HOURLY_FEEDS.map(() => 'unchanged'));
  });

  it('a file that fails validation is failed alone; the other files of the hour are published', async () => {
    // an empty city is fine for MDS but not for our insurance schema (minLength 1)
    const zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T00:00:00Z'), city: '' });
    await fill(t.ctx.db, zone, 3);
    const res = await publishHourSet(t.ctx, zone, H9);
    const failed = res.filter((r) => r.outcome === 'failed');
    expect(failed.map((r) => r.feed)).to.deep.equal(['insurance-2.0-trips']);
    expect((failed[0] as { error: Error }).error).to.be.instanceOf(FeedValidationError);
    expect(res.filter((r) => r.outcome === 'written')).to.have.length(HOURLY_FEEDS.length - 1);
    const rows = await t.ctx.db.many(`SELECT feed, version, status, last_error FROM feed_publications WHERE scope = $1 ORDER BY feed, version`, [zone]);
    for (const r of rows) {
      if (r.feed === 'insurance_trips') expect(r).to.include({ status: 'failed' }).and.to.have.property('last_error').that.matches(/city/);
      else expect(r).to.include({ status: 'published', last_error: null });
    }
    expect(await t.ctx.store.head(objectKey(feedById('insurance-2.0-trips')!, zone, H9))).to.equal(undefined);
    expect(await readText(t.ctx.store, objectKey(feedById('mds-2.0-trips')!, zone, H9))).to.be.a('string');
    // the single-file entry point throws the same error
    let err: unknown;
    await publishHour(t.ctx, feedById('insurance-2.0-trips')!, zone, H9).catch((e) => (err = e));
    expect(err).to.be.instanceOf(FeedValidationError);
  });

  it('publishers of overlapping file sets at the same time do not deadlock; the later ones write nothing', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T00:00:00Z') });
    await fill(t.ctx.db, zone, 5);
    const reversed = [...HOURLY_FEEDS].reverse();
    const runs = await Promise.all([
      publishHourSet(t.ctx, zone, H9),
      publishHourSet(t.ctx, zone, H9, { feeds: reversed }),
      ...reversed.map((f) => publishHour(t.ctx, f, zone, H9).then((r) => [r])),
    ]);
    for (const f of HOURLY_FEEDS) {
      const outcomes = runs
        .flat()
        .filter((r) => r.feed === f.id)
        .map((r) => r.outcome)
        .sort();
      expect(outcomes, f.id).to.deep.equal(['unchanged', 'unchanged', 'written']);
    }
  });

  it('publishes a chosen subset and nothing else', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-21T00:00:00Z') });
    await fill(t.ctx.db, zone, 2);
    const res = await publishHourSet(t.ctx, zone, H9, { feeds: [feedById('mds-1.2-trips')!, feedById('mds-0.4-status_changes')!] });
    expect(res.map((r) => [r.feed, r.outcome])).to.deep.equal([
      ['mds-1.2-trips', 'written'],
      ['mds-0.4-status_changes', 'written'],
    ]);
    const rows = await t.ctx.db.many(`SELECT feed, version FROM feed_publications WHERE scope = $1 ORDER BY feed, version`, [zone]);
    expect(rows).to.deep.equal([
      { feed: 'mds_status_changes', version: '0.4' },
      { feed: 'mds_trips', version: '1.2' },
    ]);
  });
});
