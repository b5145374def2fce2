/**
 * MDS 2.0 monthly reports (issue 16): a CSV per zone and closed month with the MDS header, a row per
 * geography (zone, areas) and vehicle type, the privacy rule at its edges (0, 1, 10, 11), written
 * after the month closes and again when a late trip changes it; city role only. Published like
 * every object (issue 27): stored gzip, served from its index row, the stored gzip to clients that
 * accept it and CSV to the others, with validators.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { get as httpGet, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { publishDueReports, REPORT_HEADER, zoneGeographyId } from '../publisher/reports.js';
import type { Queryable } from '../lib/core/db.js';
import { useTestContext } from './support/context.js';
import { tokenFor } from './support/feed-auth.js';
import { feedVehicle, feedZone } from './support/feed-fixtures.js';

const NOW = '2026-11-21T10:30:00Z';
const IN_AREA = { lng: 13.38, lat: 52.5 };
const OUTSIDE = { lng: 13.42, lat: 52.53 };

async function trip(q: Queryable, device: string, zone: string, start: string, at: { lng: number; lat: number }, tripType = 'rider'): Promise<void> {
  await q.query(
    `INSERT INTO trips (trip_id, device_id, zone_id, vehicle_type_id, trip_type, start_time, end_time, start_location, end_location, distance_m, duration_s)
     SELECT gen_random_uuid(), v.id, $2, v.vehicle_type_id, $6, $3::timestamptz, $3::timestamptz + interval '12 minutes',
            ST_SetSRID(ST_MakePoint($4, $5), 4326), ST_SetSRID(ST_MakePoint($4, $5), 4326), 900, 720
       FROM vehicles v WHERE v.id = $1`,
    [device, zone, start, at.lng, at.lat, tripType],
  );
}

describe('feeds: MDS 2.0 monthly reports', () => {
  const t = useTestContext({ now: NOW, config: { FEED_CACHE_BYTES: '0' } });
  let zone: string;
  let scooter: string;
  let bike: string;
  let area: string;
  let city: string;
  const app = () => request(buildApp(t.ctx).callback());
  const get = (file: string, auth = city) => app().get(`/v1/partner-apis/mds/${zone}/reports/${file}`).set('Authorization', auth);
  const parse = (csv: string) =>
    csv
      .trim()
      .split('\n')
      .map((l) => l.split(','));

  before(async () => {
    zone = await feedZone(t.ctx.db, { createdAt: new Date('2026-10-01T00:00:00Z') });
    scooter = (await feedVehicle(t.ctx.db, zone, { type: 'feed-scooter' })).id;
    bike = (await feedVehicle(t.ctx.db, zone, { type: 'feed-bike' })).id;
    area = (
      await t.ctx.db.one<{ id: string }>(
        `INSERT INTO areas (zone_id, name, area_type, geom) VALUES ($1, 'centre', 'incentive', ST_GeomFromText('MULTIPOLYGON(((13.37 52.49,13.39 52.49,13.39 52.51,13.37 52.51,13.37 52.49)))', 4326)) RETURNING id`,
        [zone],
      )
    ).id;
    // October: 11 scooter rides (one of them starting in the area), 10 bike rides, a rebalancing move (not a rider trip)
    for (let i = 0; i < 11; i++) await trip(t.ctx.db, scooter, zone, `2026-10-${String(2 + i).padStart(2, '0')}T08:00:00Z`, i === 0 ? IN_AREA : OUTSIDE);
    for (let i = 0; i < 10; i++) await trip(t.ctx.db, bike, zone, `2026-10-${String(2 + i).padStart(2, '0')}T09:00:00Z`, OUTSIDE);
    await trip(t.ctx.db, bike, zone, '2026-10-20T09:00:00Z', IN_AREA, 'operator');
    // November is not closed yet
    await trip(t.ctx.db, scooter, zone, '2026-11-02T08:00:00Z', OUTSIDE);
    city = `Bearer ${await tokenFor(t.ctx, 'rep-city', 'city')}`;
  });

  it('writes the closed month: MDS header, zone and area rows per vehicle type, counts 1–10 as -1', async () => {
    expect(await publishDueReports(t.ctx)).to.deep.equal({ written: 1, unchanged: 0 });
    const res = await get('2026-10.csv');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/csv/);
    const rows = parse(res.text);
    expect(rows[0].join(',')).to.equal(REPORT_HEADER);
    const zoneGeo = zoneGeographyId(t.ctx.config.providerId, zone);
    expect(zoneGeo).to.equal(zoneGeographyId(t.ctx.config.providerId, zone));
    const p = t.ctx.config.providerId;
    expect(rows.slice(1)).to.deep.equal([
      [p, '2026-10-01', 'P1M', 'all_riders', zoneGeo, 'bicycle', '-1', '0'], // 10 → -1
      [p, '2026-10-01', 'P1M', 'all_riders', zoneGeo, 'scooter_standing', '11', '0'], // 11 stays
      [p, '2026-10-01', 'P1M', 'all_riders', area, 'bicycle', '0', '0'], // 0 stays (the operator move is not a rider trip)
      [p, '2026-10-01', 'P1M', 'all_riders', area, 'scooter_standing', '-1', '0'], // 1 → -1
    ]);
  });

  it('a late trip of the month dirties the report; the next run writes it again, then nothing is due', async () => {
    await trip(t.ctx.db, bike, zone, '2026-10-25T09:00:00Z', OUTSIDE);
    expect((await t.ctx.db.one(`SELECT dirty FROM feed_reports WHERE scope = $1 AND month = '2026-10-01'`, [zone])).dirty).to.equal(true);
    expect(await publishDueReports(t.ctx)).to.deep.equal({ written: 1, unchanged: 0 });
    const rows = parse((await get('2026-10.csv')).text);
    expect(rows[1].slice(5)).to.deep.equal(['bicycle', '11', '0']);
    expect(await publishDueReports(t.ctx)).to.deep.equal({ written: 0, unchanged: 0 });
  });

  it('stored gzip and served by negotiation: the stored bytes to gzip clients, CSV to the others; ETag and 304', async () => {
    const row = await t.ctx.db.one<{ object_key: string; sha256: string; bytes: number }>(
      `SELECT object_key, sha256, bytes FROM feed_reports WHERE scope = $1 AND month = '2026-10-01'`,
      [zone],
    );
    const obj = (await t.ctx.store.get(row.object_key))!;
    const chunks: Buffer[] = [];
    for await (const c of obj.body) chunks.push(c as Buffer);
    const storedBytes = Buffer.concat(chunks);
    expect(obj.meta).to.include({ contentEncoding: 'gzip', contentType: 'text/csv; charset=utf-8', size: Number(row.bytes) });

    // superagent always gunzips: read the wire with node:http
    const server = buildApp(t.ctx).listen(0, '127.0.0.1');
    await once(server, 'listening');
    let wire: { headers: IncomingHttpHeaders; body: Buffer };
    try {
      const { port } = server.address() as AddressInfo;
      const res = await new Promise<IncomingMessage>((resolve, reject) =>
        httpGet(
          { port, host: '127.0.0.1', path: `/v1/partner-apis/mds/${zone}/reports/2026-10.csv`, headers: { Authorization: city, 'Accept-Encoding': 'gzip' } },
          resolve,
        ).on('error', reject),
      );
      expect(res.statusCode).to.equal(200);
      const parts: Buffer[] = [];
      for await (const c of res) parts.push(c as Buffer);
      wire = { headers: res.headers, body: Buffer.concat(parts) };
    } finally {
      server.close();
    }
    expect(wire.headers['content-encoding']).to.equal('gzip');
    expect(wire.headers['content-type']).to.equal('text/csv; charset=utf-8');
    expect(wire.headers['cache-control']).to.equal('private, max-age=300');
    expect(wire.body.equals(storedBytes)).to.equal(true);
    expect(gunzipSync(wire.body).toString().split('\n')[0]).to.equal(REPORT_HEADER);

    const plain = await get('2026-10.csv').set('Accept-Encoding', 'identity');
    expect(plain.status).to.equal(200);
    expect(plain.headers['content-encoding']).to.equal(undefined);
    expect(plain.text.split('\n')[0]).to.equal(REPORT_HEADER);
    expect(plain.headers.etag).to.equal(`W/${wire.headers.etag}`);
    expect((await get('2026-10.csv').set('If-None-Match', wire.headers.etag!)).status).to.equal(304);
  });

  it('404 for a month not reported, 400 for another name, city role only', async () => {
    expect((await get('2026-11.csv')).status).to.equal(404);
    expect((await get('2026-09.csv')).status).to.equal(404);
    for (const bad of ['2026-13.csv', '2026-10.json', '202610.csv', 'latest']) {
      const res = await get(bad);
      expect(res.status, bad).to.equal(400);
      expect(res.body.error).to.equal('bad_param');
    }
    for (const role of ['insurer', 'data', 'gbfs'] as const)
      expect((await get('2026-10.csv', `Bearer ${await tokenFor(t.ctx, `rep-${role}`, role)}`)).status, role).to.equal(403);
    const other = await feedZone(t.ctx.db, { createdAt: new Date('2026-10-01T00:00:00Z') });
    expect((await get('2026-10.csv', `Bearer ${await tokenFor(t.ctx, 'rep-city-other', 'city', [other])}`)).status).to.equal(403);
  });
});
