/**
 * Idempotency-Key (issue 39; api/kit/idempotency.ts) on the partner writes (register, start, end) and
 * the TOMP ones (one-stop booking, booking and leg events, support): a retry gets the first answer
 * back and executes nothing; the same key with another request is 422, while the first still runs
 * 409; keys are per client; 5xx answers are not kept; without the header nothing changes; a key
 * left running by a dead process is taken once its lease ends; the purge; and the documents.
 */
import { expect } from 'chai';
import request from 'supertest';
import { buildApp } from '../api/app.js';
import { createApiKey } from '../lib/domain/credentials/api-keys.js';
import { SimulatedGateway } from '../lib/domain/gateway.js';
import { purgeIdempotencyRecords } from '../publisher/jobs/idempotency.js';
import { useTestContext } from './support/context.js';
import { expectError, insertPartner, insertUser, insertVehicle, insertZone, type PartnerFixture, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { partnerDocument } from '../api/openapi/partner.js';
import { tompDocument } from '../api/openapi/tomp.js';
import { PARTNER_ENDPOINTS } from '../api/partner/endpoints.js';
import { TOMP_ENDPOINTS } from '../api/tomp/endpoints.js';

const P = '/edge/tomp';
const KEY = 'Idempotency-Key';
let n = 0;
const newKey = () => `key-${process.pid}-${++n}-${Math.random().toString(36).slice(2)}`;

describe('Idempotency-Key', function () {
  const t = useTestContext({ now: '2026-06-01T08:00:00Z' });
  let server: ReturnType<ReturnType<typeof buildApp>['callback']>;
  let p: PartnerFixture;
  let zone: ZoneFixture;

  before(async () => {
    server = buildApp(t.ctx).callback();
    p = await insertPartner(t.ctx.db);
    zone = await insertZone(t.ctx.db, { vatRate: 0.19, startPrice: 100, pricePerMinute: 25 });
  });
  beforeEach(() => t.ctx.gateway.reset());

  const post = (path: string, body: object | undefined, opts: { key?: string; partnerKey?: string; app?: typeof server } = {}) => {
    let r = request(opts.app ?? server)
      .post(path)
      .set('X-Auth-Token', opts.partnerKey ?? p.key);
    if (opts.key !== undefined) r = r.set(KEY, opts.key);
    return body === undefined ? r : r.send(body);
  };
  const count = async (table: string, where: string, params: unknown[]) =>
    (await t.ctx.db.one<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params)).n;

  describe('partner API', () => {
    it('a retried registration gets the first answer back, marked as a replay, and registers one user', async () => {
      const key = newKey();
      const body = { email: 'once@example.com', externalId: `ext-${key}` };
      const first = await post('/v1/user/register', body, { key });
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      expect(first.headers['idempotent-replayed']).to.equal(undefined);
      const again = await post('/v1/user/register', body, { key });
      expect(again.status).to.equal(first.status);
      expect(again.text).to.equal(first.text);
      expect(again.headers['content-type']).to.equal(first.headers['content-type']);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      // the retry is still a request of the key: it carries the rate-limit headers of now
      expect(again.headers['x-ratelimit-remaining']).to.be.a('string');
      expect(await count('users', 'partner_id = $1 AND external_id = $2', [p.id, body.externalId])).to.equal(1);
    });

    it('the same JSON with its keys in another order is the same request; a structured-field string is the same key', async () => {
      const key = newKey();
      const first = await post('/v1/user/register', { email: 'order@example.com', externalId: `ext-${key}` }, { key });
      expect(first.status).to.equal(200);
      const again = await request(server)
        .post('/v1/user/register')
        .set('X-Auth-Token', p.key)
        .set(KEY, `"${key}"`)
        .set('Content-Type', 'application/json')
        .send(`{ "externalId": "ext-${key}",   "email": "order@example.com" }`);
      expect(again.status).to.equal(200);
      expect(again.text).to.equal(first.text);
      expect(again.headers['idempotent-replayed']).to.equal('true');
    });

    it('a retried start returns the rental it started, not RentalAlreadyExists; a retried end returns the price', async () => {
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const startKey = newKey();
      const start = await post('/v1/rental/start', { userId: user, vehicleId: v.id }, { key: startKey });
      expect(start.status, JSON.stringify(start.body)).to.equal(200);
      const retried = await post('/v1/rental/start', { userId: user, vehicleId: v.id }, { key: startKey });
      expect(retried.status).to.equal(200);
      expect(retried.text).to.equal(start.text);
      expect(retried.headers['idempotent-replayed']).to.equal('true');
      expect(await count('rentals', 'user_id = $1', [user])).to.equal(1);
      expect(t.ctx.gateway.calls.filter((c) => c.command === 'unlock')).to.have.length(1);

      const rentalId = start.body.data[0].id as string;
      t.ctx.clock.advance(5 * 60_000);
      const endKey = newKey();
      const end = await post(`/v1/rental/${rentalId}/end`, {}, { key: endKey });
      expect(end.status, JSON.stringify(end.body)).to.equal(200);
      expect(end.body.data[0].attributes.cost.total.amount).to.be.greaterThan(0);
      t.ctx.clock.advance(60_000);
      const endAgain = await post(`/v1/rental/${rentalId}/end`, {}, { key: endKey });
      expect(endAgain.status).to.equal(200);
      expect(endAgain.text).to.equal(end.text);
      expect(endAgain.headers['idempotent-replayed']).to.equal('true');
      // without the key a retry is what it always was
      expectError(await post(`/v1/rental/${rentalId}/end`, {}), 400, 'RentalAlreadyEnded');
    });

    it('without the header nothing changes: a second start is RentalAlreadyExists', async () => {
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      expect((await post('/v1/rental/start', { userId: user, vehicleId: v.id })).status).to.equal(200);
      const again = await post('/v1/rental/start', { userId: user, vehicleId: v.id });
      expectError(again, 400, 'RentalAlreadyExists');
      expect(again.headers['idempotent-replayed']).to.equal(undefined);
    });

    it('the same key with another request is 422 IdempotencyKeyReused, and executes nothing', async () => {
      const key = newKey();
      expect((await post('/v1/user/register', { email: 'a@example.com', externalId: `a-${key}` }, { key })).status).to.equal(200);
      expectError(await post('/v1/user/register', { email: 'b@example.com', externalId: `b-${key}` }, { key }), 422, 'IdempotencyKeyReused');
      expect(await count('users', 'partner_id = $1 AND external_id = $2', [p.id, `b-${key}`])).to.equal(0);
      // another endpoint is another request too
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      expectError(await post('/v1/rental/start', { userId: user, vehicleId: v.id }, { key }), 422, 'IdempotencyKeyReused');
      expect(await count('rentals', 'user_id = $1', [user])).to.equal(0);
    });

    it("keys are the partner's: another partner's identical key executes its own request", async () => {
      const other = await insertPartner(t.ctx.db);
      const key = newKey();
      const body = { email: 'shared@example.com', externalId: `shared-${key}` };
      const mine = await post('/v1/user/register', body, { key });
      const theirs = await post('/v1/user/register', body, { key, partnerKey: other.key });
      expect(mine.status).to.equal(200);
      expect(theirs.status).to.equal(200);
      expect(theirs.headers['idempotent-replayed']).to.equal(undefined);
      expect(theirs.body.data.id).to.not.equal(mine.body.data.id);
      // another API key of the same partner shares the partner's keys
      const second = await createApiKey(t.ctx.db, p.id, 'partner');
      const viaSecondKey = await post('/v1/user/register', body, { key, partnerKey: second.key });
      expect(viaSecondKey.headers['idempotent-replayed']).to.equal('true');
      expect(viaSecondKey.text).to.equal(mine.text);
    });

    it('two concurrent starts with one key execute once: the other is 409 with Retry-After, then the retry gets the answer', async () => {
      const slow = buildApp({ ...t.ctx, gateway: new SimulatedGateway({ delayMs: 600, timeoutMs: 5000 }) }).callback();
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const key = newKey();
      const body = { userId: user, vehicleId: v.id };
      const first = post('/v1/rental/start', body, { key, app: slow }).then((r) => r);
      await new Promise((r) => setTimeout(r, 200));
      const second = await post('/v1/rental/start', body, { key, app: slow });
      expectError(second, 409, 'IdempotencyKeyInUse');
      expect(Number(second.headers['retry-after'])).to.be.greaterThan(0);
      const done = await first;
      expect(done.status, JSON.stringify(done.body)).to.equal(200);
      const retry = await post('/v1/rental/start', body, { key, app: slow });
      expect(retry.status).to.equal(200);
      expect(retry.text).to.equal(done.text);
      expect(await count('rentals', 'user_id = $1', [user])).to.equal(1);
    });

    it('ten requests with one key at once register one user; every answer is that one or 409', async () => {
      const key = newKey();
      const body = { email: 'burst@example.com', externalId: `burst-${key}` };
      const answers = await Promise.all(Array.from({ length: 10 }, () => post('/v1/user/register', body, { key })));
      const created = answers.filter((a) => a.status === 200);
      expect(created.length).to.be.greaterThan(0);
      for (const a of created) expect(a.text).to.equal(created[0].text);
      for (const a of answers.filter((x) => x.status !== 200)) expectError(a, 409, 'IdempotencyKeyInUse');
      expect(await count('users', 'partner_id = $1 AND external_id = $2', [p.id, body.externalId])).to.equal(1);
    });

    it('an answer whose record failed (the primary lost after the commit) is written again: the retry gets 409, then the first answer', async () => {
      // the first write of an answer fails, as when the primary dies between the start's commit and
      // the record (a sequence is not rolled back with the failed statement: it fails once)
      await t.ctx.db.query(`CREATE SEQUENCE idem_fail_once`);
      await t.ctx.db.query(`CREATE FUNCTION idem_fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.state = 'done' AND nextval('idem_fail_once') = 1 THEN RAISE EXCEPTION 'the primary went away'; END IF; RETURN NEW; END $$`);
      await t.ctx.db.query(`CREATE TRIGGER idem_fail_once BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION idem_fail_once()`);
      try {
        const user = await insertUser(t.ctx.db, p.id);
        const v = await insertVehicle(t.ctx.db, zone);
        const key = newKey();
        const body = { userId: user, vehicleId: v.id };
        const first = await post('/v1/rental/start', body, { key });
        expect(first.status, JSON.stringify(first.body)).to.equal(200);
        // the record is tried again in the background: meanwhile the key is in use, never executed again
        let retry = await post('/v1/rental/start', body, { key });
        let inUse = 0;
        for (let i = 0; i < 40 && retry.status !== 200; i++) {
          expectError(retry, 409, 'IdempotencyKeyInUse');
          inUse++;
          await new Promise((r) => setTimeout(r, 100));
          retry = await post('/v1/rental/start', body, { key });
        }
        expect(inUse, 'retries while the record was pending').to.be.greaterThan(0);
        expect(retry.status).to.equal(200);
        expect(retry.text).to.equal(first.text);
        expect(retry.headers['idempotent-replayed']).to.equal('true');
        expect(await count('rentals', 'user_id = $1', [user])).to.equal(1);
      } finally {
        await t.ctx.db.query(`DROP TRIGGER idem_fail_once ON idempotency_keys; DROP FUNCTION idem_fail_once(); DROP SEQUENCE idem_fail_once`);
      }
    });

    it('a 5xx is not kept: after a vehicle that did not answer, the retry with the key executes', async () => {
      const user = await insertUser(t.ctx.db, p.id);
      const v = await insertVehicle(t.ctx.db, zone);
      const key = newKey();
      t.ctx.gateway.failNext('unlock', 'unreachable');
      const failed = await post('/v1/rental/start', { userId: user, vehicleId: v.id }, { key });
      expect(failed.status).to.equal(500);
      expect(await count('idempotency_keys', 'key = $1', [key])).to.equal(0);
      const retry = await post('/v1/rental/start', { userId: user, vehicleId: v.id }, { key });
      expect(retry.status, JSON.stringify(retry.body)).to.equal(200);
      expect(retry.headers['idempotent-replayed']).to.equal(undefined);
    });

    it('a 4xx is the request’s outcome: kept and replayed', async () => {
      const key = newKey();
      const first = await post('/v1/user/register', { email: 'not-an-email', externalId: 'x' }, { key });
      expectError(first, 400, 'ErrInvalidUserEmailID');
      const again = await post('/v1/user/register', { email: 'not-an-email', externalId: 'x' }, { key });
      expect(again.text).to.equal(first.text);
      expect(again.headers['idempotent-replayed']).to.equal('true');
    });

    it('an invalid key is 400 InvalidIdempotencyKey', async () => {
      const body = { email: 'k@example.com', externalId: 'k' };
      for (const bad of ['', 'x'.repeat(256), '"unterminated', 'naïve']) {
        const res = await request(server).post('/v1/user/register').set('X-Auth-Token', p.key).set(KEY, Buffer.from(bad).toString('latin1')).send(body);
        expectError(res, 400, 'InvalidIdempotencyKey');
      }
    });

    it('a key left running by a process that died is taken by a retry once its lease ends, and not before', async () => {
      const key = newKey();
      const body = { email: 'dead@example.com', externalId: `dead-${key}` };
      const fingerprintOf = async () => {
        // the fingerprint the route computes: take it from a first attempt's record, then make it look abandoned
        const r = await post('/v1/user/register', body, { key });
        expect(r.status).to.equal(200);
        await t.ctx.db.query(`DELETE FROM users WHERE external_id = $1`, [body.externalId]);
      };
      await fingerprintOf();
      const now = t.ctx.clock.now();
      await t.ctx.db.query(
        `UPDATE idempotency_keys SET state = 'running', status = NULL, headers = NULL, body = NULL, owner = gen_random_uuid(), lease_until = $3 WHERE scope = $1 AND key = $2`,
        [`partner:${p.id}`, key, new Date(now.getTime() + 10_000)],
      );
      expectError(await post('/v1/user/register', body, { key }), 409, 'IdempotencyKeyInUse');
      t.ctx.clock.advance(11_000);
      const retry = await post('/v1/user/register', body, { key });
      expect(retry.status).to.equal(200);
      expect(retry.headers['idempotent-replayed']).to.equal(undefined);
      expect(await count('users', 'external_id = $1', [body.externalId])).to.equal(1);
    });

    it('an answer is kept 24 hours, then the key is new again; the purge removes what has expired', async () => {
      const key = newKey();
      const body = { email: 'day@example.com', externalId: `day-${key}` };
      expect((await post('/v1/user/register', body, { key })).status).to.equal(200);
      t.ctx.clock.advance(23 * 3_600_000);
      expect((await post('/v1/user/register', body, { key })).headers['idempotent-replayed']).to.equal('true');
      t.ctx.clock.advance(2 * 3_600_000);
      const fresh = await post('/v1/user/register', body, { key });
      expect(fresh.status).to.equal(200);
      expect(fresh.headers['idempotent-replayed']).to.equal(undefined);
      expect(await count('users', 'external_id = $1', [body.externalId])).to.equal(2);
      t.ctx.clock.advance(25 * 3_600_000);
      expect(await purgeIdempotencyRecords(t.ctx)).to.be.greaterThan(0);
      expect(await count('idempotency_keys', 'expires_at <= $1', [t.ctx.clock.now()])).to.equal(0);
    });
  });

  describe('TOMP API', () => {
    let zoneId: string;
    let maas: { id: string; key: string };
    before(async () => {
      zoneId = await insertTompZone(t.ctx.db);
      maas = await insertMaasPartner(t.ctx.db);
    });
    const tomp = (path: string, body: object, key?: string, token = maas.key) => {
      const r = request(server).post(`${P}${path}`).set('X-Access-Token', token);
      return (key === undefined ? r : r.set(KEY, key)).send(body);
    };

    it('a retried one-stop booking returns the first booking and books one vehicle; another vehicle with the key is 422', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const key = newKey();
      const body = oneStopBody(v.id, v, `rider-${key}`);
      const first = await tomp('/bookings/one-stop', body, key);
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      const again = await tomp('/bookings/one-stop', body, key);
      expect(again.status).to.equal(201);
      expect(again.text).to.equal(first.text);
      expect(again.headers['idempotent-replayed']).to.equal('true');
      expect(again.headers['content-language']).to.equal(first.headers['content-language']);
      expect(await count('tomp_bookings', 'vehicle_id = $1', [v.id])).to.equal(1);

      const w = await insertTompVehicle(t.ctx.db, zoneId);
      const reused = await tomp('/bookings/one-stop', oneStopBody(w.id, w, `rider-${key}`), key);
      expect(reused.status).to.equal(422);
      expect(reused.body).to.deep.include({ status: 422, type: 'IdempotencyKeyReused' });
      expect(await count('tomp_bookings', 'vehicle_id = $1', [w.id])).to.equal(0);
    });

    it('a retried FINISH returns the first answer; support tickets are stored once', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const booked = await tomp('/bookings/one-stop', oneStopBody(v.id, v), newKey());
      expect(booked.status).to.equal(201);
      const leg = booked.body.legs[0].id as string;
      t.ctx.clock.advance(120_000);
      const key = newKey();
      const finish = { event: 'FINISH', time: t.ctx.clock.now().toISOString() };
      const first = await tomp(`/legs/${leg}/events`, finish, key);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      const again = await tomp(`/legs/${leg}/events`, finish, key);
      expect(again.status).to.equal(200);
      expect(again.text).to.equal(first.text);
      expect(again.headers['idempotent-replayed']).to.equal('true');

      const ticket = { id: booked.body.id, supportType: 'BROKEN_DOWN', time: '2026-06-01T08:00:00Z', contactInformationEndUser: '+34 600', comment: 'brake' };
      const supportKey = newKey();
      const s1 = await tomp('/support', ticket, supportKey);
      expect(s1.status, JSON.stringify(s1.body)).to.equal(200);
      const s2 = await tomp('/support/', ticket, supportKey);
      expect(s2.text).to.equal(s1.text);
      expect(s2.headers['idempotent-replayed']).to.equal('true');
      expect(await count('support_tickets', 'booking_id = $1', [booked.body.id])).to.equal(1);
    });

    it("a MaaS provider's keys are its own: the partner family's identical key does not collide", async () => {
      const key = newKey();
      expect((await post('/v1/user/register', { email: 'fam@example.com', externalId: `fam-${key}` }, { key })).status).to.equal(200);
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const booked = await tomp('/bookings/one-stop', oneStopBody(v.id, v), key);
      expect(booked.status).to.equal(201);
      expect(booked.headers['idempotent-replayed']).to.equal(undefined);
    });

    it('an invalid key is a TOMP 400', async () => {
      const v = await insertTompVehicle(t.ctx.db, zoneId);
      const res = await tomp('/bookings/one-stop', oneStopBody(v.id, v), 'x'.repeat(300));
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.include({ status: 400, type: 'InvalidIdempotencyKey' });
    });
  });

  describe('documents', () => {
    const idempotent = (doc: { paths: Record<string, Record<string, any>> }) =>
      Object.entries(doc.paths)
        .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })))
        .filter(({ op }) => (op.parameters ?? []).some((x: any) => x.name === KEY))
        .map(({ method, path, op }) => ({ route: `${method.toUpperCase()} ${path}`, op }));

    it('the partner document declares the header, the replay header and the 409/422 rows on the three writes', () => {
      const ops = idempotent(partnerDocument(PARTNER_ENDPOINTS, { publicBaseUrl: 'https://api.example.com' }));
      expect(ops.map((o) => o.route).sort()).to.deep.equal(['POST /v1/rental/start', 'POST /v1/rental/{rentalId}/end', 'POST /v1/user/register']);
      for (const { op } of ops) {
        expect(op.responses['409'].content['application/json'].schema['x-error-codes']).to.include('IdempotencyKeyInUse');
        expect(op.responses['409'].headers).to.have.property('Retry-After');
        expect(op.responses['422'].content['application/json'].schema['x-error-codes']).to.include('IdempotencyKeyReused');
        expect(op.responses['400'].content['application/json'].schema['x-error-codes']).to.include('InvalidIdempotencyKey');
        const ok = Object.entries(op.responses).find(([s]) => s.startsWith('2'))![1] as any;
        expect(ok.headers).to.have.property('Idempotent-Replayed');
      }
    });

    it('the TOMP document declares them on its writes', () => {
      const ops = idempotent(tompDocument(TOMP_ENDPOINTS, { publicBaseUrl: 'https://api.example.com' }));
      expect(ops.map((o) => o.route).sort()).to.deep.equal([
        'POST /bookings/one-stop',
        'POST /bookings/{id}/events',
        'POST /legs/{id}/events',
        'POST /support',
      ]);
      for (const { op } of ops) {
        expect(op.responses['409'].description).to.contain('Idempotency-Key');
        expect(op.responses['422'].description).to.contain('Idempotency-Key');
      }
    });
  });
});
