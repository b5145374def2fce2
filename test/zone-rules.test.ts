/**
 * One zone-rules decision (sql/migrations/000081_zone_rules.sql): the rental engine's start/end
 * checks and the published GBFS 2.2/3.0 geofencing rules come from the same SQL functions. A grid of
 * points across each demo zone (and beyond its operations areas), plus a point inside every area,
 * is judged by the engine's decision and by reading the GBFS files the way a consumer does (first
 * applicable feature wins, else global_rules); they must agree at every point and vehicle type.
 * Outside the operations areas a real start is refused (405 ZoneIsSleeping, "zone not permitting
 * rentals") and a real end too (405 FailedToEndRentalNoParking).
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { loadZoneData } from '../lib/feeds/gbfs/model.js';
import { geofencingZonesV2 } from '../lib/feeds/gbfs/v2.js';
import { geofencingZonesV3 } from '../lib/feeds/gbfs/v3.js';
import { seedDemo } from '../ops/seed/index.js';
import { parkingAt } from '../lib/domain/zones.js';
import { useTestContext } from './support/context.js';
import { expectError, insertUser } from './support/partner-fixtures.js';

type Ring = number[][];
type Polygon = Ring[];
interface Feature {
  geometry: { type: 'MultiPolygon'; coordinates: Polygon[] };
  properties: { rules: Array<Record<string, unknown>> };
}

/** Even-odd ray casting over a polygon's rings (holes included). */
function inPolygon(pt: [number, number], polygon: Polygon): boolean {
  let inside = false;
  for (const ring of polygon) {
    for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
      const [xi, yi] = ring[i] as [number, number];
      const [xj, yj] = ring[j] as [number, number];
      if (yi > pt[1] !== yj > pt[1] && pt[0] < ((xj - xi) * (pt[1] - yi)) / (yj - yi) + xi) inside = !inside;
    }
  }
  return inside;
}

const inFeature = (pt: [number, number], f: Feature) => f.geometry.coordinates.some((p) => inPolygon(pt, p));

/** A GBFS consumer's reading: the first feature that covers the point and names the type (or every type), else the global rule. */
function gbfsRuleAt(features: Feature[], global: Record<string, unknown> | undefined, pt: [number, number], typeId: string, idKey: string) {
  for (const f of features) {
    if (!inFeature(pt, f)) continue;
    const rule = f.properties.rules.find((r) => r[idKey] === undefined || (r[idKey] as string[]).includes(typeId));
    if (rule) return rule;
  }
  return global;
}

describe('zone rules: one decision for the engine and GBFS', function () {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });

  before(async function () {
    this.timeout(60000);
    await seedDemo(t.ctx, { vehiclesPerZone: 20 });
  });

  for (const zoneId of ['berlin', 'copenhagen']) {
    it(`${zoneId}: the engine and the published GBFS 2.2 and 3.0 rules agree on a grid of points`, async function () {
      this.timeout(120000);
      const data = (await loadZoneData(t.ctx.db, { zoneIds: [zoneId], now: t.ctx.clock.now(), areas: true, vehicles: false })).get(zoneId)!;
      const v3 = geofencingZonesV3(data);
      const v2 = geofencingZonesV2({ zones: [data] }).geofencing_zones;
      const features3 = v3.geofencing_zones.features as unknown as Feature[];
      const features2 = v2.features as unknown as Feature[];
      const { xmin, ymin, xmax, ymax } = await t.ctx.db.one<{ xmin: number; ymin: number; xmax: number; ymax: number }>(
        `SELECT ST_XMin(b) AS xmin, ST_YMin(b) AS ymin, ST_XMax(b) AS xmax, ST_YMax(b) AS ymax FROM (SELECT ST_Envelope(boundary) AS b FROM zones WHERE id = $1) e`,
        [zoneId],
      );
      // the zone's box and a margin of a quarter of it on every side: beyond the operations areas too
      const points: Array<[number, number]> = [];
      const N = 24;
      const [dx, dy] = [(xmax - xmin) * 1.5, (ymax - ymin) * 1.5];
      for (let i = 0; i <= N; i++) for (let j = 0; j <= N; j++) points.push([xmin - dx / 6 + (dx * i) / N, ymin - dy / 6 + (dy * j) / N]);
      for (const a of data.areas) points.push([a.lon, a.lat]);
      expect(data.areas.map((a) => a.areaType)).to.include('operations');

      const seen = { start: new Set<boolean>(), end: new Set<boolean>() };
      for (const type of data.types) {
        for (const pt of points) {
          const engine = await parkingAt(t.ctx.db, zoneId, { lng: pt[0], lat: pt[1] }, type.id);
          const g3 = gbfsRuleAt(features3, v3.global_rules[0], pt, type.id, 'vehicle_type_ids');
          const where = `${zoneId} ${type.id} at ${pt[0].toFixed(5)},${pt[1].toFixed(5)} (engine area ${engine.areaType})`;
          expect(g3, where).to.not.equal(undefined);
          expect({ start: g3!.ride_start_allowed, end: g3!.ride_end_allowed }, where).to.deep.equal({ start: engine.canStart, end: engine.canEnd });
          const g2 = gbfsRuleAt(features2, undefined, pt, type.id, 'vehicle_type_id');
          // 2.2 has no global rules: where a feature covers the point, its one flag must match
          if (g2) expect(g2.ride_allowed, `${where} (2.2)`).to.equal(engine.canStart && engine.canEnd);
          seen.start.add(engine.canStart);
          seen.end.add(engine.canEnd);
        }
      }
      // the grid covered permitted and refused places
      expect([...seen.start].sort()).to.deep.equal([false, true]);
      expect([...seen.end].sort()).to.deep.equal([false, true]);
    });
  }

  it('outside the operations areas a start is 405 ZoneIsSleeping and an end 405 FailedToEndRentalNoParking', async () => {
    const server = buildApp(t.ctx).callback();
    const K = 'demo-partner-key';
    const partner = await t.ctx.db.one<{ id: string }>(
      `SELECT partner_id AS id FROM api_keys k JOIN partners p ON p.id = k.partner_id WHERE p.name = 'Demo Partner App' LIMIT 1`,
    );
    const user = await insertUser(t.ctx.db, partner.id);
    // a ready Berlin vehicle that stands where a ride may start and end
    const vehicles = await t.ctx.db.many<{ id: string; vehicle_type_id: string; lng: number; lat: number }>(
      `SELECT id, vehicle_type_id, ST_X(location) AS lng, ST_Y(location) AS lat FROM vehicles WHERE zone_id = 'berlin' AND status = 'ready' AND mds_state = 'available' AND battery_percent > 30`,
    );
    let v: (typeof vehicles)[number] | undefined;
    for (const c of vehicles)
      if ((await parkingAt(t.ctx.db, 'berlin', { lng: c.lng, lat: c.lat }, c.vehicle_type_id)).canEnd) {
        v = c;
        break;
      }
    expect(v).to.not.equal(undefined);
    // 2 km east of the operations areas, still inside the zone's box margin
    const outside = await t.ctx.db.one<{ lng: number }>(
      `SELECT ST_XMax(ST_Extent(geom)) + 2000 / (111320 * cos(radians($1))) AS lng FROM areas WHERE zone_id = 'berlin' AND area_type = 'operations'`,
      [v!.lat],
    );
    const verdict = await parkingAt(t.ctx.db, 'berlin', { lng: outside.lng, lat: v!.lat }, v!.vehicle_type_id);
    expect(verdict).to.include({ areaType: null, canStart: false, canEnd: false });
    const move = (lng: number) => t.ctx.db.query(`UPDATE vehicles SET location = ST_SetSRID(ST_MakePoint($2, $3), 4326) WHERE id = $1`, [v!.id, lng, v!.lat]);

    await move(outside.lng);
    const refused = await request(server).post('/v1/rental/start').set('X-Auth-Token', K).send({ userId: user, vehicleId: v!.id });
    expectError(refused, 405, 'ZoneIsSleeping', 'zone not permitting rentals');

    await move(v!.lng);
    const started = await request(server).post('/v1/rental/start').set('X-Auth-Token', K).send({ userId: user, vehicleId: v!.id });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    await move(outside.lng);
    const id = started.body.data[0].id;
    expectError(await request(server).post(`/v1/rental/${id}/end`).set('X-Auth-Token', K).send({}), 405, 'FailedToEndRentalNoParking');
    await move(v!.lng);
    expect((await request(server).post(`/v1/rental/${id}/end`).set('X-Auth-Token', K).send({})).status).to.equal(200);
  });
});
