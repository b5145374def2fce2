/**
 * The hot path of the hourly-file routes (api/feeds/hot-path.ts, answered before Koa by the listener of
 * `withHotPath`) answers only what the ordinary route would answer: the first request of a file goes
 * the ordinary way and fills the caches, the repeats are answered from them; status, headers (names,
 * values and order) and bytes must be identical (bar Date and X-Request-Id), and the request id,
 * metrics and access line must be those of the outermost middleware.
 */
import { expect } from 'chai';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type Koa from 'koa';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { createLogger } from '../lib/core/log.js';
import { metrics } from '../lib/core/metrics.js';
import { revokeFeedClient } from '../lib/feeds/clients.js';
import { PUBLICATION_TTL_MS } from '../api/feeds/publications.js';
import { useTestContext } from './support/context.js';
import { insertClient, insertFeedZone, publishHour, tokenFor } from './support/feed-auth.js';

const NOW = '2026-11-21T10:30:00Z';
const HOUR = '2026-11-21T08';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

function get(server: Server, path: string, headers: Record<string, string>, method = 'GET', agent?: Agent): Promise<Raw> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, ...(agent ? { agent } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const VARYING = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);
const comparable = (h: IncomingHttpHeaders) => {
  const { date: _date, 'x-request-id': _id, connection: _c, 'keep-alive': _k, ...rest } = h;
  return rest;
};
/** The header names in the order sent, with the values of those that do not vary per request. */
const ordered = (raw: string[]) => {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) out.push(VARYING.has(raw[i].toLowerCase()) ? raw[i] : `${raw[i]}: ${raw[i + 1]}`);
  return out;
};

async function listen(listener: Parameters<typeof createServer>[1] & object): Promise<Server> {
  const s = createServer(listener).listen(0, '127.0.0.1');
  await once(s, 'listening');
  return s;
}

/** `withHotPath(app)` with a count of the requests it handed to Koa. */
function hotListener(app: Koa, counter: { koa: number }) {
  const callback = app.callback.bind(app);
  app.callback = () => {
    const h = callback();
    return (req, res) => {
      counter.koa++;
      return h(req, res);
    };
  };
  return withHotPath(app);
}

const requestCount = async (host: string, route: string, status: number) =>
  (await metrics.httpRequests.get()).values.find(
    (v) => v.labels.host === host && v.labels.method === 'GET' && v.labels.route === route && v.labels.status === String(status),
  )?.value ?? 0;

describe('feeds: the hot path answers exactly as the ordinary route', () => {
  const t = useTestContext({ now: NOW });
  let main: Server;
  let legacy: Server;
  let hotMain: Server;
  let hotLegacy: Server;
  const calls = { main: { koa: 0 }, legacy: { koa: 0 } };
  const lines: Array<Record<string, unknown>> = [];
  let auth: string;

  before(async () => {
    await insertFeedZone(t.ctx.db, 'fastzone', '2026-11-01T00:00:00Z');
    await insertClient(t.ctx.db, 'fast-city', 'city');
    auth = `Bearer ${await tokenFor(t.ctx, 'fast-city', 'city')}`;
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'fastzone', hour: HOUR, body: { version: '2.0.0', trips: [{ trip_id: 'a' }] } });
    await publishHour(t.ctx, {
      feed: 'mds_status_changes',
      version: '1.2',
      zone: 'fastzone',
      hour: HOUR,
      body: { version: '1.2.0', data: { status_changes: [] } },
    });
    // Koa alone (the ordinary route for every request) ...
    main = buildApp(t.ctx).listen(0, '127.0.0.1');
    legacy = buildLegacyApp(t.ctx).listen(0, '127.0.0.1');
    await Promise.all([once(main, 'listening'), once(legacy, 'listening')]);
    // ... and the listener the hosts use, with a logger that keeps the access lines
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const hotCtx = { ...t.ctx, log: createLogger('info', sink) };
    hotMain = await listen(hotListener(buildApp(hotCtx), calls.main));
    hotLegacy = await listen(hotListener(buildLegacyApp(hotCtx), calls.legacy));
  });
  after(() => {
    for (const s of [main, legacy, hotMain, hotLegacy]) s?.close();
  });

  const cases = [
    {
      name: 'MDS 2.0 trips',
      host: 'main' as const,
      route: '/v1/partner-apis/mds/:zoneID/trips',
      path: `/v1/partner-apis/mds/fastzone/trips?end_time=${HOUR}`,
      headers: {} as Record<string, string>,
    },
    {
      name: 'legacy 1.2 status_changes',
      host: 'legacy' as const,
      route: '/en/:zoneID/status_changes',
      path: `/en/fastzone/status_changes?event_time=${HOUR}`,
      headers: { Accept: 'application/vnd.mds+json;version=1.2' } as Record<string, string>,
    },
  ];

  for (const c of cases) {
    for (const via of ['Koa alone', 'the hot-path listener'] as const) {
      const server = () => (via === 'Koa alone' ? (c.host === 'main' ? main : legacy) : c.host === 'main' ? hotMain : hotLegacy);
      it(`${c.name} via ${via}: 200, 304 and HEAD are the same before and after the caches are warm`, async () => {
        const h = { Authorization: auth, 'Accept-Encoding': 'gzip', ...c.headers };
        const cold = await get(server(), c.path, h);
        const warm = await get(server(), c.path, h);
        expect(cold.status).to.equal(200);
        expect(warm.status).to.equal(200);
        expect(comparable(warm.headers)).to.deep.equal(comparable(cold.headers));
        expect(ordered(warm.rawHeaders)).to.deep.equal(ordered(cold.rawHeaders));
        expect(warm.body.equals(cold.body)).to.equal(true);
        const etag = String(cold.headers.etag);
        const notModified = await get(server(), c.path, { ...h, 'If-None-Match': etag });
        expect(notModified.status).to.equal(304);
        expect(notModified.body.length).to.equal(0);
        const head = await get(server(), c.path, h, 'HEAD');
        expect(head.status).to.equal(200);
        expect(head.headers.etag).to.equal(etag);
        expect(head.body.length).to.equal(0);
        // a wrong token never rides the warm caches
        expect((await get(server(), c.path, { ...h, Authorization: 'Bearer nope' })).status).to.equal(401);
      });
    }

    it(`${c.name}: the hot-path listener answers warm requests before Koa, identically to Koa alone`, async () => {
      const h = { Authorization: auth, 'Accept-Encoding': 'gzip', ...c.headers };
      const koaServer = c.host === 'main' ? main : legacy;
      const hotServer = c.host === 'main' ? hotMain : hotLegacy;
      await get(hotServer, c.path, h); // warm (the caches are filled by the ordinary route)
      const counter = calls[c.host];
      const before = counter.koa;
      const count200 = await requestCount(c.host, c.route, 200);
      const count304 = await requestCount(c.host, c.route, 304);
      lines.length = 0;

      for (const [method, extra] of [
        ['GET', {}],
        ['HEAD', {}],
        ['GET', { 'If-None-Match': 'x' }],
      ] as const) {
        const viaKoa = await get(koaServer, c.path, { ...h, ...extra }, method);
        const viaHot = await get(hotServer, c.path, { ...h, ...extra }, method);
        expect(viaHot.status).to.equal(viaKoa.status);
        expect(comparable(viaHot.headers)).to.deep.equal(comparable(viaKoa.headers));
        expect(ordered(viaHot.rawHeaders)).to.deep.equal(ordered(viaKoa.rawHeaders));
        expect(viaHot.body.equals(viaKoa.body)).to.equal(true);
      }
      const etag = String((await get(koaServer, c.path, h, 'HEAD')).headers.etag);
      const nm = await get(hotServer, c.path, { ...h, 'If-None-Match': etag });
      expect(nm.status).to.equal(304);
      expect(ordered(nm.rawHeaders)).to.deep.equal(ordered((await get(koaServer, c.path, { ...h, 'If-None-Match': etag })).rawHeaders));
      expect(counter.koa, 'answered without Koa').to.equal(before);

      // the outermost middleware's guarantees: request id (sanitized echo, else a UUID) ...
      const echoed = await get(hotServer, c.path, { ...h, 'X-Request-Id': 'abc-123<script>' });
      expect(echoed.headers['x-request-id']).to.equal('abc-123script');
      expect(String(nm.headers['x-request-id'])).to.match(/^[0-9a-f-]{36}$/);
      expect(counter.koa).to.equal(before);
      // ... the metrics with the route pattern (both servers count under the same labels: GET 200
      // twice via Koa, three times here; 304 once each) ...
      expect(await requestCount(c.host, c.route, 200)).to.equal(count200 + 5);
      expect(await requestCount(c.host, c.route, 304)).to.equal(count304 + 2);
      // ... and the access line, without the credentials
      const access = lines.filter((l) => l.msg === 'request');
      expect(access).to.have.length(5);
      expect(access[0]).to.include({ method: 'GET', url: c.path, status: 200 });
      expect(access.at(-1)).to.include({ requestId: 'abc-123script', status: 200 });
      expect(JSON.stringify(lines)).not.to.include(auth.slice(7));

      // what the caches cannot answer still goes to Koa, and answers as there
      const miss = await get(hotServer, c.path.replace('T08', 'T07'), h);
      expect(counter.koa).to.equal(before + 1);
      expect(miss.status).to.equal((await get(koaServer, c.path.replace('T08', 'T07'), h)).status);
    });
  }
  it("one keep-alive connection repeating its request: answered from the connection's memo, and every freshness check still applies", async () => {
    // every request on one socket: the hot path's per-connection memo of the request's strings
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const onSocket = (s: unknown) => sockets.add(s);
    hotMain.on('connection', onSocket);
    try {
      await insertClient(t.ctx.db, 'memo-city', 'city');
      const own = `Bearer ${await tokenFor(t.ctx, 'memo-city', 'city')}`;
      const path = `/v1/partner-apis/mds/fastzone/trips?end_time=${HOUR}`;
      const h = { Authorization: own, 'Accept-Encoding': 'gzip' };
      const send = (extra: Record<string, string> = {}, method = 'GET', p = path) => get(hotMain, p, { ...h, ...extra }, method, agent);
      const first = await send(); // fills the caches (the client's standing, maybe the rows)
      expect(first.status).to.equal(200);
      const before = calls.main.koa;
      for (let i = 0; i < 3; i++) {
        const r = await send();
        expect(r.status).to.equal(200);
        expect(r.headers.etag).to.equal(first.headers.etag);
        expect(r.body.equals(first.body)).to.equal(true);
      }
      expect((await send({ 'If-None-Match': String(first.headers.etag) })).status).to.equal(304);
      expect((await send({}, 'HEAD')).body.length).to.equal(0);
      expect(calls.main.koa, 'answered before Koa').to.equal(before);

      // other strings on the same connection are decided afresh: another token, another Accept, another hour
      expect((await send({ Authorization: 'Bearer nope' })).status).to.equal(401);
      expect((await send({ Accept: 'application/vnd.mds+json;version=9.9' })).status).to.equal(406);
      expect((await send({}, 'GET', path.replace('T08', 'T09'))).status).to.equal(202);
      expect((await send()).status).to.equal(200);

      // a republished hour: the new ETag and bytes within the row's bound, on the same connection
      await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'fastzone', hour: HOUR, body: { version: '2.0.0', trips: [{ trip_id: 'b' }] } });
      t.ctx.clock.advance(PUBLICATION_TTL_MS);
      const fresh = await send();
      expect(fresh.status).to.equal(200);
      expect(fresh.headers.etag).to.not.equal(first.headers.etag);
      const again = await send();
      expect(again.headers.etag).to.equal(fresh.headers.etag);
      expect(again.body.equals(fresh.body)).to.equal(true);
      expect((await send({ 'If-None-Match': String(first.headers.etag) })).status).to.equal(200);

      // revocation within 60 s, although the connection's memo holds the token's claims: another
      // client, on another connection, refreshes the rows, the body and the standings first, so that
      // the memo connection's request finds every other cache fresh
      const other = `Bearer ${await tokenFor(t.ctx, 'fast-city', 'city')}`;
      const elsewhere = (authorization: string) => get(hotMain, path, { ...h, Authorization: authorization });
      await revokeFeedClient(t.ctx.db, 'memo-city', t.ctx.clock.now());
      t.ctx.clock.advance(60_000);
      expect((await elsewhere(other)).status).to.equal(200);
      const revoked = await send();
      expect(revoked.status).to.equal(401);
      expect(JSON.parse(revoked.body.toString()).error_description).to.match(/revoked/);
      expect((await send()).status).to.equal(401);

      // a token past its exp is refused as expired on its connection too (the caches kept fresh by a
      // token issued later, on another connection)
      expect((await send({ Authorization: other })).status).to.equal(200);
      expect((await send({ Authorization: other })).status).to.equal(200);
      t.ctx.clock.advance(t.ctx.config.tokenTtlSeconds * 1000 - 10_000);
      const later = `Bearer ${await tokenFor(t.ctx, 'fast-city', 'city')}`;
      expect((await elsewhere(later)).status).to.equal(200);
      t.ctx.clock.advance(10_000);
      expect((await elsewhere(later)).status).to.equal(200);
      const expired = await send({ Authorization: other });
      expect(expired.status).to.equal(401);
      expect(JSON.parse(expired.body.toString()).error_description).to.match(/expired/);
      expect(sockets.size, 'one connection').to.equal(1);
    } finally {
      hotMain.off('connection', onSocket);
      agent.destroy();
      t.ctx.clock.set(NOW);
    }
  });
});
