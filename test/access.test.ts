/**
 * Access rules under attack: a partner never reads, changes or ends another partner's users or
 * rentals (answered as not found, and nothing changes); a TOMP key never sees another MaaS partner's
 * bookings or legs; a feed token never reaches another role's feeds or zones outside its list;
 * tampered or expired photo and receipt signatures are refused; the per-key rate limit holds across
 * two API processes (two pools, two apps) on one database.
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { buildApp } from '../api/app.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import type { AppContext } from '../lib/domain/context.js';
import { useTestContext } from './support/context.js';
import { expectError, insertPartner, insertUser, insertVehicle, insertZone, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { insertClient, insertFeedZone, tokenFor } from './support/feed-auth.js';
import { count } from './support/figures.js';

const ROW = 'access';

describe('access rules', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let api: supertest.Agent;
  let zone: ZoneFixture;

  before(async () => {
    api = supertest.agent(buildApp(t.ctx).callback());
    zone = await insertZone(t.ctx.db);
  });

  describe('partner API: another partner’s users and rentals are not found', () => {
    let a: { id: string; key: string };
    let b: { id: string; key: string };
    let userA: string;
    let rentalA: string;

    before(async () => {
      a = await insertPartner(t.ctx.db);
      b = await insertPartner(t.ctx.db);
      userA = await insertUser(t.ctx.db, a.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const res = await api.post('/v1/rental/start').set('X-Auth-Token', a.key).send({ userId: userA, vehicleId: v.id });
      expect(res.status, res.text).to.equal(200);
      rentalA = res.body.data[0].id;
    });

    it('reads, updates, deletes and ends by B answer not found and change nothing', async () => {
      const asB = (req: supertest.Test) => req.set('X-Auth-Token', b.key);
      const probes: Array<[string, supertest.Test, number, string]> = [
        ['get user', asB(api.get(`/v1/user/id/${userA}`)), 404, 'ErrUserNotFound'],
        ['get user (plural)', asB(api.get(`/v1/users/${userA}`)), 404, 'ErrUserNotFound'],
        ['update user', asB(api.patch(`/v1/user/${userA}`)).send({ email: 'taken@example.com' }), 404, 'ErrUserNotFound'],
        ['rentals of user', asB(api.get(`/v1/rental/user/${userA}`)), 404, 'ErrUserNotFound'],
        ['active rental', asB(api.get(`/v1/rental/user/${userA}/active`)), 404, 'ActiveRentalNotFound'],
        ['get rental', asB(api.get(`/v1/rental/${rentalA}`)), 404, 'RentalIDDoesNotExist'],
        ['end rental', asB(api.post(`/v1/rental/${rentalA}/end`)).send({}), 404, 'RentalIDDoesNotExist'],
      ];
      for (const [what, req, status, code] of probes) {
        count(ROW, 'inputs');
        const res = await req;
        expect(res.status, `${what}: ${res.text}`).to.equal(status);
        expectError(res, status, code);
      }
      count(ROW, 'inputs');
      const del = await asB(api.delete(`/v1/user/${userA}`));
      expect(del.status, del.text).to.equal(404);
      // B starting a rental for A's user: the user does not exist for B
      const v = await insertVehicle(t.ctx.db, zone);
      count(ROW, 'inputs');
      expectError(await asB(api.post('/v1/rental/start')).send({ userId: userA, vehicleId: v.id }), 400, 'UserNotFound');
      // nothing changed for A
      const user = await api.get(`/v1/user/id/${userA}`).set('X-Auth-Token', a.key);
      expect(user.status).to.equal(200);
      expect(user.body.data.attributes.email).to.not.equal('taken@example.com');
      const rental = await api.get(`/v1/rental/${rentalA}`).set('X-Auth-Token', a.key);
      expect(rental.body.data[0].attributes?.state ?? rental.body.data[0].state).to.equal('RUNNING');
      const { n } = await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE user_id = $1`, [userA]);
      expect(n).to.equal(1);
    });
  });

  describe('TOMP: another MaaS partner’s bookings and legs are not found', () => {
    it('read, events, leg events and support by B answer 404', async () => {
      const tz = await insertTompZone(t.ctx.db);
      const a = await insertMaasPartner(t.ctx.db);
      const b = await insertMaasPartner(t.ctx.db);
      const v = await insertTompVehicle(t.ctx.db, tz);
      const booked = await api.post('/edge/tomp/bookings/one-stop').set('X-Access-Token', a.key).send(oneStopBody(v.id, v));
      expect(booked.status, booked.text).to.equal(201);
      const { id, legs } = booked.body;
      const asB = (req: supertest.Test) => req.set('X-Access-Token', b.key);
      const probes: Array<[string, supertest.Test]> = [
        ['booking', asB(api.get(`/edge/tomp/bookings/${id}`))],
        ['leg', asB(api.get(`/edge/tomp/legs/${legs[0].id}`))],
        ['booking event', asB(api.post(`/edge/tomp/bookings/${id}/events`)).send({ operation: 'CANCEL' })],
        ['leg event', asB(api.post(`/edge/tomp/legs/${legs[0].id}/events`)).send({ event: 'FINISH' })],
        [
          'support',
          asB(api.post('/edge/tomp/support')).send({ id, supportType: 'OTHER', time: '2026-11-21T09:00:00Z', contactInformationEndUser: 'x', comment: 'y' }),
        ],
      ];
      for (const [what, req] of probes) {
        count(ROW, 'inputs');
        const res = await req;
        expect(res.status, `${what}: ${res.text}`).to.equal(404);
        expect(res.body.status).to.equal(404);
      }
      const leg = await api.get(`/edge/tomp/legs/${legs[0].id}`).set('X-Access-Token', a.key);
      expect(leg.body.state).to.not.equal('FINISHED');
    });

    it('a partner API key is not a TOMP key, and the reverse', async () => {
      const p = await insertPartner(t.ctx.db);
      const m = await insertMaasPartner(t.ctx.db);
      count(ROW, 'inputs', 2);
      expect((await api.get('/edge/tomp/operator/meta').set('X-Access-Token', p.key)).status).to.equal(403);
      expectError(await api.get('/v1/zone/info').set('X-Auth-Token', m.key), 403, 'Forbidden');
    });
  });

  describe('feeds: roles and zones', () => {
    let z1: string;
    let z2: string;
    before(async () => {
      z1 = await insertFeedZone(t.ctx.db, 'acc-z1');
      z2 = await insertFeedZone(t.ctx.db, 'acc-z2');
      await insertClient(t.ctx.db, 'acc-city', 'city', [z1]);
      await insertClient(t.ctx.db, 'acc-gbfs', 'gbfs');
      await insertClient(t.ctx.db, 'acc-ins', 'insurer', [z1]);
    });

    it('a token never reaches another role’s feeds or a zone outside its list', async () => {
      const city = await tokenFor(t.ctx, 'acc-city', 'city', [z1]);
      const gbfs = await tokenFor(t.ctx, 'acc-gbfs', 'gbfs');
      const ins = await tokenFor(t.ctx, 'acc-ins', 'insurer', [z1]);
      const MDS = 'application/vnd.mds+json;version=2.0';
      const INS = 'application/vnd.insurance+json;version=2.0';
      const denied: Array<[string, string, string, number[]]> = [
        // zone outside the city's list
        [city, `/v1/partner-apis/mds/${z2}/trips?end_time=2026-11-21T08`, MDS, [403, 404]],
        [city, `/v1/partner-apis/mds/${z2}/vehicles`, MDS, [403, 404]],
        [city, `/v1/partner-apis/gbfs/${z2}/gbfs.json`, '', [403, 404]],
        // the city role reads no insurance
        [city, `/v1/partner-apis/insurance/${z1}/trips?end_time=2026-11-21T08`, INS, [403]],
        // the gbfs role reads no MDS and no insurance
        [gbfs, `/v1/partner-apis/mds/${z1}/trips?end_time=2026-11-21T08`, MDS, [403]],
        [
          gbfs,
          `/v1/partner-apis/mds/${z1}/events/recent?start_time=${Date.parse('2026-11-21T09:00:00Z')}&end_time=${Date.parse('2026-11-21T10:00:00Z')}`,
          MDS,
          [403],
        ],
        [gbfs, `/v1/partner-apis/insurance/${z1}/trips?end_time=2026-11-21T08`, INS, [403]],
        // the insurer reads no MDS, and no zone outside its list
        [ins, `/v1/partner-apis/mds/${z1}/vehicles`, MDS, [403]],
        [ins, `/v1/partner-apis/insurance/${z2}/trips?end_time=2026-11-21T08`, INS, [403, 404]],
      ];
      for (const [token, path, accept, statuses] of denied) {
        count(ROW, 'inputs');
        const req = api.get(path).set('Authorization', `Bearer ${token}`);
        const res = accept ? await req.set('Accept', accept) : await req;
        expect(statuses, `${path}: ${res.status} ${res.text}`).to.include(res.status);
        expect(res.body.error).to.be.a('string');
        expect(res.text).to.not.match(/"trips"|"vehicles"|"events"|"data"/);
      }
    });

    it('a token signed with another secret, or expired, is 401', async () => {
      const token = await tokenFor(t.ctx, 'acc-city', 'city', [z1]);
      const [h, p, s] = token.split('.');
      const tampered = [
        // the signature's first character: all six of its bits are signature bits (the last
        // character's lowest two are padding, so changing only those could leave it valid)
        `${h}.${p}.${s[0] === 'A' ? 'B' : 'A'}${s.slice(1)}`,
        p
          ? `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), role: 'city', zones: null })).toString('base64url')}.${s}`
          : token + 'x',
      ];
      for (const bad of tampered) {
        count(ROW, 'inputs');
        const res = await api
          .get(`/v1/partner-apis/mds/${z1}/vehicles`)
          .set('Authorization', `Bearer ${bad}`)
          .set('Accept', 'application/vnd.mds+json;version=2.0');
        expect(res.status, res.text).to.equal(401);
      }
      const clock = t.ctx.clock;
      const was = clock.now();
      clock.set(new Date(was.getTime() + (t.ctx.config.tokenTtlSeconds + 1) * 1000));
      try {
        count(ROW, 'inputs');
        const res = await api
          .get(`/v1/partner-apis/mds/${z1}/vehicles`)
          .set('Authorization', `Bearer ${token}`)
          .set('Accept', 'application/vnd.mds+json;version=2.0');
        expect(res.status, res.text).to.equal(401);
      } finally {
        clock.set(was);
      }
    });
  });

  describe('signed photo and receipt URLs', () => {
    it('tampered, re-purposed or expired signatures are refused', async () => {
      const p = await insertPartner(t.ctx.db);
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const started = await api.post('/v1/rental/start').set('X-Auth-Token', p.key).send({ userId: user, vehicleId: v.id });
      expect(started.status, started.text).to.equal(200);
      const ended = await api.post(`/v1/rental/${started.body.data[0].id}/end`).set('X-Auth-Token', p.key).send({});
      expect(ended.status, ended.text).to.equal(200);
      const r = ended.body.data[0];
      const rec = r.attributes ?? r;
      const photo = new URL(rec.photoUploadURL ?? r.photoUploadURL);
      const receipt = new URL((rec.receipt ?? r.receipt).url);
      const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xd9]);
      const put = (u: URL) =>
        api
          .put(u.pathname + u.search)
          .set('Content-Type', 'image/jpeg')
          .send(jpeg);
      const flip = (sig: string) => (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);

      const otherRental = new URL(photo);
      otherRental.pathname = otherRental.pathname.replace(/[0-9a-f-]{36}/, '6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b');
      const badSig = new URL(photo);
      badSig.searchParams.set('sig', flip(photo.searchParams.get('sig')!));
      const longer = new URL(photo);
      longer.searchParams.set('expires', String(Number(photo.searchParams.get('expires')) + 3600));
      const noSig = new URL(photo);
      noSig.searchParams.delete('sig');
      const asReceipt = new URL(receipt);
      asReceipt.pathname = receipt.pathname.replace(/receipt$/, 'photo');
      // one spelling per signature: the same HMAC bytes in another base64url spelling (the last
      // character of 43 carries 2 unused bits), and the same expiry with a leading zero
      const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const sig = photo.searchParams.get('sig')!;
      expect(sig).to.have.length(43);
      const otherBits = new URL(photo);
      otherBits.searchParams.set('sig', sig.slice(0, -1) + B64URL[B64URL.indexOf(sig.at(-1)!) ^ 1]);
      expect(Buffer.from(otherBits.searchParams.get('sig')!, 'base64url').equals(Buffer.from(sig, 'base64url')), 'same bytes').to.equal(true);
      const leadingZero = new URL(photo);
      leadingZero.searchParams.set('expires', `0${photo.searchParams.get('expires')}`);
      const padded = new URL(photo);
      padded.searchParams.set('sig', `${sig}=`);
      for (const u of [otherRental, badSig, longer, noSig, asReceipt, otherBits, leadingZero, padded]) {
        count(ROW, 'inputs');
        expectError(await put(u), 403, 'ErrInvalidURLSignature');
      }
      const rBad = new URL(receipt);
      rBad.searchParams.set('sig', flip(receipt.searchParams.get('sig')!));
      const rAsPhoto = new URL(photo);
      rAsPhoto.pathname = photo.pathname.replace(/photo$/, 'receipt');
      const rSig = receipt.searchParams.get('sig')!;
      const rOtherBits = new URL(receipt);
      rOtherBits.searchParams.set('sig', rSig.slice(0, -1) + B64URL[B64URL.indexOf(rSig.at(-1)!) ^ 2]);
      const rLeadingZero = new URL(receipt);
      rLeadingZero.searchParams.set('expires', `00${receipt.searchParams.get('expires')}`);
      for (const u of [rBad, rAsPhoto, rOtherBits, rLeadingZero]) {
        count(ROW, 'inputs');
        expectError(await api.get(u.pathname + u.search), 403, 'ErrInvalidURLSignature');
      }
      // the genuine receipt link works; after its expiry it is refused too
      expect((await api.get(receipt.pathname + receipt.search)).status).to.equal(200);
      const was = t.ctx.clock.now();
      t.ctx.clock.set(new Date(Math.max(Number(photo.searchParams.get('expires')), Number(receipt.searchParams.get('expires'))) * 1000 + 1000));
      try {
        count(ROW, 'inputs', 2);
        expectError(await put(photo), 410, 'ParkingPhotoUploadWindowExpired');
        expectError(await api.get(receipt.pathname + receipt.search), 403, 'ErrInvalidURLSignature');
      } finally {
        t.ctx.clock.set(was);
      }
    });
  });

  describe('rate limit across two API processes on one database', () => {
    it('the sum of allowed requests over two pools and two apps stays within the limit', async () => {
      const limit = 7;
      const p = await insertPartner(t.ctx.db, { rateLimitPerMinute: limit });
      const log = createLogger('silent');
      const second: AppContext = { ...t.ctx, db: new Db(t.ctx.config.databaseUrl, log, { max: 10 }) };
      try {
        const apps = [supertest(buildApp(t.ctx).callback()), supertest(buildApp(second).callback())];
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => apps[i % 2].get('/v1/zone/info').set('X-Auth-Token', p.key)));
        count(ROW, 'races');
        count(ROW, 'inputs', answers.length);
        const ok = answers.filter((r) => r.status === 200).length;
        const limited = answers.filter((r) => r.status === 429);
        expect(ok + limited.length, answers.map((r) => r.status).join(',')).to.equal(30);
        expect(ok).to.equal(limit);
        for (const r of limited) {
          expectError(r, 429, 'RateLimitExceeded');
          expect(Number(r.get('Retry-After'))).to.be.greaterThan(0);
        }
      } finally {
        await second.db.close();
      }
    });
  });
});
