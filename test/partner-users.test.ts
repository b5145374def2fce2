/** Partner API over HTTP: users (register, read, update, GDPR erasure), auth, rate limit, transport errors. */
import { expect } from 'chai';
import request from 'supertest';
import { useTestContext } from './support/context.js';
import { buildApp } from '../api/app.js';
import {
  expectError,
  expectValid,
  failingQuery,
  insertPartner,
  insertUser,
  insertVehicle,
  insertZone,
  type PartnerFixture,
} from './support/partner-fixtures.js';
import { UserRecord } from '../schemas/partner/responses.js';
import { startRental } from '../lib/domain/rentals/engine.js';

describe('partner API: users, auth and transport', function () {
  const t = useTestContext({ config: { MAX_BODY_BYTES: '2048' } });
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let other: PartnerFixture;

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    other = await insertPartner(t.ctx.db);
  });

  const post = (path: string, body: unknown, key = p.key) =>
    request(server)
      .post(path)
      .set('X-Auth-Token', key)
      .send(body as object);

  describe('register', () => {
    it('registers a user and reads it back (singular, plural, Bearer)', async () => {
      const res = await post('/v1/user/register', { email: 'ann@example.com', externalId: 'a-1' });
      expect(res.status).to.equal(200);
      expect(res.body.data).to.deep.include({ type: 'user', attributes: { email: 'ann@example.com', externalId: 'a-1' } });
      expectValid(UserRecord, res.body.data);
      const id = res.body.data.id;
      for (const path of [`/v1/user/id/${id}`, `/v1/users/${id}`]) {
        const g = await request(server).get(path).set('Authorization', `Bearer ${p.key}`);
        expect(g.status).to.equal(200);
        expect(g.body).to.deep.equal(res.body);
      }
    });
    it('has no uniqueness constraint', async () => {
      const a = await post('/v1/user/register', { email: 'same@example.com', externalId: 'same' });
      const b = await post('/v1/user/register', { email: 'same@example.com', externalId: 'same' });
      expect(a.status).to.equal(200);
      expect(b.status).to.equal(200);
      expect(a.body.data.id).to.not.equal(b.body.data.id);
    });
    it('error rows', async () => {
      expectError(await post('/v1/user/register', { email: 'x@example.com', externalId: '' }), 400, 'ErrEmptyUserExternalID', 'empty external id');
      expectError(await post('/v1/user/register', { email: 'x@example.com' }), 400, 'ErrEmptyUserExternalID');
      expectError(await post('/v1/user/register', { email: '  ', externalId: 'e' }), 400, 'EmptyUserEmailID', 'empty e-mail');
      expectError(await post('/v1/user/register', { email: 'not-an-email', externalId: 'e' }), 400, 'ErrInvalidUserEmailID', 'invalid e-mail format');
      expectError(await post('/v1/user/register', { email: 1, externalId: 'e' }), 400, 'InvalidRequestBody', 'invalid body');
      expectError(await post('/v1/user/register', { email: 'x@example.com', externalId: 'e', admin: true }), 400, 'InvalidRequestBody');
      expectError(await post('/v1/user/register', [1, 2]), 400, 'InvalidRequestBody');
      const bad = await request(server).post('/v1/user/register').set('X-Auth-Token', p.key).set('Content-Type', 'application/json').send('{"email":');
      expectError(bad, 400, 'InvalidRequestBody');
      const empty = await request(server).post('/v1/user/register').set('X-Auth-Token', p.key);
      expectError(empty, 400, 'InvalidRequestBody');
    });
    it('ErrUserRegistrationFailed when the insert fails; NUL bytes are a bad body', async () => {
      expectError(await post('/v1/user/register', { email: 'x@example.com', externalId: 'a\u0000b' }), 400, 'InvalidRequestBody');
      const broken = buildApp(failingQuery(t.ctx, 'PartnerUserInsert', new Error('disk full'))).callback();
      const res = await request(broken).post('/v1/user/register').set('X-Auth-Token', p.key).send({ email: 'x@example.com', externalId: 'e' });
      expectError(res, 500, 'ErrUserRegistrationFailed', 'unable to register');
      expect(JSON.stringify(res.body)).to.not.contain('disk full');
    });
  });

  describe('get, update, delete', () => {
    it('get: InvalidUserId for non-UUID and non-v4 ids, ErrUserNotFound for unknown and other partners', async () => {
      expectError(await request(server).get('/v1/user/id/123').set('X-Auth-Token', p.key), 400, 'InvalidUserId', 'invalid user id');
      expectError(await request(server).get('/v1/user/id/6ba7b810-9dad-11d1-80b4-00c04fd430c8').set('X-Auth-Token', p.key), 400, 'InvalidUserId');
      expectError(
        await request(server).get('/v1/user/id/6ba7b810-9dad-41d1-80b4-00c04fd430c8').set('X-Auth-Token', p.key),
        404,
        'ErrUserNotFound',
        'user not found',
      );
      const theirs = await insertUser(t.ctx.db, other.id);
      expectError(await request(server).get(`/v1/user/id/${theirs}`).set('X-Auth-Token', p.key), 404, 'ErrUserNotFound');
    });
    it('update changes only sent fields', async () => {
      const id = (await post('/v1/user/register', { email: 'b@example.com', externalId: 'b-1' })).body.data.id;
      for (const path of [`/v1/user/${id}`, `/v1/users/${id}`]) {
        const r = await request(server)
          .patch(path)
          .set('X-Auth-Token', p.key)
          .send({ email: `new-${path.length}@example.com` });
        expect(r.status).to.equal(200);
        expect(r.body.data.attributes).to.deep.equal({ email: `new-${path.length}@example.com`, externalId: 'b-1' });
      }
      const same = await request(server).patch(`/v1/user/${id}`).set('X-Auth-Token', p.key).send({});
      expect(same.body.data.attributes.externalId).to.equal('b-1');
      expectError(await request(server).patch(`/v1/user/${id}`).set('X-Auth-Token', p.key).send({ externalId: 'x' }), 400, 'InvalidRequestBody');
      expectError(await request(server).patch(`/v1/user/${id}`).set('X-Auth-Token', p.key).send({ email: 'nope' }), 400, 'ErrInvalidUserEmailID');
      expectError(await request(server).patch(`/v1/user/zzz`).set('X-Auth-Token', p.key).send({}), 400, 'InvalidUserId');
      const theirs = await insertUser(t.ctx.db, other.id);
      expectError(await request(server).patch(`/v1/user/${theirs}`).set('X-Auth-Token', p.key).send({ email: 'a@b.cd' }), 404, 'ErrUserNotFound');
    });
    it('delete erases personal data, keeps rentals, and refuses while a rental runs', async () => {
      const zone = await insertZone(t.ctx.db);
      const v = await insertVehicle(t.ctx.db, zone);
      const id = (await post('/v1/user/register', { email: 'c@example.com', externalId: 'c-1' })).body.data.id;
      const rental = await startRental(t.ctx, { partnerId: p.id, userId: id, vehicleId: v.id, source: 'partner' });
      expectError(await request(server).delete(`/v1/user/${id}`).set('X-Auth-Token', p.key), 409, 'UserHasActiveRental');
      await t.ctx.db.query(
        `UPDATE rentals SET state='ENDED', ended_at=started_at, duration_min=0, distance_m=0, subtotal=0, total_amount=0, vat_amount=0, vehicle_end_location=vehicle_start_location WHERE id=$1`,
        [rental.id],
      );
      expectError(await request(server).delete(`/v1/user/${id}`).set('X-Auth-Token', other.key), 404, 'ErrUserNotFound');
      // the same customer's personal data on a TOMP booking and its support ticket goes too
      const { id: bookingId } = await t.ctx.db.one(
        `INSERT INTO tomp_bookings (partner_id, user_id, vehicle_id, state, from_location, customer_external_id, expires_at)
         VALUES ($1, $2, $3, 'CANCELLED', ST_SetSRID(ST_MakePoint(13.4, 52.5), 4326), 'c-1', now()) RETURNING id`,
        [p.id, id, v.id],
      );
      await t.ctx.db.query(
        `INSERT INTO support_tickets (booking_id, partner_id, support_type, occurred_at, contact_information_end_user, comment)
                            VALUES ($1, $2, 'OTHER', now(), 'c@example.com +49 30 1234', 'my name is C')`,
        [bookingId, p.id],
      );
      const del = await request(server).delete(`/v1/user/${id}`).set('X-Auth-Token', p.key);
      expect(del.status).to.equal(204);
      const row = await t.ctx.db.one(`SELECT email, external_id, deleted_at FROM users WHERE id = $1`, [id]);
      expect(row.email).to.equal(null);
      expect(row.external_id).to.equal(null);
      expect(row.deleted_at).to.be.instanceOf(Date);
      expect((await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE user_id = $1`, [id])).n).to.equal(1);
      expect((await t.ctx.db.one(`SELECT customer_external_id FROM tomp_bookings WHERE id = $1`, [bookingId])).customer_external_id).to.equal('[erased]');
      expect(await t.ctx.db.one(`SELECT contact_information_end_user, comment FROM support_tickets WHERE booking_id = $1`, [bookingId])).to.deep.equal({
        contact_information_end_user: '[erased]',
        comment: '[erased]',
      });
      expectError(await request(server).get(`/v1/user/id/${id}`).set('X-Auth-Token', p.key), 404, 'ErrUserNotFound');
      expectError(await request(server).delete(`/v1/users/${id}`).set('X-Auth-Token', p.key), 404, 'ErrUserNotFound');
      expectError(await request(server).delete(`/v1/user/nope`).set('X-Auth-Token', p.key), 400, 'InvalidUserId');
    });
  });

  describe('auth, limits, routing', () => {
    it('401 Unauthorized without or with an unknown key; 403 Forbidden naming the right API for a key of another API', async () => {
      expectError(await request(server).get('/v1/zone/info'), 401, 'Unauthorized');
      expectError(await request(server).get('/v1/zone/info').set('X-Auth-Token', 'nope-nope-nope'), 401, 'Unauthorized');
      expectError(await request(server).get('/v1/zone/info').set('Authorization', 'Basic abc'), 401, 'Unauthorized');
      const { createApiKey } = await import('../lib/domain/credentials/api-keys.js');
      const tomp = await createApiKey(t.ctx.db, p.id, 'tomp');
      const wrong = await request(server).get('/v1/zone/info').set('X-Auth-Token', tomp.key);
      expectError(wrong, 403, 'Forbidden');
      expect(wrong.body.errors[0].detail).to.contain('the TOMP API (/edge/tomp, header X-Access-Token)');
      const ops = await createApiKey(t.ctx.db, p.id, 'ops');
      expect((await request(server).get('/v1/zone/info').set('X-Auth-Token', ops.key)).body.errors[0].detail).to.contain('the operator console');
    });

    it('a missing required parameter is named: zoneId= sent for zoneID=', async () => {
      const res = await request(server).get('/v1/vehicles?zoneId=berlin').set('X-Auth-Token', p.key);
      expect(res.status).to.equal(400);
      expect(res.body.errors[0].code).to.equal('EmptyZoneID');
      expect(res.body.errors[0].detail).to.contain('query parameter zoneID is missing');
      // a malformed value keeps the table's own detail
      expectError(await request(server).get('/v1/user/id/not-a-uuid').set('X-Auth-Token', p.key), 400, 'InvalidUserId');
    });
    it('429 RateLimitExceeded with Retry-After past the per-key budget', async () => {
      const limited = await insertPartner(t.ctx.db, { rateLimitPerMinute: 3 });
      for (let i = 0; i < 3; i++) expect((await request(server).get('/v1/zone/info').set('X-Auth-Token', limited.key)).status).to.equal(200);
      const res = await request(server).get('/v1/zone/info').set('X-Auth-Token', limited.key);
      expectError(res, 429, 'RateLimitExceeded');
      expect(Number(res.headers['retry-after'])).to.be.within(1, 60);
      // another key is not affected
      expect((await request(server).get('/v1/zone/info').set('X-Auth-Token', p.key)).status).to.equal(200);
    });
    it('404 for unknown routes, 405 for wrong methods, 413 for oversized bodies', async () => {
      expectError(await request(server).get('/v1/nothing-here').set('X-Auth-Token', p.key), 404, 'NotFound');
      expectError(await request(server).get('/v2/nothing-here'), 404, 'NotFound');
      const m = await request(server).put('/v1/user/register').set('X-Auth-Token', p.key);
      expectError(m, 405, 'MethodNotAllowed');
      expect(m.headers.allow).to.contain('POST');
      const big = await post('/v1/user/register', { email: 'x@example.com', externalId: 'x'.repeat(4000) });
      expectError(big, 413, 'RequestTooLarge');
    });
  });
});
