/**
 * MDS 2.1 incidents (issue 40; migration 000330, api/feeds/incidents.ts): TOMP ACCIDENT and
 * BROKEN_DOWN tickets and `ops incidents add` become incidents, served per zone to the city role on
 * the MDS host with the 2.1 filters and paging, and named by the telemetry points that carry their
 * time and place (`incident_ids` in the hourly telemetry file and in vehicles/status).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import request from 'supertest';
import { Ajv } from 'ajv';
import { buildApp } from '../api/app.js';
import { publishHourSet } from '../publisher/publish.js';
import { feedById } from '../lib/feeds/publications.js';
import { MdsIncidentsSchema } from '../schemas/mds/v21.js';
import { TOMP_INCIDENT_TYPES } from '../lib/domain/incidents.js';
import { addIncident, listIncidents, updateIncident } from '../ops/admin/incidents.js';
import { ROOT } from '../lib/core/paths.js';
import { useTestContext } from './support/context.js';
import { entry } from './support/entries.js';
import { expectMds, tokenFor } from './support/feed-auth.js';
import { feedEvent, feedTelemetry, feedVehicle, feedZone } from './support/feed-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';

const V21 = 'application/vnd.mds+json;version=2.1';
const TELEMETRY = feedById('mds-2.0-telemetry')!;
const at = (s: string) => new Date(`2026-11-21T${s}Z`);
const validIncidents = new Ajv({ strict: false, allErrors: true }).compile(MdsIncidentsSchema);

type Body = { version: string; incidents: Array<Record<string, any>>; links: { next: string | null } };

describe('feeds: MDS 2.1 incidents', function () {
  this.timeout(60_000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z', config: { FEED_CACHE_BYTES: '0' } });
  let tompZone: string;
  let feedZoneId: string;
  let otherZone: string;
  let maas: { id: string; key: string };
  let bookingId: string;
  let tompVehicle: { id: string; code: string };
  let tripId: string;
  let city: string;
  let app: ReturnType<typeof request>;
  const ids: Record<string, string> = {};

  const incidentsOf = (zone: string, query = '', auth = city, accept?: string) => {
    const r = app.get(`/v1/partner-apis/mds/${zone}/incidents${query ? `?${query}` : ''}`).set('Authorization', auth);
    return accept === undefined ? r : r.set('Accept', accept);
  };
  const valid = (body: unknown) => expect(validIncidents(body), JSON.stringify(validIncidents.errors)).to.equal(true);
  const ticket = (supportType: string, time: string) =>
    app
      .post('/edge/tomp/support')
      .set('X-Access-Token', maas.key)
      .send({ id: bookingId, supportType, time, contactInformationEndUser: '+34 600 000 000', comment: 'my own words' });

  before(async () => {
    app = request(buildApp(t.ctx).callback());
    tompZone = await insertTompZone(t.ctx.db);
    otherZone = await insertTompZone(t.ctx.db, { lat: 41, lng: -4 });
    feedZoneId = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    maas = await insertMaasPartner(t.ctx.db);
    tompVehicle = await insertTompVehicle(t.ctx.db, tompZone);
    // the booking starts the ride at 10:00 (its rental and trip)
    const booked = await app
      .post('/edge/tomp/bookings/one-stop')
      .set('X-Access-Token', maas.key)
      .send(oneStopBody(tompVehicle.id, { lat: 40.4168, lng: -3.7038 }));
    expect(booked.status, JSON.stringify(booked.body)).to.equal(201);
    bookingId = booked.body.id;
    tripId = (
      await t.ctx.db.one<{ trip_id: string }>(`SELECT r.trip_id FROM tomp_bookings b JOIN rentals r ON r.id = b.rental_id WHERE b.id = $1`, [bookingId])
    ).trip_id;
    // the vehicle's positions during the ride
    for (const ts of ['10:04:00', '10:08:00', '10:20:00'])
      await t.ctx.db.query(
        `INSERT INTO telemetry (device_id, zone_id, ts, location, battery_percent, trip_id) VALUES ($1, $2, $3, ST_SetSRID(ST_MakePoint(-3.70, 40.41), 4326), 70, $4)`,
        [tompVehicle.id, tompZone, at(ts), tripId],
      );
    t.ctx.clock.set('2026-11-21T10:30:00Z');
    city = `Bearer ${await tokenFor(t.ctx, 'incidents-city', 'city')}`;
  });

  describe('from TOMP support tickets', () => {
    it('ACCIDENT is a crash and BROKEN_DOWN an unplanned stop; other tickets are no incidents', async () => {
      expect(TOMP_INCIDENT_TYPES).to.deep.equal({ ACCIDENT: 'crash', BROKEN_DOWN: 'unplanned_stop' });
      for (const [type, time] of [
        ['ACCIDENT', '2026-11-21T10:10:00Z'],
        ['BROKEN_DOWN', '2026-11-21T11:05:00+01:00'],
        ['NOT_CLEAN', '2026-11-21T10:12:00Z'],
      ]) {
        const res = await ticket(type, time);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
      }
      const rows = await t.ctx.db.many<{ incident_id: string; telemetry_ts: Date; support_type: string; incident_type: string }>(
        `SELECT i.incident_id, i.incident_type, i.zone_id, i.device_id, i.trip_id, i.telemetry_ts, i.source, i.preliminary, st.support_type
           FROM incidents i JOIN support_tickets st ON st.id = i.support_ticket_id ORDER BY i.publication_time`,
      );
      expect(rows.map((r) => [r.support_type, r.incident_type])).to.deep.equal([
        ['ACCIDENT', 'crash'],
        ['BROKEN_DOWN', 'unplanned_stop'],
      ]);
      for (const r of rows) expect(r).to.deep.include({ zone_id: tompZone, device_id: tompVehicle.id, trip_id: tripId, source: 'tomp', preliminary: true });
      // each names the vehicle's last known position at the ticket's time
      expect(rows.map((r) => r.telemetry_ts.toISOString())).to.deep.equal(['2026-11-21T10:08:00.000Z', '2026-11-21T10:04:00.000Z']);
      ids.crash = rows[0].incident_id;
      ids.stop = rows[1].incident_id;
    });

    it('GET /incidents answers them as MDS 2.1 records, valid, without the traveller’s words or contact', async () => {
      const res = await incidentsOf(tompZone);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.headers['content-type']).to.equal(V21);
      valid(res.body);
      const body = res.body as Body;
      expect(body.version).to.equal('2.1.0');
      expect(body.links).to.deep.equal({ next: null });
      expect(body.incidents.map((i) => i.incident_id)).to.have.members([ids.crash, ids.stop]);
      const crash = body.incidents.find((i) => i.incident_id === ids.crash)!;
      expect(crash).to.include({ incident_type: 'crash', preliminary: true, report_type: 'customer support ticket (TOMP)' });
      expect(crash.last_updated).to.equal(crash.publication_time);
      expect(JSON.stringify(body)).to.not.match(/my own words|600 000/);
      expect(Object.keys(crash)).to.not.include.members(['device_id', 'location', 'trip_ids']);
    });

    it('a ticket resolved later updates its incident: last_updated moves, preliminary false', async () => {
      const all = ((await incidentsOf(tompZone)).body as Body).incidents;
      const before = all.find((i) => i.incident_id === ids.crash)!;
      const newest = Math.max(...all.map((i) => i.last_updated as number));
      await new Promise((r) => setTimeout(r, 5));
      await t.ctx.db.query(`UPDATE support_tickets SET status = 'RESOLVED' WHERE id = (SELECT support_ticket_id FROM incidents WHERE incident_id = $1)`, [
        ids.crash,
      ]);
      const res = await incidentsOf(tompZone, `last_updated_start=${newest + 1}`);
      expect(res.status).to.equal(200);
      valid(res.body);
      const [after, ...rest] = (res.body as Body).incidents;
      expect(rest).to.deep.equal([]);
      expect(after).to.include({ incident_id: ids.crash, preliminary: false, publication_time: before.publication_time });
      expect(after.last_updated).to.be.greaterThan(before.last_updated);
    });
  });

  describe('from the ops command', () => {
    let device: string;
    let code: string;
    before(async () => {
      ({ id: device, code } = await feedVehicle(t.ctx.db, feedZoneId));
      await feedEvent(t.ctx.db, { deviceId: device, zoneId: feedZoneId, ts: at('08:00:00'), eventTypes: ['on_hours'], state: 'available' });
      await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: feedZoneId, ts: at('08:10:00') });
      await feedTelemetry(t.ctx.db, { deviceId: device, zoneId: feedZoneId, ts: at('08:40:00') });
    });

    it('adds an incident at a place: the vehicle gets a telemetry point there that names it', async () => {
      const r = await addIncident(t.ctx.db, t.ctx.clock.now(), {
        zone: feedZoneId,
        vehicle: code,
        type: 'vandalism',
        time: at('08:20:00'),
        lat: 52.53,
        lng: 13.41,
        description: 'handlebar broken off',
        severity: 'vehicle out of service',
        preliminary: true,
      });
      expect(r).to.include({ deviceId: device, tripId: null });
      expect(r.telemetryTs!.toISOString()).to.equal('2026-11-21T08:20:00.000Z');
      const point = await t.ctx.db.one(`SELECT ST_Y(location) AS lat, ST_X(location) AS lng FROM telemetry WHERE device_id = $1 AND ts = $2`, [
        device,
        at('08:20:00'),
      ]);
      expect(point).to.deep.equal({ lat: 52.53, lng: 13.41 });
      ids.vandalism = r.incidentId;
    });

    it('without a place, names the last known position; refuses operator mistakes with one line', async () => {
      const r = await addIncident(t.ctx.db, t.ctx.clock.now(), { zone: feedZoneId, vehicle: device, type: 'tip_over', time: at('08:45:00') });
      expect(r.telemetryTs!.toISOString()).to.equal('2026-11-21T08:40:00.000Z');
      ids.tip = r.incidentId;
      const none = await addIncident(t.ctx.db, t.ctx.clock.now(), { zone: feedZoneId, vehicle: device, type: 'near_miss', time: at('06:00:00') });
      expect(none.telemetryTs).to.equal(null);
      ids.nearMiss = none.incidentId;
      const refused = async (input: Partial<Parameters<typeof addIncident>[2]>, message: RegExp) => {
        const err = await addIncident(t.ctx.db, t.ctx.clock.now(), { zone: feedZoneId, vehicle: code, type: 'crash', time: at('08:00:00'), ...input }).catch(
          (e: Error) => e,
        );
        expect(err).to.be.instanceOf(Error);
        expect((err as Error).constructor.name).to.equal('AdminError');
        expect((err as Error).message).to.match(message);
      };
      await refused({ type: 'accident' }, /one of unplanned_stop, .*crash/);
      await refused({ zone: tompZone }, /is in zone/);
      await refused({ vehicle: 'ZZZZ' }, /no vehicle ZZZZ/);
      await refused({ lat: 52.5 }, /together/);
      await refused({ lat: 95, lng: 13 }, /±90/);
      await refused({ time: at('12:00:00') }, /future/);
      await refused({ trip: tripId }, /not a rental of vehicle/);
    });

    it('the trip is the rental running at the time, and an update moves last_updated; list shows them newest first', async () => {
      const onTrip = await addIncident(t.ctx.db, t.ctx.clock.now(), {
        zone: tompZone,
        vehicle: tompVehicle.code,
        type: 'harsh_stopping',
        time: at('10:21:00'),
      });
      expect(onTrip).to.include({ tripId });
      expect(onTrip.telemetryTs!.toISOString()).to.equal('2026-11-21T10:20:00.000Z');
      await new Promise((r) => setTimeout(r, 5));
      await updateIncident(t.ctx.db, ids.vandalism, { preliminary: false, description: 'handlebar and bell broken off' });
      const res = await incidentsOf(feedZoneId, `incident_id=${ids.vandalism}`);
      const [v] = (res.body as Body).incidents;
      expect(v).to.include({
        incident_type: 'vandalism',
        description: 'handlebar and bell broken off',
        severity: 'vehicle out of service',
        preliminary: false,
      });
      expect(v.last_updated).to.be.greaterThan(v.publication_time);
      const err = await updateIncident(t.ctx.db, '00000000-0000-4000-8000-000000000000', { severity: 'x' }).catch((e: Error) => e);
      expect((err as Error).message).to.match(/no incident/);
      const listed = await listIncidents(t.ctx.db, feedZoneId, 10);
      expect(listed.map((r) => r.incident_id)).to.deep.equal([ids.nearMiss, ids.tip, ids.vandalism]);
      expect(listed[0]).to.include({ zone_id: feedZoneId, vehicle_code: code, source: 'ops' });
    });
  });

  it('ops incidents add / update / list through the CLI, operator mistakes in one line', async () => {
    const zone = await feedZone(t.ctx.db, { createdAt: at('00:00:00') });
    const { code } = await feedVehicle(t.ctx.db, zone);
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [entry('ops'), 'incidents', ...args], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, DATABASE_URL: t.database.url, SIGNING_SECRET: 'x'.repeat(40), LOG_LEVEL: 'silent' },
      });
    const added = cli(['add', '--zone', zone, '--vehicle', code, '--type', 'crash', '--time', '2026-11-21T08:41:00Z', '--lat', '52.52', '--lng', '13.4']);
    expect(added.status, added.stderr).to.equal(0);
    const id = /^incident ([0-9a-f-]{36}) of device /.exec(added.stdout)?.[1];
    expect(id, added.stdout).to.be.a('string');
    expect(added.stdout).to.match(/named by its telemetry point at 2026-11-21T08:41:00.000Z/);
    // a second incident at that instant and another place names the same point, which keeps its place
    const same = await addIncident(t.ctx.db, t.ctx.clock.now(), {
      zone,
      vehicle: code,
      type: 'near_miss',
      time: new Date('2026-11-21T08:41:00Z'),
      lat: 52.5,
      lng: 13.3,
    });
    expect(same.telemetryTs!.toISOString()).to.equal('2026-11-21T08:41:00.000Z');
    const points = await t.ctx.db.many(`SELECT ST_Y(location) AS lat, ST_X(location) AS lng FROM telemetry WHERE zone_id = $1`, [zone]);
    expect(points).to.deep.equal([{ lat: 52.52, lng: 13.4 }]);
    const updated = cli(['update', id!, '--final', '--severity', 'minor']);
    expect(updated.status, updated.stderr).to.equal(0);
    const listed = cli(['list', '--zone', zone]);
    expect(listed.status, listed.stderr).to.equal(0);
    expect(listed.stdout).to.contain(id).and.to.contain('crash');
    for (const [args, message] of [
      [['add', '--zone', zone, '--vehicle', code, '--type', 'accident', '--time', '2026-11-21T08:41:00Z'], /^error: incident type accident: use one of /],
      [['add', '--zone', zone, '--vehicle', code, '--type', 'crash', '--time', 'yesterday'], /^error: --time must be an ISO 8601 date-time/],
      [['add', '--zone', zone, '--vehicle', code, '--type', 'crash', '--time', '2026-11-21T08:41:00Z', '--lat', 'north'], /must be decimal degrees/],
      [['update', id!], /^error: nothing to change/],
    ] as const) {
      const r = cli([...args]);
      expect(r.status, r.stderr).to.equal(1);
      expect(r.stderr.trim().split('\n'), r.stderr).to.have.length(1);
      expect(r.stderr).to.match(message);
    }
  });

  describe('the endpoint', () => {
    it('filters: incident_type, incident_id, the publication and last-updated windows ([start, end))', async () => {
      const all = ((await incidentsOf(feedZoneId)).body as Body).incidents;
      expect(all.map((i) => i.incident_id)).to.deep.equal([ids.vandalism, ids.tip, ids.nearMiss]);
      const ofType = await incidentsOf(feedZoneId, 'incident_type=tip_over');
      valid(ofType.body);
      expect((ofType.body as Body).incidents.map((i) => i.incident_id)).to.deep.equal([ids.tip]);
      expect(((await incidentsOf(feedZoneId, 'incident_type=crash')).body as Body).incidents).to.deep.equal([]);
      expect(((await incidentsOf(feedZoneId, `incident_id=${ids.nearMiss}`)).body as Body).incidents.map((i) => i.incident_id)).to.deep.equal([ids.nearMiss]);
      // another zone's incident is not found through this zone
      expect(((await incidentsOf(feedZoneId, `incident_id=${ids.crash}`)).body as Body).incidents).to.deep.equal([]);
      const [first, second, third] = all;
      const win = async (q: string) => ((await incidentsOf(feedZoneId, q)).body as Body).incidents.map((i) => i.incident_id);
      expect(await win(`publication_start_time=${second.publication_time}`)).to.deep.equal(
        [second, third].filter((i) => i.publication_time >= second.publication_time).map((i) => i.incident_id),
      );
      expect(await win(`publication_end_time=${second.publication_time}`)).to.deep.equal(
        [first].filter((i) => i.publication_time < second.publication_time).map((i) => i.incident_id),
      );
      expect(await win(`publication_start_time=${first.publication_time}&publication_end_time=${third.publication_time + 1}`)).to.deep.equal([
        ids.vandalism,
        ids.tip,
        ids.nearMiss,
      ]);
      // the vandalism incident was updated after the others were published
      expect(await win(`last_updated_start=${third.last_updated + 1}`)).to.deep.equal([ids.vandalism]);
      expect(await win(`last_updated_end=${first.last_updated}`)).to.deep.equal([ids.tip, ids.nearMiss]);
    });

    it('400 bad_param for a malformed or contradictory filter', async () => {
      for (const q of [
        'incident_type=accident',
        'incident_id=not-a-uuid',
        'publication_start_time=yesterday',
        'last_updated_end=-5',
        'publication_start_time=200&publication_end_time=100',
        'last_updated_start=100&last_updated_end=100',
        'incident_type=crash&incident_type=tip_over',
        'limit=0',
      ]) {
        const res = await incidentsOf(feedZoneId, q);
        expect(res.status, q).to.equal(400);
        expect(res.body.error, q).to.equal('bad_param');
        expectMds('2.0/error', res.body);
      }
    });

    it('Accept: 2.1 (or none) is served, 2.0 is 406 naming 2.1', async () => {
      for (const accept of [V21, 'application/vnd.mds+json;version=2.1.0', 'application/vnd.mds+json', '*/*', 'application/json']) {
        const res = await incidentsOf(feedZoneId, '', city, accept);
        expect(res.status, accept).to.equal(200);
        expect(res.headers['content-type']).to.equal(V21);
      }
      const res = await incidentsOf(feedZoneId, '', city, 'application/vnd.mds+json;version=2.0');
      expect(res.status).to.equal(406);
      expect(res.body).to.include({ error: 'not_acceptable' });
      expect(res.body.error_details).to.deep.equal([V21]);
    });

    it('city role only (403 for the data role), zone-scoped (403 outside the client’s zones), 401 without a token, 404 unknown zone', async () => {
      const data = `Bearer ${await tokenFor(t.ctx, 'incidents-data', 'data')}`;
      const d = await incidentsOf(feedZoneId, '', data);
      expect(d.status).to.equal(403);
      expect(d.body.error).to.equal('insufficient_scope');
      const scoped = `Bearer ${await tokenFor(t.ctx, 'incidents-scoped', 'city', [otherZone])}`;
      expect((await incidentsOf(feedZoneId, '', scoped)).status).to.equal(403);
      const own = await incidentsOf(otherZone, '', scoped);
      expect(own.status).to.equal(200);
      expect((own.body as Body).incidents).to.deep.equal([]);
      expect((await app.get(`/v1/partner-apis/mds/${feedZoneId}/incidents`)).status).to.equal(401);
      expect((await incidentsOf('no-such-zone')).status).to.equal(404);
    });

    it('pages of `limit` with links.next: every incident once while new ones are raised; cursors cannot be moved or forged', async () => {
      const zone = await insertTompZone(t.ctx.db, { lat: 42, lng: -5 });
      const v = await insertTompVehicle(t.ctx.db, zone, { lat: 42, lng: -5 });
      // a new app: the route's zone list was read before this zone existed
      app = request(buildApp(t.ctx).callback());
      const raise = async (n: number) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++)
          out.push((await addIncident(t.ctx.db, t.ctx.clock.now(), { zone, vehicle: v.id, type: 'unplanned_stop', time: at('09:00:00') })).incidentId);
        return out;
      };
      const first = await raise(7);
      const path = (u: string) => u.replace(/^https?:\/\/[^/]+/, '');
      let url = `/v1/partner-apis/mds/${zone}/incidents?incident_type=unplanned_stop&limit=3`;
      const seen: string[] = [];
      const pages: number[] = [];
      for (;;) {
        const res = await app.get(url).set('Authorization', city);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        valid(res.body);
        const body = res.body as Body;
        pages.push(body.incidents.length);
        seen.push(...body.incidents.map((i) => i.incident_id));
        // raised during the traversal: left to the next one
        if (pages.length === 1) await raise(2);
        if (body.links.next === null) break;
        expect(body.links.next).to.match(
          new RegExp(`^${t.ctx.config.publicBaseUrl}/v1/partner-apis/mds/${zone}/incidents\\?incident_type=unplanned_stop&limit=3&cursor=`),
        );
        url = path(body.links.next);
        if (pages.length === 1) {
          const cursor = new URL(body.links.next).searchParams.get('cursor')!;
          const moved = await app.get(`/v1/partner-apis/mds/${zone}/incidents?limit=3&cursor=${cursor}`).set('Authorization', city);
          expect(moved.status).to.equal(400);
          const resized = await app
            .get(`/v1/partner-apis/mds/${zone}/incidents?incident_type=unplanned_stop&limit=4&cursor=${cursor}`)
            .set('Authorization', city);
          expect(resized.status).to.equal(400);
          const forged = await app.get(url.replace(/cursor=([^&]+)/, (_, c: string) => `cursor=x${c.slice(1)}`)).set('Authorization', city);
          expect(forged.status).to.equal(400);
          expect(forged.body.error).to.equal('bad_param');
        }
      }
      expect(pages).to.deep.equal([3, 3, 1]);
      expect(seen).to.deep.equal(first);
      const again = ((await incidentsOf(zone, 'limit=5000')).body as Body).incidents;
      expect(again).to.have.length(9);

      // page[size] / page[number] (JSON:API, MDS 2.1): pinned by page[as_of], first/prev/next/last links
      const numbered = async (q: string) => {
        const res = await app.get(`/v1/partner-apis/mds/${zone}/incidents?${q}`).set('Authorization', city);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        valid(res.body);
        return res.body as Body & { links: { first: string; prev: string | null; next: string | null; last: string } };
      };
      const p1 = await numbered('incident_type=unplanned_stop&page[size]=4&page[number]=1');
      expect(p1.incidents.map((i) => i.incident_id)).to.deep.equal(again.slice(0, 4).map((i) => i.incident_id));
      expect(p1.links.prev).to.equal(null);
      expect(new URL(p1.links.last).searchParams.get('page[number]')).to.equal('3');
      expect(new URL(p1.links.next!).searchParams.get('page[size]')).to.equal('4');
      await raise(3);
      // under the pin the pages stay as they were: 9 incidents, the last page holds one
      const p3 = await numbered(path(p1.links.last).split('?')[1]);
      expect(p3.incidents.map((i) => i.incident_id)).to.deep.equal(again.slice(8).map((i) => i.incident_id));
      expect(p3.links.next).to.equal(null);
      expect(p3.links.prev).to.be.a('string');
      const past = await numbered(`incident_type=unplanned_stop&page[size]=4&page[number]=9`);
      expect(past.incidents).to.deep.equal([]);
      // the styles do not mix, the pin is the filters' own, sizes up to 5,000
      const pin = new URL(p1.links.next!).searchParams.get('page[as_of]')!;
      for (const q of [
        `page[number]=2&cursor=x`,
        `incident_type=crash&page[size]=4&page[number]=2&page[as_of]=${encodeURIComponent(pin)}`,
        `page[size]=0`,
        `page[size]=4&limit=5`,
        `page[bogus]=1`,
      ]) {
        const res = await app.get(`/v1/partner-apis/mds/${zone}/incidents?${q}`).set('Authorization', city);
        expect(res.status, q).to.equal(400);
        expect(res.body.error).to.equal('bad_param');
      }
      expect((await numbered('page[size]=5000')).incidents).to.have.length(12);
    });
  });

  describe('incident_ids on telemetry', () => {
    it('the hourly telemetry file: the point that names an incident carries its id; the file stays valid MDS 2.0', async () => {
      const [r] = await publishHourSet(t.ctx, feedZoneId, at('08:00:00'), { feeds: [TELEMETRY] });
      expect(r).to.include({ outcome: 'written', records: 3 });
      const res = await request(buildApp(t.ctx).callback())
        .get(`/v1/partner-apis/mds/${feedZoneId}/telemetry?telemetry_time=2026-11-21T08`)
        .set('Authorization', city);
      expect(res.status).to.equal(200);
      expectMds('2.0/telemetry', res.body);
      const points = res.body.telemetry as Array<Record<string, any>>;
      expect(points.map((p) => [new Date(p.timestamp).toISOString().slice(11, 16), p.incident_ids])).to.deep.equal([
        ['08:10', undefined],
        ['08:20', [ids.vandalism]],
        ['08:40', [ids.tip]],
      ]);
      expect(points[1].location).to.deep.equal({ lat: 52.53, lng: 13.41 });
    });

    it('an incident linked to a published hour dirties it; republished, the point names it', async () => {
      const read = () =>
        request(buildApp(t.ctx).callback()).get(`/v1/partner-apis/mds/${feedZoneId}/telemetry?telemetry_time=2026-11-21T08`).set('Authorization', city);
      const before = (await read()).body.last_updated.last_updated as number;
      const { code } = await t.ctx.db.one<{ code: string }>(`SELECT code FROM vehicles WHERE zone_id = $1`, [feedZoneId]);
      const late = await addIncident(t.ctx.db, t.ctx.clock.now(), { zone: feedZoneId, vehicle: code, type: 'crash', time: at('08:12:00') });
      expect(late.telemetryTs!.toISOString()).to.equal('2026-11-21T08:10:00.000Z');
      const row = await t.ctx.db.one(`SELECT dirty FROM feed_publications WHERE feed = 'mds_telemetry' AND scope = $1 AND hour = '2026-11-21 08:00'`, [
        feedZoneId,
      ]);
      expect(row.dirty).to.equal(true);
      const [r] = await publishHourSet(t.ctx, feedZoneId, at('08:00:00'), { feeds: [TELEMETRY] });
      expect(r).to.include({ outcome: 'written', records: 3 });
      const res = await request(buildApp(t.ctx).callback())
        .get(`/v1/partner-apis/mds/${feedZoneId}/telemetry?telemetry_time=2026-11-21T08`)
        .set('Authorization', city);
      expect(res.body.telemetry[0].incident_ids).to.deep.equal([late.incidentId]);
      expectMds('2.0/telemetry', res.body);
      // the hour's data changed when the incident was published
      const published = ((await incidentsOf(feedZoneId, `incident_id=${late.incidentId}`)).body as Body).incidents[0].publication_time as number;
      expect(res.body.last_updated.last_updated).to.be.greaterThan(before).and.to.be.at.least(published);
    });

    it('vehicles/status: a last telemetry point that names incidents carries them, valid against the official 2.0 schema', async () => {
      const res = await app.get(`/v1/partner-apis/mds/${tompZone}/vehicles/status/${tompVehicle.id}`).set('Authorization', city);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expectMds('2.0/micromobility/vehicles_status_device_id', res.body);
      const onTrip = await t.ctx.db.one(`SELECT incident_id FROM incidents WHERE incident_type = 'harsh_stopping'`);
      expect(res.body.vehicles_status[0].last_telemetry.incident_ids).to.deep.equal([onTrip.incident_id]);
      const list = await app.get(`/v1/partner-apis/mds/${feedZoneId}/vehicles/status`).set('Authorization', city);
      expectMds('2.0/micromobility/vehicles_status', list.body);
      // its last point (08:40) names the tip-over
      expect(list.body.vehicles_status[0].last_telemetry.incident_ids).to.deep.equal([ids.tip]);
    });
  });
});
