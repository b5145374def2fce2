/**
 * Bursts within the contract are queued, never refused (api/kit/admission.ts), with the production
 * admission settings: the API is a real bin/api.ts process (so that the load generator does not
 * share its event loop) and the requests come over real sockets.
 *
 * - 50 concurrent rental starts for 50 users and vehicles: 50 answers from the rental table.
 * - One partner sending its whole minute's budget (4,000) as fast as 64 connections allow: 4,000
 *   answers, and the 4,001st is a 429 with Retry-After in the family's JSON error; the same on TOMP.
 * - The feeds (no rate limit in the contract): a burst of realtime MDS reads is answered in full,
 *   and 50 clients renewing their tokens at once all get one (the secret checks queue).
 */
import { expect } from 'chai';
import { request as httpRequest, Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { testConfig } from '../lib/core/config.js';
import { systemClock } from '../lib/core/clock.js';
import { issueFeedToken } from '../api/feeds/access-tokens.js';
import { cloneDatabase, type TestDatabase } from './support/db.js';
import { startApiProcess, type ApiProcess } from './support/api-process.js';
import { insertPartner, insertUser, insertVehicle, insertZone, type ZoneFixture } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';
import { basic, insertClient } from './support/feed-auth.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('bursts within the contract are queued, never refused', function () {
  this.timeout(180_000);
  let database: TestDatabase;
  let store: string;
  let db: Db;
  let api: ApiProcess;
  let port: number;
  let zone: ZoneFixture;

  before(async function () {
    this.timeout(60_000);
    database = await cloneDatabase();
    store = mkdtempSync(join(tmpdir(), 'bursts-store-'));
    db = new Db(database.url, createLogger('silent'));
    zone = await insertZone(db);
    api = await startApiProcess(database, store);
    port = api.port;
  });
  after(async () => {
    api?.stop();
    await db?.close();
    await database?.drop();
    rmSync(store, { recursive: true, force: true });
  });

  /** The rate limit counts in one-minute windows of the real clock: a flood starts with most of one ahead. */
  async function freshWindow(): Promise<void> {
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await new Promise((r) => setTimeout(r, left + 50));
  }

  function send(agent: Agent, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method, path, agent, headers: body ? { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } : headers },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        },
      );
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
    const partner = await insertPartner(db, { rateLimitPerMinute: 4000 });
    const slots = [];
    for (let i = 0; i < 50; i++) slots.push({ user: await insertUser(db, partner.id), vehicle: (await insertVehicle(db, zone, { eastM: i * 3 })).id });
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const answers = await Promise.all(
      slots.map((s) =>
        send(
          agent,
          'POST',
          '/v1/rental/start',
          { 'X-Auth-Token': partner.key, 'Content-Type': 'application/json' },
          JSON.stringify({ userId: s.user, vehicleId: s.vehicle }),
        ),
      ),
    );
    agent.destroy();
    expect(statuses(answers), answers.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 50 });
    const running = await db.one(`SELECT count(*)::int AS n FROM rentals WHERE state = 'RUNNING' AND user_id = ANY ($1)`, [slots.map((s) => s.user)]);
    expect(running.n).to.equal(50);
  });

  it('a partner’s 4,000 requests of a minute, as fast as 64 connections allow: 4,000 answers, the 4,001st is a 429 with Retry-After', async () => {
    const partner = await insertPartner(db, { rateLimitPerMinute: 4000 });
    const headers = { 'X-Auth-Token': partner.key };
    await freshWindow();
    const answers = await flood(4000, 64, () => ['GET', `/v1/vehicles?zoneID=${zone.id}`, headers]);
    expect(statuses(answers)).to.deep.equal({ 200: 4000 });
    const over = await send(new Agent(), 'GET', `/v1/vehicles?zoneID=${zone.id}`, headers);
    expect(over.status).to.equal(429);
    expect(Number(over.headers['retry-after'])).to.be.within(1, 60);
    expect(JSON.parse(over.body).errors[0]).to.include({ status: '429', code: 'RateLimitExceeded' });
    expect(over.headers['x-ratelimit-remaining']).to.equal('0');
  });

  it('the same on TOMP: 4,000 answers, then 429 with Retry-After in TOMP’s error format', async () => {
    const maas = await insertMaasPartner(db, { rateLimit: 4000 });
    const headers = { 'X-Access-Token': maas.key };
    await freshWindow();
    const answers = await flood(4000, 64, () => ['GET', '/edge/tomp/operator/regions', headers]);
    expect(statuses(answers), answers.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 4000 });
    const over = await send(new Agent(), 'GET', '/edge/tomp/operator/regions', headers);
    expect(over.status).to.equal(429);
    expect(Number(over.headers['retry-after'])).to.be.within(1, 60);
    expect(JSON.parse(over.body)).to.include({ status: 429 });
  });

  it('the feeds: a burst of realtime MDS reads is answered in full, and 50 clients renewing tokens at once all get one', async () => {
    await insertClient(db, 'burst-city', 'city');
    // the child's signing secret is this process's (test/support/global.ts sets it for both)
    const token = (await issueFeedToken(testConfig({ DATABASE_URL: database.url }), systemClock, { clientId: 'burst-city', role: 'city', zones: null }))
      .accessToken;
    const reads = await flood(2000, 64, () => [
      'GET',
      `/v1/partner-apis/mds/${zone.id}/vehicles/status`,
      { Authorization: `Bearer ${token}`, Accept: 'application/vnd.mds+json;version=2.0' },
    ]);
    expect(statuses(reads), reads.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 2000 });

    for (let i = 0; i < 50; i++) await insertClient(db, `renewing-${i}`, 'gbfs');
    const agent = new Agent({ keepAlive: true, maxSockets: 50 });
    const askAll = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          send(
            agent,
            'POST',
            '/v1/partner-apis/token',
            { Authorization: basic(`renewing-${i}`, `renewing-${i}-secret`), 'Content-Type': 'application/x-www-form-urlencoded' },
            'grant_type=client_credentials',
          ),
        ),
      );
    // first authentications at once: each one scrypt, queued behind the hash gate
    const first = await askAll(20);
    expect(statuses(first), first.find((a) => a.status !== 200)?.body).to.deep.equal({ 200: 20 });
    // the other 30 got their first tokens earlier, one at a time
    for (let i = 20; i < 50; i++) {
      const one = await send(
        agent,
        'POST',
        '/v1/partner-apis/token',
        { Authorization: basic(`renewing-${i}`, `renewing-${i}-secret`), 'Content-Type': 'application/x-www-form-urlencoded' },
        'grant_type=client_credentials',
      );
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
