/**
 * Write-path and sweep costs with a long history of publications (issue 14): the late-data trigger
 * dirties exactly the files of the hours it touches through primary-key lookups, and the publisher's
 * sweeps read index ranges, not every hour ever published. Plans are checked on a planner-analysed
 * table of 20 zones × 7 files × 60 days (the shape of a year, small enough for `make test`).
 */
import { expect } from 'chai';
import pg from 'pg';
import { useTestContext } from './support/context.js';
import { feedEvent, feedTrip, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { sql, type QueryName } from '../lib/core/sql/typed.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';

const NOW = '2026-11-21T12:00:00Z';

/** Every plan node of an EXPLAIN (FORMAT JSON) tree, flattened. */
function nodes(plan: any): any[] {
  return [plan, ...((plan.Plans ?? []) as any[]).flatMap(nodes)];
}

function seqScansOnPublications(plan: any): number {
  return nodes(plan).filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'feed_publications').length;
}

describe('history: late-data trigger and publisher sweeps at scale', function () {
  this.timeout(120000);
  const t = useTestContext({ now: NOW });
  let zone: string;
  let vehicle: string;

  before(async () => {
    const db = t.ctx.db;
    zone = await feedZone(db, { createdAt: new Date('2026-01-01T00:00:00Z') });
    vehicle = (await feedVehicle(db, zone)).id;
    for (let i = 0; i < 19; i++) await feedZone(db, { createdAt: new Date('2026-01-01T00:00:00Z') });
    // 60 days of published files for every zone and file
    await db.query(
      `INSERT INTO feed_publications (feed, version, scope, hour, status, object_key, sha256, record_count, bytes, published_at)
       SELECT f.feed, f.version, z.id, h, 'published', 'k', 's', 0, 0, now()
         FROM zones z
        CROSS JOIN unnest($1::text[], $2::text[]) AS f (feed, version)
        CROSS JOIN generate_series('2026-09-22T00:00'::timestamp, '2026-11-21T10:00'::timestamp, interval '1 hour') AS h`,
      [HOURLY_FEEDS.map((f) => f.feed), HOURLY_FEEDS.map((f) => f.version)],
    );
    await db.query('ANALYZE feed_publications');
  });

  it('an event dirties the three event files of its hour and nothing else', async () => {
    await feedEvent(t.ctx.db, { deviceId: vehicle, zoneId: zone, ts: new Date('2026-11-20T07:15:00Z'), eventTypes: ['comms_lost'], state: 'non_contactable' });
    const dirty = await t.ctx.db.many(
      `SELECT feed, version, scope, to_char(hour, 'YYYY-MM-DD"T"HH24') AS hour FROM feed_publications WHERE dirty ORDER BY 1, 2`,
    );
    expect(dirty).to.deep.equal([
      { feed: 'mds_events', version: '2.0', scope: zone, hour: '2026-11-20T07' },
      { feed: 'mds_status_changes', version: '0.4', scope: zone, hour: '2026-11-20T07' },
      { feed: 'mds_status_changes', version: '1.2', scope: zone, hour: '2026-11-20T07' },
    ]);
  });

  it('a trip dirties the four trip files of its end hour and the telemetry files of the hours it spans, nothing else', async () => {
    await t.ctx.db.query(`UPDATE feed_publications SET dirty = false WHERE dirty`);
    await feedTrip(t.ctx.db, { deviceId: vehicle, zoneId: zone, start: new Date('2026-11-19T05:50:00Z'), end: new Date('2026-11-19T06:05:00Z') });
    const dirty = await t.ctx.db.many(`SELECT feed, version, to_char(hour, 'YYYY-MM-DD"T"HH24') AS hour FROM feed_publications WHERE dirty ORDER BY 1, 2, 3`);
    expect(dirty).to.deep.equal([
      { feed: 'insurance_trips', version: '2.0', hour: '2026-11-19T06' },
      { feed: 'mds_telemetry', version: '2.0', hour: '2026-11-19T05' },
      { feed: 'mds_telemetry', version: '2.0', hour: '2026-11-19T06' },
      { feed: 'mds_trips', version: '0.4', hour: '2026-11-19T06' },
      { feed: 'mds_trips', version: '1.2', hour: '2026-11-19T06' },
      { feed: 'mds_trips', version: '2.0', hour: '2026-11-19T06' },
    ]);
  });

  it("the trigger's update is planned as index lookups on the dirtied hours (auto_explain of the nested statement)", async () => {
    const c = new pg.Client({ connectionString: t.database.url });
    await c.connect();
    const logged: string[] = [];
    c.on('notice', (m) => logged.push(m.message ?? ''));
    try {
      await c.query(`LOAD 'auto_explain'`);
      await c.query(`SET auto_explain.log_min_duration = 0`);
      await c.query(`SET auto_explain.log_nested_statements = on`);
      await c.query(`SET auto_explain.log_format = json`);
      await c.query(`SET auto_explain.log_analyze = on`);
      await c.query(`SET client_min_messages = log`);
      await c.query(
        `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location)
         VALUES ($1, $2, '{comms_restored}', 'available', '2026-11-18T03:10:00Z', ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326))`,
        [vehicle, zone],
      );
    } finally {
      await c.end();
    }
    const plans = logged.filter((m) => m.includes('"Query Text"')).map((m) => JSON.parse(m.slice(m.indexOf('{'))));
    const update = plans.find((p) => /UPDATE feed_publications/.test(p['Query Text']));
    expect(update, 'the trigger statement was logged').to.not.equal(undefined);
    expect(seqScansOnPublications(update.Plan)).to.equal(0);
    const scans = nodes(update.Plan).filter((n) => n['Relation Name'] === 'feed_publications');
    expect(scans.length).to.be.greaterThan(0);
    // rows examined stay at the files of one hour, not the 60 days × 7 files of the zone
    for (const s of scans) expect(s['Actual Rows'] + (s['Rows Removed by Filter'] ?? 0)).to.be.at.most(HOURLY_FEEDS.length);
  });

  it('the missing-hours scan and the republish sweep read index ranges only', async () => {
    const feeds = [HOURLY_FEEDS.map((f) => f.feed), HOURLY_FEEDS.map((f) => f.version)];
    const explain = async (name: QueryName, params: ReadonlyArray<string | number | null | readonly string[]>) => {
      const text = sql(name).text;
      const c = new pg.Client({ connectionString: t.database.url });
      await c.connect();
      try {
        await c.query(`PREPARE sweep AS ${text}`);
        // generic plans: what a long-lived pool ends up with after five executions
        await c.query(`SET plan_cache_mode = force_generic_plan`);
        const placeholders = params.map((p) => (p === null ? 'NULL' : `'${typeof p === 'object' ? `{${p.join(',')}}` : String(p)}'`)).join(', ');
        const res = await c.query(`EXPLAIN (FORMAT JSON) EXECUTE sweep(${placeholders})`);
        return res.rows[0]['QUERY PLAN'][0].Plan;
      } finally {
        await c.end();
      }
    };
    const missing = await explain('PubMissingHours', [...feeds, '2026-11-19T11:00', '2026-11-21T10:00', 5000]);
    expect(seqScansOnPublications(missing)).to.equal(0);
    const again = await explain('PubNeedsRepublish', [NOW, 5000]);
    expect(seqScansOnPublications(again)).to.equal(0);
    expect(JSON.stringify(again)).to.contain('feed_publications_outstanding');
    const status = await explain('PubStatusRows', [[zone], '2026-11-20T00:00', '2026-11-20T23:00']);
    expect(seqScansOnPublications(status)).to.equal(0);
  });
});
