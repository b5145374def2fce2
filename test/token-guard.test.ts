/**
 * The token endpoints resist guessing (lib/auth/token-guard.ts, api/feeds/token.ts): failed client
 * authentications are throttled per client id and per address with 429 + Retry-After, and a flood of
 * bad secrets is held to a bounded number of concurrent secret checks (the rest 503 at once) while
 * the partner API keeps answering. Latency figures are printed; the assertion on them is loose on
 * purpose (a shared CI machine), the counts are exact.
 */
import { expect } from 'chai';
import supertest from 'supertest';
import { createServer, request as httpRequest, type Agent as HttpAgentType, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { basic, insertClient } from './support/feed-auth.js';
import { insertPartner } from './support/partner-fixtures.js';
import { count } from './support/figures.js';

const ROW = 'token guessing';
const form = 'grant_type=client_credentials';

describe('token endpoints resist guessing', function () {
  this.timeout(120000);

  describe('failure throttle: per client id and per address', () => {
    const t = useTestContext({ config: { TOKEN_AUTH_FAILURES_PER_CLIENT: '3', TOKEN_AUTH_FAILURES_PER_ADDRESS: '10' } });
    let main: supertest.Agent;
    let legacy: supertest.Agent;
    before(async () => {
      await insertClient(t.ctx.db, 'guard-city', 'city');
      await insertClient(t.ctx.db, 'guard-gbfs', 'gbfs');
      main = supertest.agent(buildApp(t.ctx).callback());
      legacy = supertest.agent(buildLegacyApp(t.ctx).callback());
    });
    const token = (id: string, secret: string, host = main) =>
      (host === main ? host.post('/v1/partner-apis/token') : host.post('/token')).set('Authorization', basic(id, secret)).type('form').send(form);

    it('after 3 failures for one client id: 429 slow_down with Retry-After, even with the right secret, until the window ends', async () => {
      for (let i = 0; i < 3; i++) expect((await token('guard-city', `wrong-${i}`)).status).to.equal(401);
      let throttled = 0;
      for (const secret of ['wrong-4', 'guard-city-secret']) {
        const res = await token('guard-city', secret);
        expect(res.status, res.text).to.equal(429);
        expect(res.body.error).to.equal('slow_down');
        const after = Number(res.headers['retry-after']);
        expect(after).to.be.within(1, 60);
        throttled++;
      }
      // the legacy host shares the counters of its process
      expect((await token('guard-city', 'guard-city-secret', legacy)).status).to.equal(429);
      throttled++;
      count(ROW, 'inputs', 6);
      // another client id from the same address is not throttled yet (4 address failures so far)
      expect((await token('guard-gbfs', 'guard-gbfs-secret')).status).to.equal(200);
      t.ctx.clock.advance(60_001);
      expect((await token('guard-city', 'guard-city-secret')).status).to.equal(200);
      console.log(`      throttle: ${throttled} × 429 after 3 failures of one client id`);
    });

    it('after 10 failures from one address, over any ids: 429 for every id from it', async () => {
      t.ctx.clock.advance(60_001);
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) statuses.push((await token(`guess-${i}`, 'x')).status);
      expect(statuses.slice(0, 10)).to.deep.equal(Array(10).fill(401));
      expect(statuses.slice(10)).to.deep.equal(Array(5).fill(429));
      expect((await token('guard-gbfs', 'guard-gbfs-secret')).status).to.equal(429);
      // no credentials at all count as failures too
      count(ROW, 'inputs', 16);
      t.ctx.clock.advance(60_001);
      expect((await token('guard-gbfs', 'guard-gbfs-secret')).status).to.equal(200);
    });
  });

  describe('hash gate: a flood of bad secrets', () => {
    // the throttle is off here (test defaults): what is measured is the bound on concurrent hashing
    const t = useTestContext({ config: { TOKEN_HASH_CONCURRENCY: '1', TOKEN_HASH_QUEUE: '4' } });
    let server: Server;
    let port: number;
    let partnerKey: string;

    before(async () => {
      await insertClient(t.ctx.db, 'flood-city', 'city');
      partnerKey = (await insertPartner(t.ctx.db)).key;
      server = createServer(withHotPath(buildApp(t.ctx)));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    const send = (agent: HttpAgentType, path: string, method: string, headers: Record<string, string>, body?: string) =>
      new Promise<{ status: number; ms: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const started = performance.now();
        const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, headers: res.headers }));
        });
        req.on('error', reject);
        req.end(body);
      });
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

    async function partnerLatencies(n: number): Promise<number[]> {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = await send(agent, '/v1/zone/info', 'GET', { 'X-Auth-Token': partnerKey });
        expect(r.status).to.equal(200);
        out.push(r.ms);
      }
      agent.destroy();
      return out;
    }

    it('at most 1 secret check at a time and 4 waiting: the rest 503 at once; partner latency stays near its baseline', async () => {
      await partnerLatencies(5); // warm up
      const baseline = median(await partnerLatencies(30));
      const flood = new Agent({ keepAlive: true, maxSockets: 200 });
      const N = 200;
      const floodDone = Promise.all(
        Array.from({ length: N }, (_, i) =>
          send(flood, '/v1/partner-apis/token', 'POST', { Authorization: basic(i % 2 ? 'flood-city' : `nobody-${i}`, `bad-${i}`), 'Content-Type': 'application/x-www-form-urlencoded' }, form),
        ),
      );
      const during = median(await partnerLatencies(30));
      const results = await floodDone;
      flood.destroy();
      const by = (s: number) => results.filter((r) => r.status === s).length;
      count(ROW, 'inputs', N);
      console.log(`      flood of ${N} bad secrets: ${by(401)} × 401 (checked), ${by(503)} × 503 (gate full); partner p50 ${baseline.toFixed(1)} ms before, ${during.toFixed(1)} ms during`);
      expect(by(401) + by(503), 'every answer is 401 or 503').to.equal(N);
      expect(by(503), 'the gate refused most of the flood').to.be.greaterThan(N / 2);
      for (const r of results.filter((x) => x.status === 503)) expect(r.headers['retry-after']).to.equal('1');
      // loose on purpose: without the gate the flood takes the cores for seconds
      expect(during, 'partner p50 during the flood').to.be.below(baseline * 20 + 250);
      // once the flood is over, the right secret works
      const ok = await send(new Agent(), '/v1/partner-apis/token', 'POST', { Authorization: basic('flood-city', 'flood-city-secret'), 'Content-Type': 'application/x-www-form-urlencoded' }, form);
      expect(ok.status).to.equal(200);
    });
  });
});
