/**
 * The hourly-feed catalogue across the TypeScript/SQL border (issue 27, migration 000160): HOURLY_FEEDS
 * is the one declaration, lib/core/migrate.ts copies it into hourly_feeds, and everything in SQL that must
 * know which files a history table feeds (the late-data triggers, retention's unpublished hours, the
 * publish-lag metric, the foreign key of feed_publications) reads that table. Every expectation here
 * is derived from HOURLY_FEEDS, so a feed added to it is checked without touching this file.
 */
import { expect } from 'chai';
import { DbError, SQLSTATE, type Queryable } from '../lib/core/db.js';
import { feedOf, HOURLY_FEEDS, type HourlyFeed } from '../lib/feeds/publications.js';
import { migrate, migrationsCurrent, MigrationError } from '../lib/core/migrate.js';
import { registerDbCollectors, registry } from '../lib/core/metrics.js';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTelemetry, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = '2026-11-21T12:00:00Z';
const SOURCES = ['events', 'telemetry', 'trips'] as const;
type Source = HourlyFeed['source'];

const at = (iso: string) => new Date(iso);
const hoursOf = (day: string) => Array.from({ length: 24 }, (_, h) => `${day}T${String(h).padStart(2, '0')}:00`);
const ofSource = (source: Source, feeds: readonly HourlyFeed[] = HOURLY_FEEDS) => feeds.filter((f) => f.source === source);

/** A clean published row for every file of `feeds` at every hour of `hours` in `zone`. */
async function publish(db: Queryable, zone: string, hours: readonly string[], feeds: readonly HourlyFeed[] = HOURLY_FEEDS): Promise<void> {
  await db.query(
    `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, published_at)
     SELECT f.feed, f.version, $3, h::timestamp, 'published', 'k', 's', 0, 0, now()
       FROM unnest($1::text[], $2::text[]) AS f (feed, version) CROSS JOIN unnest($4::text[]) AS h
     ON CONFLICT (feed, version, scope, hour) DO UPDATE SET status = 'published', dirty = false`,
    [feeds.map((f) => f.feed), feeds.map((f) => f.version), zone, hours],
  );
}

/** The dirty files of `zone` as `feed id@YYYY-MM-DDTHH`, sorted. */
async function dirtyFiles(db: Queryable, zone: string, feeds: readonly HourlyFeed[] = HOURLY_FEEDS): Promise<string[]> {
  const rows = await db.many<{ feed: string; version: string; hour: string }>(
    `SELECT feed, version, to_char(hour, 'YYYY-MM-DD"T"HH24') AS hour FROM feed_publications WHERE dirty AND scope = $1`,
    [zone],
  );
  return rows.map((r) => `${feeds.find((f) => f.feed === r.feed && f.version === r.version)?.id ?? `${r.feed}/${r.version}`}@${r.hour}`).sort();
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

const expected = (feeds: readonly HourlyFeed[], hours: readonly string[]) => feeds.flatMap((f) => hours.map((h) => `${f.id}@${h}`));

describe('feeds: the hourly-feed catalogue (HOURLY_FEEDS → hourly_feeds)', function () {
  this.timeout(120000);

  describe('the table, the foreign key and the late-data triggers', () => {
    const t = useTestContext({ now: NOW });
    let zone: string;
    let vehicle: string;
    const HOURS = ['2026-11-20T06:00', '2026-11-20T07:00', '2026-11-20T08:00'];

    before(async () => {
      zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-01T00:00:00Z') });
      vehicle = (await feedVehicle(t.ctx.db, zone)).id;
      await publish(t.ctx.db, zone, HOURS);
    });
    beforeEach(async () => {
      await t.ctx.db.query(`UPDATE feed_publications SET dirty = false WHERE dirty`);
      await t.ctx.db.query(`DELETE FROM history_retention`);
    });

    it('hourly_feeds holds every HOURLY_FEEDS entry, field for field, and nothing else', async () => {
      const rows = await t.ctx.db.many(`SELECT id, feed, version, source, segment, family FROM hourly_feeds`);
      const declared = HOURLY_FEEDS.map(({ id, feed, version, source, segment, family }) => ({ id, feed, version, source, segment, family }));
      expect(rows).to.have.deep.members(declared);
      expect(rows).to.have.length(declared.length);
      expect(await migrationsCurrent(t.ctx.db, HOURLY_FEEDS)).to.equal(true);
    });

    it('a publication of a file outside the catalogue is refused by the foreign key', async () => {
      const refuse = async (feed: string, version: string) => {
        const err = await rejection(
          t.ctx.db.query(`INSERT INTO feed_publications (feed, version, scope, hour, status) VALUES ($1, $2, $3, '2026-11-20T06:00', 'pending')`, [
            feed,
            version,
            zone,
          ]),
        );
        expect(err, `${feed} ${version}`).to.be.instanceOf(DbError);
        expect((err as DbError).code).to.equal(SQLSTATE.foreignKeyViolation);
        expect((err as DbError).constraint).to.equal('feed_publications_feed_version_fkey');
      };
      await refuse('mds_vehicles', '2.0');
      // a known feed in a version the catalogue does not have
      await refuse('mds_events', '1.2');
      expect(feedOf('mds_events', '1.2')).to.equal(undefined);
    });

    it('a late event marks exactly the files of source events', async () => {
      await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at('2026-11-20T07:15:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal(expected(ofSource('events'), ['2026-11-20T07']).sort());
    });

    it('late telemetry marks exactly the files of source telemetry', async () => {
      await feedTelemetry(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at('2026-11-20T07:20:00Z') });
      expect(ofSource('telemetry')).to.not.have.length(0);
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal(expected(ofSource('telemetry'), ['2026-11-20T07']).sort());
    });

    it('a late trip marks the files of source trips at its end hour and those of source telemetry at every hour it spans', async () => {
      await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at('2026-11-20T06:50:00Z'), end: at('2026-11-20T07:05:00Z') });
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal(
        [...expected(ofSource('trips'), ['2026-11-20T07']), ...expected(ofSource('telemetry'), ['2026-11-20T06', '2026-11-20T07'])].sort(),
      );
    });

    it("late rows for an hour before its source's retention mark leave the archived files clean, from every source", async () => {
      // every table archived before 07:00: rows of 06 are archived, rows of 07 are late data
      await t.ctx.db.query(`INSERT INTO history_retention (source, dropped_before) SELECT unnest($1::text[]), '2026-11-20T07:00:00Z'`, [SOURCES]);
      await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at('2026-11-20T06:15:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
      await feedTelemetry(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: at('2026-11-20T06:25:00Z') });
      await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at('2026-11-20T06:10:00Z'), end: at('2026-11-20T06:40:00Z') });
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal([]);
      // a trip ending at 07 still dirties its 07 files; of the telemetry hours it spans only 07 is open
      await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at('2026-11-20T06:55:00Z'), end: at('2026-11-20T07:10:00Z') });
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal(
        [...expected(ofSource('trips'), ['2026-11-20T07']), ...expected(ofSource('telemetry'), ['2026-11-20T07'])].sort(),
      );
    });

    it('the retention mark of a file is the one of its own source: telemetry archived, trips not', async () => {
      await t.ctx.db.query(`INSERT INTO history_retention (source, dropped_before) VALUES ('telemetry', '2026-11-20T08:00:00Z')`);
      await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at('2026-11-20T07:30:00Z'), end: at('2026-11-20T08:05:00Z') });
      expect(await dirtyFiles(t.ctx.db, zone)).to.deep.equal(
        [...expected(ofSource('trips'), ['2026-11-20T08']), ...expected(ofSource('telemetry'), ['2026-11-20T08'])].sort(),
      );
    });

    it('the publish-lag metric reports every file of the catalogue', async () => {
      registerDbCollectors(t.ctx.db);
      const text = await registry.metrics();
      for (const f of HOURLY_FEEDS)
        expect(text).to.match(new RegExp(`^feed_publish_lag_seconds\\{feed="${f.feed}",version="${f.version.replace('.', '\\.')}"\\} [0-9.e+-]+$`, 'm'));
    });
  });

  describe("retention's unpublished hours", () => {
    const t = useTestContext({ now: NOW });
    const DAY = '2026-11-10';
    let zone: string;

    before(async () => {
      zone = await feedZone(t.ctx.db, { createdAt: at(`${DAY}T00:00:00Z`) });
      await publish(t.ctx.db, zone, hoursOf(DAY));
    });

    const unpublishedOf = async (parent: Source) =>
      (await t.ctx.db.one<{ hours: number }>(`SELECT history_unpublished_hours($1, $2::date) AS hours`, [parent, DAY])).hours;
    const unpublished = async () => Object.fromEntries(await Promise.all(SOURCES.map(async (s) => [s, await unpublishedOf(s)] as const)));
    // a telemetry day also waits for the trip files of its day, whose distances it gave (000102)
    const counted = (f: HourlyFeed, parent: Source) => f.source === parent || (parent === 'telemetry' && f.source === 'trips');

    it('a day with every file published and clean has no unpublished hour', async () => {
      expect(await unpublished()).to.deep.equal({ events: 0, telemetry: 0, trips: 0 });
    });

    it('an hour dirty in any one catalogue file is reported for the tables that feed it', async () => {
      for (const f of HOURLY_FEEDS) {
        await t.ctx.db.query(`UPDATE feed_publications SET dirty = true WHERE feed = $1 AND version = $2 AND scope = $3 AND hour = $4::timestamp`, [
          f.feed,
          f.version,
          zone,
          `${DAY}T09:00`,
        ]);
        const got = await unpublished();
        expect(got, f.id).to.deep.equal(Object.fromEntries(SOURCES.map((s) => [s, counted(f, s) ? 1 : 0])));
        await t.ctx.db.query(`UPDATE feed_publications SET dirty = false WHERE dirty`);
      }
    });
  });

  describe('the declaration is the one source: the runner syncs the table from it', () => {
    const t = useTestContext({ now: NOW });
    // a file the code declares and no migration names: the table, the triggers and the sweeps follow
    const extra = { ...HOURLY_FEEDS.find((f) => f.id === 'mds-2.0-trips')!, id: 'mds-9.9-trips', version: '9.9' } as unknown as HourlyFeed;
    const declared = [...HOURLY_FEEDS, extra];
    let zone: string;
    let vehicle: string;

    before(async () => {
      zone = await feedZone(t.ctx.db, { createdAt: at('2026-11-01T00:00:00Z') });
      vehicle = (await feedVehicle(t.ctx.db, zone)).id;
    });

    it('a feed added to the declaration gets its row, its late-data marks and its unpublished hours without a migration', async () => {
      expect((await migrate(t.database.url, declared)).applied).to.deep.equal([]);
      expect(await t.ctx.db.one(`SELECT id, source FROM hourly_feeds WHERE feed = $1 AND version = $2`, [extra.feed, extra.version])).to.deep.equal({
        id: extra.id,
        source: extra.source,
      });
      // this process still declares the catalogue without it: not ready until the runner syncs again
      expect(await migrationsCurrent(t.ctx.db, HOURLY_FEEDS)).to.equal(false);
      expect(await migrationsCurrent(t.ctx.db, declared)).to.equal(true);

      await publish(t.ctx.db, zone, ['2026-11-20T07:00'], declared);
      await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: at('2026-11-20T07:10:00Z'), end: at('2026-11-20T07:30:00Z') });
      expect(await dirtyFiles(t.ctx.db, zone, declared)).to.deep.equal(
        [...expected(ofSource('trips', declared), ['2026-11-20T07']), ...expected(ofSource('telemetry'), ['2026-11-20T07'])].sort(),
      );
      expect(await dirtyFiles(t.ctx.db, zone, declared)).to.include(`${extra.id}@2026-11-20T07`);

      await publish(t.ctx.db, zone, hoursOf('2026-11-20'), HOURLY_FEEDS);
      const { hours } = await t.ctx.db.one(`SELECT history_unpublished_hours('trips', '2026-11-20') AS hours`);
      expect(hours, 'the 23 hours of the new file without a row, and its dirty 07').to.equal(24);
    });

    it('a feed removed from the declaration while it has publications is refused; without them its row goes', async () => {
      const err = await rejection(migrate(t.database.url, HOURLY_FEEDS));
      expect(err).to.be.instanceOf(MigrationError);
      expect((err as Error).message).to.match(/hourly_feeds.*foreign key/);
      expect(await t.ctx.db.one(`SELECT count(*)::int AS n FROM hourly_feeds`)).to.deep.equal({ n: declared.length });

      await t.ctx.db.query(`DELETE FROM feed_publications WHERE feed = $1 AND version = $2`, [extra.feed, extra.version]);
      await migrate(t.database.url, HOURLY_FEEDS);
      expect((await t.ctx.db.many(`SELECT id FROM hourly_feeds`)).map((r) => r.id)).to.have.members(HOURLY_FEEDS.map((f) => f.id));
      expect(await migrationsCurrent(t.ctx.db, HOURLY_FEEDS)).to.equal(true);
    });

    it('a changed field of a declared feed is written back to the table', async () => {
      await t.ctx.db.query(`UPDATE hourly_feeds SET segment = 'stale' WHERE id = 'mds-2.0-events'`);
      expect(await migrationsCurrent(t.ctx.db, HOURLY_FEEDS)).to.equal(false);
      await migrate(t.database.url, HOURLY_FEEDS);
      expect(await t.ctx.db.one(`SELECT segment FROM hourly_feeds WHERE id = 'mds-2.0-events'`)).to.deep.equal({ segment: 'events' });
      expect(await migrationsCurrent(t.ctx.db, HOURLY_FEEDS)).to.equal(true);
    });
  });
});
