/**
 * Bursts within the contract are queued, never refused (lib/http/admission.ts), with the production
 * admission settings: the server listens on loopback as bin/api.ts does and the requests come over
 * real sockets.
 *
 * - 50 concurrent rental starts for 50 users and vehicles: 50 answers from the rental table.
 * - One partner sending its whole minute's budget (4,000) as fast as 64 connections allow: 4,000
 *   answers, and the 4,001st is a 429 with Retry-After in the family's JSON error; the same on TOMP.
 * - The feeds (no rate limit in the contract): a burst of realtime MDS reads is answered in full,
 *   and 50 clients renewing their tokens at once all get one (the secret checks queue).
 */
import { expect } from 'chai';
import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp, withHotPath } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';
import { basic, insertClient, tokenFor } from './support/feed-auth.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('bursts within the contract are queued, never refused', function () {
  this.timeout(180_000);
  // a fixed instant in the middle of a minute: the rate limit's window does not roll over mid-test
  const t = useTestContext({ now: '2026-11-21T10:00:05Z' });
  let server: Server;
  let port: number;
  let zone: ZoneFixture;

  before(async () => {
    zone = await insertZone(t.ctx.db);
    server = createServer(withHotPath(buildApp(t.ctx)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  function send(agent: Agent, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers: body ? { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } : headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** `n` requests over `connections` keep-alive connections, each sending its next as soon as the last is answered. */
  async function flood(n: number, connections: number, make: (i: number) => [string, string, Record<string, string>, string?]): Promise<Answer[]> {
    const agent = new Agent({ keepAlive: true, maxSockets: connections });
    const answers: Answer[] = new Array(n);
    let next = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < n) {
          const i = next++;
          const [method, path, headers, body] = make(i);
          answers[i] = await send(agent, method, path, headers, body);
        }
      }),
    );
    agent.destroy();
    return answers;
  }

  const statuses = (answers: Answer[]) => answers.reduce<Record<number, number>>((m, a) => ({ ...m, [a.status]: (m[a.status] ?? 0) + 1 }), {});

  it('50 concurrent rental starts for 50 users and vehicles: 50 answers from the rental table', async () => {
    const partner = await insertPartner(t.ctx.db, { rateLimitPerMinute: 4000 });
    const slots = [];
    for (let i = 0; i < 50; i++) slots.push({ user: await insertUser(t.ctx.db, partner.id), vehicle: (await insertVehicle(t.ctx.db, zone, { eastM: i * 3 })).id });
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const answers = await Promise.all(
      slots.map((s) => send(agent, 'POST', '/v1/rental/start', { 'X-Auth-Token': partner.key, 'Content-Type': 'application/json' }, JSON.stringify({ userId: s.user, vehicleId: s.vehicle }))),
    );
    agent.destroy();
    expect(statuses(answers), answers.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 50 });
    const running = await t.ctx.db.one(`SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING' AND user_id = ANY ($1)`, [slots.map((s) => s.user)]);
    expect(running.n).to.equal(50);
  });

  it('a partner’s 4,000 requests of a minute, as fast as 64 connections allow: 4,000 answers, the 4,001st is a 429 with Retry-After', async () => {
    const partner = await insertPartner(t.ctx.db, { rateLimitPerMinute: 4000 });
    const headers = { 'X-Auth-Token': partner.key };
    const answers = await flood(4000, 64, () => ['GET', `/v1/vehicles?zoneID=${zone.id}`, headers]);
    expect(statuses(answers)).to.deep.equal({ 200: 4000 });
    const over = await send(new Agent(), 'GET', `/v1/vehicles?zoneID=${zone.id}`, headers);
    expect(over.status).to.equal(429);
    expect(Number(over.headers['retry-after'])).to.be.within(1, 60);
    expect(JSON.parse(over.body).errors[0]).to.include({ status: '429', code: 'RateLimitExceeded' });
    expect(over.headers['x-ratelimit-remaining']).to.equal('0');
  });

  it('the same on TOMP: 4,000 answers, then 429 with Retry-After in TOMP’s error format', async () => {
    const maas = await insertMaasPartner(t.ctx.db, { rateLimit: 4000 });
    const headers = { 'X-Access-Token': maas.key };
    const answers = await flood(4000, 64, () => ['GET', '/edge/tomp/operator/regions', headers]);
    expect(statuses(answers), answers.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 4000 });
    const over = await send(new Agent(), 'GET', '/edge/tomp/operator/regions', headers);
    expect(over.status).to.equal(429);
    expect(Number(over.headers['retry-after'])).to.be.within(1, 60);
    expect(JSON.parse(over.body)).to.include({ status: 429 });
  });

  it('the feeds: a burst of realtime MDS reads is answered in full, and 50 clients renewing tokens at once all get one', async () => {
    const token = await tokenFor(t.ctx, 'burst-city', 'city');
    const reads = await flood(2000, 64, () => ['GET', `/v1/partner-apis/mds/${zone.id}/vehicles/status`, { Authorization: `Bearer ${token}`, Accept: 'application/vnd.mds+json;version=2.0' }]);
    expect(statuses(reads), reads.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 2000 });

    for (let i = 0; i < 50; i++) await insertClient(t.ctx.db, `renewing-${i}`, 'gbfs');
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const askAll = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          send(agent, 'POST', '/v1/partner-apis/token', { Authorization: basic(`renewing-${i}`, `renewing-${i}-secret`), 'Content-Type': 'application/x-www-form-urlencoded' }, 'grant_type=client_credentials'),
        ),
      );
    // first authentications at once: each one scrypt, queued behind the hash gate
    const first = await askAll(20);
    expect(statuses(first), first.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 20 });
    // the other 30 got their first tokens earlier, one at a time
    for (let i = 20; i < 50; i++) {
      const one = await send(agent, 'POST', '/v1/partner-apis/token', { Authorization: basic(`renewing-${i}`, `renewing-${i}-secret`), 'Content-Type': 'application/x-www-form-urlencoded' }, 'grant_type=client_credentials');
      expect(one.status).to.equal(200);
    }
    // 15 minutes later, all 50 renew in the same instant
    const t0 = performance.now();
    const renewals = await askAll(50);
    expect(statuses(renewals), renewals.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 50 });
    expect(performance.now() - t0, 'renewals need no second scrypt').to.be.below(2000);
    agent.destroy();
  });
});
