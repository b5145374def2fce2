/**
 * Credentials never reach a log. The apps run with a logger at level `debug` writing to a capture
 * stream (and a pool logging through it); requests carry API keys (X-Auth-Token, Bearer,
 * X-Access-Token), feed client secrets (HTTP Basic and form fields), access tokens (issued and
 * presented) and signed URLs (sig=), on success and on failure paths, including a 5xx. The captured
 * output must hold none of the secret strings, in clear or as the Basic base64 form.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import supertest from 'supertest';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import type { AppContext } from '../lib/domain/context.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone } from './support/partner-fixtures.js';
import { insertMaasPartner, insertTompVehicle, insertTompZone, oneStopBody } from './support/tomp-fixtures.js';
import { basic, insertClient, insertFeedZone } from './support/feed-auth.js';
import { createApiKey } from '../lib/domain/credentials/api-keys.js';
import { count } from './support/figures.js';

const ROW = 'logs';

describe('logs carry no credentials', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  const captured: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      captured.push(String(chunk));
      cb();
    },
  });
  let app: AppContext;
  const secrets: string[] = [];

  before(() => {
    const log = createLogger('debug', sink);
    app = { ...t.ctx, log, db: new Db(t.ctx.config.databaseUrl, log, { max: 10 }) };
  });
  after(() => app.db.close());

  it('keys, secrets, tokens and signatures appear nowhere in the debug log', async () => {
    const main = supertest.agent(buildApp(app).callback());
    const legacy = supertest.agent(buildLegacyApp(app).callback());
    const db = t.ctx.db;

    // partner API: both header forms, a wrong key, a 5xx path (the vehicle refuses to unlock)
    const zone = await insertZone(db);
    const partner = await insertPartner(db);
    secrets.push(partner.key);
    const user = await insertUser(db, partner.id);
    const v1 = await insertVehicle(db, zone);
    t.ctx.gateway.failNext('unlock', 'refused');
    count(ROW, 'faults');
    const failed = await main.post('/v1/rental/start').set('X-Auth-Token', partner.key).send({ userId: user, vehicleId: v1.id });
    expect(failed.status).to.be.at.least(500);
    const started = await main.post('/v1/rental/start').set('Authorization', `Bearer ${partner.key}`).send({ userId: user, vehicleId: v1.id });
    expect(started.status, started.text).to.equal(200);
    const wrongKey = `pk-wrong-${'s3cr3t'.repeat(4)}`;
    secrets.push(wrongKey);
    expect((await main.get('/v1/zone/info').set('X-Auth-Token', wrongKey)).status).to.equal(401);
    const ended = await main.post(`/v1/rental/${started.body.data[0].id}/end`).set('X-Auth-Token', partner.key).send({});
    expect(ended.status, ended.text).to.equal(200);
    const r = ended.body.data[0].attributes ?? ended.body.data[0];
    const photo = new URL(r.photoUploadURL);
    const receipt = new URL(r.receipt.url);
    secrets.push(photo.searchParams.get('sig')!, receipt.searchParams.get('sig')!);
    await main.get(receipt.pathname + receipt.search);
    await main
      .put(photo.pathname + photo.search)
      .set('Content-Type', 'image/jpeg')
      .send(Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    const genuine = photo.searchParams.get('sig')!;
    // deterministic: differs from the genuine signature whatever its last characters are
    const tampered = genuine.slice(0, -3) + (genuine.endsWith('zzz') ? 'yyy' : 'zzz');
    secrets.push(tampered);
    await main
      .put(`${photo.pathname}?expires=${photo.searchParams.get('expires')}&sig=${tampered}`)
      .set('Content-Type', 'image/jpeg')
      .send(Buffer.from([0xff]));

    // TOMP: a good key, a key of another API, an unknown key
    const tz = await insertTompZone(db);
    const maas = await insertMaasPartner(db);
    secrets.push(maas.key);
    const tv = await insertTompVehicle(db, tz);
    expect((await main.post('/edge/tomp/bookings/one-stop').set('X-Access-Token', maas.key).send(oneStopBody(tv.id, tv))).status).to.equal(201);
    await main.get('/edge/tomp/operator/meta').set('X-Access-Token', partner.key);
    await main.get('/edge/tomp/operator/meta').set('X-Access-Token', wrongKey);

    // feeds: token requests (Basic, form fields, wrong secret), tokens in use, insurer API key
    const fz = await insertFeedZone(db, 'log-zone');
    const secret = 'feed-secret-Zq8xW2vP4mN7kL1j';
    await insertClient(db, 'log-city', 'city', null, secret);
    secrets.push(secret, Buffer.from(`log-city:${secret}`).toString('base64'));
    const tokenRes = await main
      .post('/v1/partner-apis/token')
      .set('Authorization', basic('log-city', secret))
      .type('form')
      .send('grant_type=client_credentials');
    expect(tokenRes.status, tokenRes.text).to.equal(200);
    const accessToken = tokenRes.body.access_token as string;
    secrets.push(accessToken);
    await legacy
      .post('/token')
      .type('form')
      .send(`grant_type=client_credentials&client_id=log-city&client_secret=${encodeURIComponent(secret)}`);
    const wrongSecret = 'wrong-feed-secret-Yt5rE3wQ';
    secrets.push(wrongSecret);
    await main.post('/v1/partner-apis/token').set('Authorization', basic('log-city', wrongSecret)).type('form').send('grant_type=client_credentials');
    await main.get(`/v1/partner-apis/mds/${fz}/vehicles`).set('Authorization', `Bearer ${accessToken}`).set('Accept', 'application/vnd.mds+json;version=2.0');
    await main.get(`/v1/partner-apis/mds/${fz}/trips?end_time=2026-11-21T08&access_token=${accessToken}`).set('Authorization', `Bearer ${accessToken}`);
    await legacy.get(`/en/${fz}/vehicles`).set('Authorization', `Bearer ${accessToken}`).set('Accept', 'application/vnd.mds+json;version=1.2');
    const insurer = await db.one<{ id: string }>(`INSERT INTO partners (name, kind, trip_type) VALUES ('log-insurer', 'insurer', 'rider') RETURNING id`);
    const insKey = await createApiKey(db, insurer.id, 'insurance', { key: 'ins-key-Hh7Gg6Ff5Dd4' });
    secrets.push(insKey.key);
    await main
      .get(`/v1/partner-apis/insurance/${fz}/trips?end_time=2026-11-21T08`)
      .set('X-Access-Token', insKey.key)
      .set('Accept', 'application/vnd.insurance+json;version=2.0');

    const out = captured.join('');
    count(ROW, 'inputs', secrets.length);
    expect(out.length, 'the debug log captured the requests').to.be.greaterThan(1000);
    expect(out).to.contain('"msg":"request"');
    // the signed-URL and query-token requests were logged, with their credentials cut out
    expect(out).to.contain('sig=[Redacted]');
    expect(out).to.contain('access_token=[Redacted]');
    const leaked = secrets.filter((s) => out.includes(s));
    if (leaked.length) count(ROW, 'failures', leaked.length);
    expect(leaked, `leaked into the log: ${leaked.map((s) => s.slice(0, 12) + '…').join(', ')}`).to.deep.equal([]);
    // a keyed request's lines name the request, the partner and the key, added by the gate to a
    // logger that exists only once something logs (lib/core/log.ts lazyRequestLog)
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const startLines = lines.filter((l) => l.msg === 'request' && l.url === '/v1/rental/start' && l.status === 200);
    expect(startLines, 'one access line for the rental start answered 200').to.have.length(1);
    expect(startLines[0]).to.include({ partnerId: partner.id });
    expect(startLines[0].keyId).to.be.a('string');
    expect(startLines[0].requestId).to.be.a('string');
  });

  it('every credential-shaped query parameter is redacted, whatever its case or escaping', async () => {
    const main = supertest.agent(buildApp(app).callback());
    const legacy = supertest.agent(buildLegacyApp(app).callback());
    const names = [
      'client_secret',
      'api_key',
      'key',
      'password',
      'secret',
      'token',
      'access_token',
      'sig',
      'signature',
      'refresh_token',
      'id_token',
      'my_secret_value',
      'xTokenx',
      'CLIENT_SECRET',
      'Api_Key',
      'KEY',
      'PassWord',
      'Secret',
      'TOKEN',
      'Access_Token',
      'SIG',
      'client%5Fsecret',
      'acc%65ss_token',
      'S%49G',
    ];
    const planted: string[] = [];
    const at = captured.length;
    for (const [i, name] of names.entries()) {
      const value = `planted-${i}-Vq9Lm3Xz7Rt2`;
      planted.push(value);
      // on each family and the hot path's neighbours: partner, TOMP, feeds, legacy, ops, unmatched
      await main.get(`/v1/zone/info?a=1&${name}=${value}&b=2`);
      await main.get(`/edge/tomp/operator/meta?${name}=${value}`);
      await main.get(`/v1/partner-apis/mds/x/trips?end_time=2026-11-21T08&${name}=${value}`);
      await legacy.get(`/en/x/vehicles?${name}=${value}`);
      await main.get(`/healthz?${name}=${value}#frag`);
      await main.get(`/nowhere?${name}=${value}`);
    }
    const out = captured.slice(at).join('');
    count(ROW, 'inputs', names.length * 6);
    expect(out.match(/"msg":"request"/g)?.length ?? 0).to.be.at.least(names.length * 6);
    const leaked = planted.filter((v) => out.includes(v));
    if (leaked.length) count(ROW, 'failures', leaked.length);
    expect(leaked, 'planted credentials in the log').to.deep.equal([]);
    // ordinary parameters stay readable
    expect(out).to.contain('a=1&');
    expect(out).to.contain('&b=2');
    expect(out).to.contain('end_time=2026-11-21T08');
  });

  it('a 5xx is one error line: the access line carries its cause, code, request id, method, URL and status', async () => {
    const main = supertest.agent(buildApp(app).callback());
    const db = t.ctx.db;
    const zone = await insertZone(db);
    const partner = await insertPartner(db);
    const user = await insertUser(db, partner.id);
    const v = await insertVehicle(db, zone);
    t.ctx.gateway.failNext('unlock', 'refused');
    const at = captured.length;
    const failed = await main.post('/v1/rental/start').set('X-Auth-Token', partner.key).send({ userId: user, vehicleId: v.id });
    expect(failed.status).to.be.at.least(500);
    const lines = captured
      .slice(at)
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>);
    const errors = lines.filter((l) => l.level >= 50);
    expect(errors, JSON.stringify(errors)).to.have.length(1);
    expect(errors[0]).to.include({
      msg: 'request failed',
      method: 'POST',
      url: '/v1/rental/start',
      status: failed.status,
      code: failed.body.errors[0].code,
      requestId: failed.headers['x-request-id'],
    });
    expect(errors[0].err).to.be.an('object');
  });
});
