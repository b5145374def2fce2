import { expect } from 'chai';
import request from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { expectMds, insertFeedZone, mdsSpecsAvailable, tokenFor } from './support/feed-auth.js';
import type { Queryable } from '../lib/core/db.js';

const NOW = Date.parse('2026-11-21T10:30:00Z');
const MDS2 = 'application/vnd.mds+json;version=2.0';
const V12 = 'application/vnd.mds+json;version=1.2';
const V04 = 'application/vnd.mds.provider+json;version=0.4';

let n = 0;
async function vehicle(db: Queryable, zone: string, state: string): Promise<string> {
  const code = `R${(++n).toString().padStart(3, '0')}`;
  const row = await db.one<{ id: string }>(
    `INSERT INTO vehicles (code, zone_id, vehicle_type_id, mds_state, battery_percent, location, license_plate, license_plate_id, last_seen_at)
     VALUES ($1::text, $2, 'rt-scooter', $3, 70, ST_SetSRID(ST_MakePoint(13.40, 52.52), 4326), $1::text, $1::text, $4) RETURNING id`,
    [code, zone, state, new Date(NOW - 60_000)],
  );
  return row.id;
}

async function event(db: Queryable, device: string, zone: string, types: string[], state: string, at: number, tripIds: string[] | null = null): Promise<void> {
  await db.query(
    `INSERT INTO events (device_id, zone_id, event_types, vehicle_state, ts, location, battery_percent, trip_ids)
     VALUES ($1, $2, $3, $4, $5, ST_SetSRID(ST_MakePoint(13.401, 52.521), 4326), 70, $6)`,
    [device, zone, types, state, new Date(at), tripIds],
  );
}

describe('feeds: realtime MDS from the database', () => {
  const t = useTestContext({ now: new Date(NOW) });
  let app: ReturnType<typeof request>;
  let legacy: ReturnType<typeof request>;
  let city: string;
  const v: Record<string, string> = {};
  const trip = '8f6b1c2e-0a4d-4c1e-9d7b-3a2f1e0c9b8a';

  before(async function () {
    if (!mdsSpecsAvailable()) console.warn('    (specs/mds absent: schema checks skipped)');
    const db = t.ctx.db;
    await insertFeedZone(db, 'berlin');
    await insertFeedZone(db, 'hamburg');
    await db.query(`INSERT INTO vehicle_types (id, form_factor, propulsion_type, name, make, model, max_range_meters, max_speed_kph)
                    VALUES ('rt-scooter', 'scooter', 'electric', 'Scooter', 'Acme', 'S1', 40000, 20)`);
    v.available = await vehicle(db, 'berlin', 'available');
    v.onTrip = await vehicle(db, 'berlin', 'on_trip');
    v.removed = await vehicle(db, 'berlin', 'removed');
    v.broken = await vehicle(db, 'berlin', 'non_operational');
    v.silent = await vehicle(db, 'berlin', 'removed'); // no events at all
    v.elsewhere = await vehicle(db, 'hamburg', 'available');
    await event(db, v.available, 'berlin', ['service_start'], 'available', NOW - 3 * 3600_000);
    await event(db, v.available, 'berlin', ['trip_start'], 'on_trip', NOW - 2 * 3600_000, [trip]);
    await event(db, v.available, 'berlin', ['trip_end'], 'available', NOW - 3600_000, [trip]);
    await event(db, v.onTrip, 'berlin', ['service_start'], 'available', NOW - 3 * 3600_000);
    await event(db, v.onTrip, 'berlin', ['trip_start'], 'on_trip', NOW - 600_000, ['1f6b1c2e-0a4d-4c1e-9d7b-3a2f1e0c9b8a']);
    await event(db, v.removed, 'berlin', ['service_start'], 'available', NOW - 20 * 86400_000);
    await event(db, v.removed, 'berlin', ['maintenance_pick_up'], 'removed', NOW - 5 * 3600_000);
    await event(db, v.broken, 'berlin', ['service_start'], 'available', NOW - 5 * 3600_000);
    await event(db, v.broken, 'berlin', ['battery_low'], 'non_operational', NOW - 4 * 3600_000);
    await event(db, v.elsewhere, 'hamburg', ['service_start'], 'available', NOW - 3600_000);
    await db.query(
      `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id)
                    VALUES ($1, 'berlin', $2, ST_SetSRID(ST_MakePoint(13.402, 52.522), 4326), 65, $3)`,
      [v.onTrip, new Date(NOW - 30_000), '1f6b1c2e-0a4d-4c1e-9d7b-3a2f1e0c9b8a'],
    );
    city = `Bearer ${await tokenFor(t.ctx, 'city', 'city', ['berlin'])}`;
    app = request(buildApp(t.ctx).callback());
    legacy = request(buildLegacyApp(t.ctx).callback());
  });

  const get = (path: string) => app.get(`/v1/partner-apis/mds/berlin${path}`).set('Authorization', city);

  describe('MDS 2.0', () => {
    it('/vehicles: every vehicle of the zone, valid MDS 2.0', async () => {
      const res = await get('/vehicles');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal(MDS2);
      expect(res.headers['cache-control']).to.match(/no-cache/);
      expectMds('2.0/micromobility/vehicles', res.body);
      expect(res.body.version).to.equal('2.0.0');
      // official 2.0 envelope: integer last_updated and ttl; links with next (nothing is paginated)
      expect(res.body.links).to.deep.equal({ next: null });
      expect(res.body.last_updated).to.be.a('number');
      expect(res.body.ttl).to.equal(0);
      const ids = res.body.vehicles.map((x: any) => x.device_id).sort();
      expect(ids).to.deep.equal([v.available, v.onTrip, v.removed, v.broken, v.silent].sort());
    });

    it('/vehicles/{deviceID}: one device; unknown → 404; other zone → 404; malformed → 400', async () => {
      const res = await get(`/vehicles/${v.broken}`);
      expect(res.status).to.equal(200);
      expectMds('2.0/micromobility/vehicles_device_id', res.body);
      expect(res.body.vehicles).to.have.length(1);
      expect((await get('/vehicles/00000000-0000-4000-8000-000000000000')).status).to.equal(404);
      expect((await get(`/vehicles/${v.elsewhere}`)).status).to.equal(404);
      const bad = await get('/vehicles/not-a-uuid');
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.equal('bad_param');
    });

    it('/vehicles/status: last event and telemetry of every vehicle with a state (removed 5 hours ago: dropped, 90-minute rule)', async () => {
      const res = await get('/vehicles/status');
      expect(res.status).to.equal(200);
      expectMds('2.0/micromobility/vehicles_status', res.body);
      const byId = new Map<string, any>(res.body.vehicles_status.map((x: any) => [x.device_id, x]));
      expect([...byId.keys()].sort()).to.deep.equal([v.available, v.onTrip, v.broken].sort());
      expect(byId.get(v.onTrip).last_event.vehicle_state).to.equal('on_trip');
      expect(byId.get(v.onTrip).last_telemetry.battery_percent).to.equal(65);
      expect(byId.get(v.available).last_event.event_types).to.deep.equal(['trip_end']);
    });

    it('/vehicles/status/{deviceID}', async () => {
      const res = await get(`/vehicles/status/${v.onTrip}`);
      expect(res.status).to.equal(200);
      expectMds('2.0/micromobility/vehicles_status_device_id', res.body);
      expect(res.body.vehicles_status).to.have.length(1);
      expect((await get('/vehicles/status/00000000-0000-4000-8000-000000000000')).status).to.equal(404);
      expect((await get('/vehicles/status/x')).status).to.equal(400);
    });

    it('/events/recent: events of the window, in time order', async () => {
      const res = await get(`/events/recent?start_time=${NOW - 2.5 * 3600_000}&end_time=${NOW}`);
      expect(res.status).to.equal(200);
      expectMds('2.0/micromobility/events_recent', res.body);
      const ts = res.body.events.map((e: any) => e.timestamp);
      expect(ts).to.deep.equal([...ts].sort((a: number, b: number) => a - b));
      expect(res.body.events.map((e: any) => e.event_types[0])).to.deep.equal(['trip_start', 'trip_end', 'trip_start']);
    });

    for (const [label, qs] of [
      ['missing start_time', `end_time=${NOW}`],
      ['missing end_time', `start_time=${NOW - 1000}`],
      ['non-integer ms', `start_time=1.5&end_time=${NOW}`],
      ['ISO times', `start_time=2026-11-21T08&end_time=2026-11-21T09`],
      ['start after end', `start_time=${NOW}&end_time=${NOW - 1000}`],
      ['start equal end', `start_time=${NOW}&end_time=${NOW}`],
      ['more than two weeks back', `start_time=${NOW - 15 * 86400_000}&end_time=${NOW - 14.5 * 86400_000}`],
      ['window longer than two weeks', `start_time=${NOW - 13 * 86400_000}&end_time=${NOW + 2 * 86400_000}`],
      ['absurd number', `start_time=99999999999999999999&end_time=${NOW}`],
    ]) {
      it(`/events/recent with ${label} → 400`, async () => {
        const res = await get(`/events/recent?${qs}`);
        expect(res.status).to.equal(400);
        expect(res.body).to.have.keys('error', 'error_description', 'error_details');
      });
    }

    it('an empty window is an empty array', async () => {
      const res = await get(`/events/recent?start_time=${NOW - 1000}&end_time=${NOW}`);
      expect(res.status).to.equal(200);
      expect(res.body.events).to.deep.equal([]);
    });
  });

  describe('legacy host', () => {
    const lget = (path: string, accept: string) => legacy.get(`/en/berlin${path}`).set('Authorization', city).set('Accept', accept);

    it('GET /vehicles 1.2: only available, reserved/on-trip and unavailable vehicles', async () => {
      const res = await lget('/vehicles', V12);
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal(V12);
      expectMds('1.2.0/vehicles', res.body);
      const ids = res.body.data.vehicles.map((x: any) => x.device_id).sort();
      expect(ids).to.deep.equal([v.available, v.onTrip, v.broken].sort());
    });

    it('GET /vehicles 0.4: the same vehicles in the 0.4 vocabulary', async () => {
      const res = await lget('/vehicles', V04);
      expect(res.status).to.equal(200);
      expectMds('0.4.1/vehicles', res.body);
      const states = new Map<string, string>(res.body.data.vehicles.map((x: any) => [x.device_id, x.last_event_type]));
      expect([...states.keys()].sort()).to.deep.equal([v.available, v.onTrip, v.broken].sort());
      for (const s of states.values()) expect(s).to.be.oneOf(['available', 'reserved', 'unavailable']);
      expect(states.get(v.broken)).to.equal('unavailable');
    });

    it('POST /events 1.2 and 0.4: status changes of the window', async () => {
      const qs = `?start_time=${NOW - 6 * 3600_000}&end_time=${NOW}`;
      const r12 = await legacy.post(`/en/berlin/events${qs}`).set('Authorization', city).set('Accept', V12);
      expect(r12.status).to.equal(200);
      expectMds('1.2.0/events', r12.body);
      expect(r12.body.data.status_changes.length).to.be.greaterThan(3);
      const r04 = await legacy.post(`/en/berlin/events${qs}`).set('Authorization', city).set('Accept', V04);
      expect(r04.status).to.equal(200);
      expectMds('0.4.1/status_changes', r04.body);
    });

    it('POST /events: bad windows → 400; GET → 405', async () => {
      const res = await legacy
        .post(`/en/berlin/events?start_time=${NOW - 20 * 86400_000}&end_time=${NOW}`)
        .set('Authorization', city)
        .set('Accept', V12);
      expect(res.status).to.equal(400);
      expect(
        (
          await legacy
            .get(`/en/berlin/events?start_time=${NOW - 1000}&end_time=${NOW}`)
            .set('Authorization', city)
            .set('Accept', V12)
        ).status,
      ).to.equal(405);
    });
  });

  describe('MDS 2.0 90-minute rule', () => {
    it('90-minute rule: elsewhere, removed and missing stay listed 90 minutes after that event, then drop out', async () => {
      const db = t.ctx.db;
      await insertFeedZone(db, 'rule90');
      const auth = `Bearer ${await tokenFor(t.ctx, 'city-90', 'city', ['rule90'])}`;
      const fresh90 = request(buildApp(t.ctx).callback()); // its zone directory knows the new zone
      const get90 = (path: string) => fresh90.get(`/v1/partner-apis/mds/rule90${path}`).set('Authorization', auth);
      const fresh: Record<string, string> = {};
      for (const [state, types] of [
        ['elsewhere', ['trip_leave_jurisdiction']],
        ['removed', ['maintenance_pick_up']],
        ['missing', ['not_located']],
      ] as const) {
        fresh[state] = await vehicle(db, 'rule90', state);
        await event(db, fresh[state], 'rule90', ['service_start'], 'available', NOW - 4 * 3600_000);
        await event(db, fresh[state], 'rule90', [...types], state, NOW - 89 * 60_000);
      }
      const listed = async () => (await get90('/vehicles/status')).body.vehicles_status.map((x: any) => x.device_id);
      for (const id of Object.values(fresh)) expect(await listed()).to.include(id);
      expect((await get90(`/vehicles/status/${fresh.removed}`)).status).to.equal(200);
      t.ctx.clock.set(new Date(NOW + 2 * 60_000)); // 91 minutes after those events
      try {
        for (const id of Object.values(fresh)) expect(await listed()).to.not.include(id);
        expect((await get90(`/vehicles/status/${fresh.removed}`)).status).to.equal(404);
        // the other lists are not bound by the rule
        expect((await get90('/vehicles')).body.vehicles.map((x: any) => x.device_id)).to.include(fresh.removed);
      } finally {
        t.ctx.clock.set(new Date(NOW));
      }
    });
  });

  describe('compression (Accept-Encoding: gzip)', () => {
    const raw = (r: request.Test) =>
      r.buffer(true).parse((res, cb) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    const window = `start_time=${NOW - 2.5 * 3600_000}&end_time=${NOW}`;
    const cases: Array<[string, () => request.Test]> = [
      ['MDS 2.0 /vehicles', () => app.get('/v1/partner-apis/mds/berlin/vehicles')],
      ['MDS 2.0 /vehicles/status', () => app.get('/v1/partner-apis/mds/berlin/vehicles/status')],
      ['MDS 2.0 /events/recent', () => app.get(`/v1/partner-apis/mds/berlin/events/recent?${window}`)],
      ['legacy GET /vehicles', () => legacy.get('/en/berlin/vehicles').set('Accept', V12)],
      ['legacy POST /events', () => legacy.post(`/en/berlin/events?${window}`).set('Accept', V12)],
    ];
    for (const [label, req] of cases) {
      it(`${label}: gzip when accepted, identity otherwise, Vary either way, same JSON`, async () => {
        const zipped = await raw(req().set('Authorization', city).set('Accept-Encoding', 'gzip'));
        expect(zipped.status).to.equal(200);
        expect(zipped.headers['content-encoding']).to.equal('gzip');
        expect(zipped.headers.vary).to.match(/Accept-Encoding/i);
        const plain = await raw(req().set('Authorization', city).set('Accept-Encoding', 'identity'));
        expect(plain.headers['content-encoding']).to.equal(undefined);
        expect(plain.headers.vary).to.match(/Accept-Encoding/i);
        // superagent has already gunzipped the body: it parses only if the gzip stream was whole
        const a = JSON.parse((zipped.body as Buffer).toString());
        const b = JSON.parse((plain.body as Buffer).toString());
        // last_updated is the clock's now: the same in both (manual clock)
        expect(a).to.deep.equal(b);
      });
    }
  });
});
