/**
 * Hostile bodies on every body endpoint of every family, through the one reader (api/kit/body.ts):
 * nesting of any depth is a 400 in the family's error format (never a stack overflow), a client that
 * aborts mid-body is logged as aborted (499) and not counted as a server error, and a keep-alive
 * connection answers its next request at once after a refused body.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import supertest from 'supertest';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import Koa from 'koa';
import { buildApp, buildLegacyApp, withHotPath } from '../api/app.js';
import { createLogger } from '../lib/core/log.js';
import { registry } from '../lib/core/metrics.js';
import { readBody } from '../api/kit/body.js';
import { requestEnvelope } from '../api/middleware/request-envelope.js';
import { useTestContext } from './support/context.js';
import { insertPartner } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';
import { insertClient, insertFeedZone, tokenFor } from './support/feed-auth.js';
import { FC, count, expectSafe, postChunked } from './support/figures.js';

const ROW = 'hostile bodies';
const LIMIT = 1024 * 1024;

/** `depth` levels of `[` or `{"a":` nesting, closed properly: valid JSON, just deep. */
function nested(depth: number, kind: 'array' | 'object' | 'mixed'): string {
  if (kind === 'array') return '['.repeat(depth) + ']'.repeat(depth);
  if (kind === 'object') return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    if (i % 2) {
      open += '[';
      close = ']' + close;
    } else {
      open += '{"k":';
      close = '}' + close;
    }
  }
  return open + '1' + close;
}

/** One raw HTTP/1.1 exchange after another on the same socket. */
class RawClient {
  private buf = '';
  private waiters: Array<() => void> = [];
  closed = false;
  constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.buf += d;
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('error', () => undefined);
  }
  static open(port: number): Promise<RawClient> {
    return new Promise((resolve) => {
      const s = connect(port, '127.0.0.1', () => resolve(new RawClient(s)));
    });
  }
  /** The next whole response (headers and Content-Length body). */
  async response(): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buf.slice(0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
        }
        const len = Number(headers['content-length'] ?? 0);
        if (this.buf.length >= end + 4 + len) {
          const body = this.buf.slice(end + 4, end + 4 + len);
          this.buf = this.buf.slice(end + 4 + len);
          return { status: Number(head[0].split(' ')[1]), headers, body };
        }
      }
      if (this.closed) throw new Error(`connection closed; got ${JSON.stringify(this.buf.slice(0, 200))}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

describe('hostile bodies: nesting, aborts and keep-alive on every family', function () {
  this.timeout(120000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z', config: { MAX_BODY_BYTES: String(LIMIT) } });
  let main: supertest.Agent;
  let legacy: supertest.Agent;
  let partnerKey: string;
  let tompKey: string;
  let cityToken: string;

  before(async () => {
    main = supertest.agent(buildApp(t.ctx).callback());
    legacy = supertest.agent(buildLegacyApp(t.ctx).callback());
    partnerKey = (await insertPartner(t.ctx.db)).key;
    tompKey = (await insertMaasPartner(t.ctx.db)).key;
    await insertFeedZone(t.ctx.db, 'berlin');
    await insertClient(t.ctx.db, 'deep-city', 'city');
    cityToken = await tokenFor(t.ctx, 'deep-city', 'city');
  });

  const uuid = '3f1e5c2a-9b7d-4c1e-8a2b-6d5f4e3c2b1a';
  type Family = 'partner' | 'tomp' | 'oauth' | 'feed' | 'ops';
  const ENDPOINTS: Array<{
    family: Family;
    host: 'main' | 'legacy';
    method: 'post' | 'patch' | 'put';
    path: string;
    auth?: () => [string, string];
    form?: boolean;
  }> = [
    { family: 'partner', host: 'main', method: 'post', path: '/v1/user/register', auth: () => ['X-Auth-Token', partnerKey] },
    { family: 'partner', host: 'main', method: 'patch', path: `/v1/user/${uuid}`, auth: () => ['X-Auth-Token', partnerKey] },
    { family: 'partner', host: 'main', method: 'patch', path: `/v1/users/${uuid}`, auth: () => ['X-Auth-Token', partnerKey] },
    { family: 'partner', host: 'main', method: 'post', path: '/v1/rental/start', auth: () => ['X-Auth-Token', partnerKey] },
    { family: 'partner', host: 'main', method: 'post', path: `/v1/rental/${uuid}/end`, auth: () => ['X-Auth-Token', partnerKey] },
    { family: 'tomp', host: 'main', method: 'post', path: '/edge/tomp/bookings/one-stop', auth: () => ['X-Access-Token', tompKey] },
    { family: 'tomp', host: 'main', method: 'post', path: `/edge/tomp/bookings/${uuid}/events`, auth: () => ['X-Access-Token', tompKey] },
    { family: 'tomp', host: 'main', method: 'post', path: `/edge/tomp/legs/${uuid}/events`, auth: () => ['X-Access-Token', tompKey] },
    { family: 'tomp', host: 'main', method: 'post', path: '/edge/tomp/support', auth: () => ['X-Access-Token', tompKey] },
    { family: 'oauth', host: 'main', method: 'post', path: '/v1/partner-apis/token', form: true },
    { family: 'oauth', host: 'legacy', method: 'post', path: '/token', form: true },
    { family: 'oauth', host: 'main', method: 'post', path: '/v1/partner-apis/token' },
    { family: 'feed', host: 'legacy', method: 'post', path: '/en/berlin/events?start_time=1&end_time=2', auth: () => ['Authorization', `Bearer ${cityToken}`] },
    { family: 'ops', host: 'main', method: 'post', path: '/healthz' },
    { family: 'ops', host: 'main', method: 'post', path: '/metrics' },
  ];

  /** The family's error format, a 400 (a form endpoint may also call a deep text too large: still 400). */
  function expectFamily400(family: Family, res: supertest.Response, what: string): void {
    expectSafe(ROW, res, what, () => {
      if (family === 'ops') {
        // no body endpoint on the ops routes: the wrong method is refused without reading
        expect([404, 405], what).to.include(res.status);
        if (res.status === 405) expect(res.headers.allow, what).to.be.a('string');
        return;
      }
      expect(res.status, `${what}: ${res.text.slice(0, 200)}`).to.equal(400);
      if (family === 'partner') {
        expect(res.body.errors[0].status).to.equal('400');
        expect(res.body.errors[0].code).to.equal('InvalidRequestBody');
      } else if (family === 'tomp') {
        expect(res.body.status).to.equal(400);
        expect(res.body.detail).to.be.a('string');
      } else if (family === 'oauth') {
        expect(res.body.error).to.equal('invalid_request');
      } else {
        expect(res.body.error).to.equal('bad_param');
        expect(res.body.error_details).to.be.an('array');
      }
    });
  }

  for (const [depth, kind] of [
    [65, 'array'],
    [32_000, 'array'],
    [200_000, 'array'],
    [32_000, 'object'],
    [50_000, 'mixed'],
  ] as const) {
    it(`${depth} levels of ${kind} nesting: 400 in each family's format on every body endpoint`, async () => {
      const text = nested(depth, kind);
      for (const e of ENDPOINTS) {
        const agent = e.host === 'main' ? main : legacy;
        let req = agent[e.method](e.path).set('Content-Type', e.form ? 'application/x-www-form-urlencoded' : 'application/json');
        if (e.auth) req = req.set(...e.auth());
        if (e.family === 'feed') req = req.set('Accept', 'application/vnd.mds+json;version=1.2');
        const res = await req.send(text);
        expectFamily400(e.family, res, `${e.method.toUpperCase()} ${e.path} (${depth} ${kind})`);
      }
    });
  }

  it('chunked bodies (no Content-Length) are measured the same: 32,000 levels → 400', async () => {
    const deep = Buffer.from(nested(32_000, 'array'));
    const cases: Array<[ReturnType<typeof withHotPath>, string, Record<string, string>, Family]> = [
      [withHotPath(buildApp(t.ctx)), '/edge/tomp/support', { 'X-Access-Token': tompKey }, 'tomp'],
      [withHotPath(buildApp(t.ctx)), '/v1/user/register', { 'X-Auth-Token': partnerKey }, 'partner'],
      [
        withHotPath(buildLegacyApp(t.ctx)),
        '/en/berlin/events?start_time=1&end_time=2',
        { Authorization: `Bearer ${cityToken}`, Accept: 'application/vnd.mds+json;version=1.2' },
        'feed',
      ],
    ];
    for (const [handler, path, headers, family] of cases) {
      const res = await postChunked(handler, path, { ...headers, 'Content-Type': 'application/json' }, deep);
      expectFamily400(family, res as unknown as supertest.Response, `chunked ${path}`);
    }
  });

  it('every 405 of every family carries Allow (RFC 9110)', async () => {
    const cases: Array<[supertest.Agent, 'get' | 'put' | 'delete', string, string]> = [
      [main, 'get', '/v1/user/register', 'POST'],
      [main, 'delete', '/v1/rental/start', 'POST'],
      [main, 'put', '/edge/tomp/support', 'POST'],
      [main, 'delete', '/edge/tomp/bookings/one-stop', 'POST'],
      [main, 'get', '/v1/partner-apis/token', 'POST'],
      [legacy, 'get', '/token', 'POST'],
      [legacy, 'get', '/en/berlin/events', 'POST'],
    ];
    for (const [agent, method, path, allow] of cases) {
      const res = await agent[method](path);
      expectSafe(ROW, res, `${method} ${path}`, () => {
        expect(res.status, `${method} ${path}`).to.equal(405);
        expect(res.headers.allow, `${method} ${path}`).to.include(allow);
      });
    }
  });

  it('property: any nesting past 64 levels, any mix of brackets, is a 400 on every body endpoint', async () => {
    const partner = ENDPOINTS.filter((e) => e.family !== 'ops');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 65, max: 40_000 }),
        fc.constantFrom('array', 'object', 'mixed'),
        fc.constantFrom(...partner),
        async (depth, kind, e) => {
          let req = (e.host === 'main' ? main : legacy)
            [e.method](e.path)
            .set('Content-Type', e.form ? 'application/x-www-form-urlencoded' : 'application/json');
          if (e.auth) req = req.set(...e.auth());
          if (e.family === 'feed') req = req.set('Accept', 'application/vnd.mds+json;version=1.2');
          expectFamily400(e.family, await req.send(nested(depth, kind)), `${e.path} ${depth} ${kind}`);
        },
      ),
      { ...FC, numRuns: 40 },
    );
  });

  describe('on a listening server', () => {
    let server: Server;
    let port: number;
    /** requests the server has parsed the headers of */
    let requests = 0;
    const lines: Array<Record<string, unknown>> = [];

    before(async () => {
      // the app logs through a capture stream at info, the level that writes every access line
      const sink = new Writable({
        write(chunk: Buffer, _enc, cb) {
          for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l));
          cb();
        },
      });
      server = createServer(withHotPath(buildApp({ ...t.ctx, log: createLogger('info', sink) })));
      server.on('request', () => requests++);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });

    const statusSeries = async (route: string) =>
      (await registry.getSingleMetric('http_requests_total')!.get()).values
        .filter((v) => v.labels.route === route)
        .map((v) => ({ status: String(v.labels.status), value: v.value }));

    it('a client that aborts mid-body is logged as aborted (499) and counted as no server error', async () => {
      const route = '/edge/tomp/support';
      for (let i = 0; i < 5; i++) {
        const c = await RawClient.open(port);
        const seen = requests;
        c.socket.write(
          `POST ${route} HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${tompKey}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"supportType":`,
        );
        // aborted once the server has the request (a socket closed before its headers were read is
        // no request at all: nothing to log), and its handler has had time to start reading the body
        for (let w = 0; w < 250 && requests === seen; w++) await new Promise((r) => setTimeout(r, 20));
        await new Promise((r) => setTimeout(r, 50));
        c.socket.destroy();
        count(ROW, 'inputs');
      }
      // the access lines are written when the server notices the abort
      for (let i = 0; i < 100 && lines.filter((l) => l.status === 499).length < 5; i++) await new Promise((r) => setTimeout(r, 20));
      const aborted = lines.filter((l) => l.status === 499);
      expect(aborted, JSON.stringify(lines.slice(-5))).to.have.length(5);
      for (const l of aborted) expect(l.msg).to.equal('request aborted by the client');
      expect(
        lines.filter((l) => Number(l.status) >= 500 || l.level === 50),
        'no error lines',
      ).to.deep.equal([]);
      const series = await statusSeries(route);
      expect(series.filter((s) => s.status.startsWith('5'))).to.deep.equal([]);
      expect(series.find((s) => s.status === '499')?.value).to.be.at.least(5);
    });

    it('a client gone before its handler starts reading the body is still a 499, logged once', async () => {
      // the route reads the body only after the socket has closed, as a slow credential lookup
      // under load does: the reader must see that the client is gone, not wait for events already past
      const seen: Array<Record<string, unknown>> = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, cb) {
          for (const l of chunk.toString('utf8').split('\n')) if (l) seen.push(JSON.parse(l));
          cb();
        },
      });
      const app = new Koa();
      app.use(requestEnvelope(createLogger('info', sink), 'late-reader'));
      app.use(async (ctx) => {
        while (!ctx.req.destroyed) await new Promise((r) => setTimeout(r, 5));
        ctx.body = { bytes: (await readBody(ctx, LIMIT)).length };
      });
      const handle = app.callback();
      const late = createServer((req, res) => void handle(req, res));
      await new Promise<void>((r) => late.listen(0, '127.0.0.1', r));
      try {
        const c = await RawClient.open((late.address() as AddressInfo).port);
        const arrived = once(late, 'request');
        c.socket.write('POST /late HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"a":');
        await arrived;
        c.socket.destroy();
        for (let i = 0; i < 250 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        expect(
          seen.map((l) => [l.status, l.msg]),
          JSON.stringify(seen),
        ).to.deep.equal([[499, 'request aborted by the client']]);
        count(ROW, 'inputs');
      } finally {
        late.closeAllConnections();
        await new Promise((r) => late.close(r));
      }
    });

    it('property: aborts at any point of any body endpoint are 499s, never a server error', async () => {
      const targets = [
        { path: '/v1/user/register', header: () => `X-Auth-Token: ${partnerKey}` },
        { path: '/v1/rental/start', header: () => `X-Auth-Token: ${partnerKey}` },
        { path: '/edge/tomp/bookings/one-stop', header: () => `X-Access-Token: ${tompKey}` },
        { path: '/edge/tomp/support', header: () => `X-Access-Token: ${tompKey}` },
        { path: '/v1/partner-apis/token', header: () => 'X-Form: 1', form: true },
      ];
      const before = lines.length;
      let sent = 0;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...targets), fc.integer({ min: 1, max: 4000 }), fc.integer({ min: 0, max: 3999 }), async (target, declared, part) => {
          const c = await RawClient.open(port);
          const type = target.form ? 'application/x-www-form-urlencoded' : 'application/json';
          c.socket.write(
            `POST ${target.path} HTTP/1.1\r\nHost: x\r\n${target.header()}\r\nContent-Type: ${type}\r\nContent-Length: ${declared}\r\n\r\n${'['.repeat(Math.min(part, declared - 1))}`,
          );
          await new Promise((r) => setTimeout(r, 5));
          c.socket.destroy();
          sent++;
          count(ROW, 'inputs');
        }),
        { ...FC, numRuns: 40 },
      );
      for (let i = 0; i < 100 && lines.length - before < sent; i++) await new Promise((r) => setTimeout(r, 20));
      const mine = lines.slice(before);
      const errors = mine.filter((l) => Number(l.status) >= 500 || Number(l.level) >= 50);
      if (errors.length) count(ROW, 'failures', errors.length);
      expect(errors, JSON.stringify(errors.slice(0, 3))).to.deep.equal([]);
      expect(mine.filter((l) => l.status === 499).length, 'aborted requests logged as 499').to.be.greaterThan(0);
    });

    it('property: after a refused body of any size within the drain bound, the same socket answers at once', async () => {
      const c = await RawClient.open(port);
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: LIMIT + 1, max: LIMIT + 200_000 }), fc.boolean(), async (size, tomp) => {
          const head = tomp
            ? `POST /edge/tomp/support HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${tompKey}\r\n`
            : `POST /v1/user/register HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${partnerKey}\r\n`;
          c.socket.write(`${head}Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`);
          c.socket.write(Buffer.alloc(size, 0x5b));
          const refused = await c.response();
          expectSafe(ROW, { status: refused.status, text: refused.body }, `${size} bytes`, () => {
            expect(refused.status).to.equal(413);
            expect(refused.headers.connection).to.not.equal('close');
          });
          c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
          expect((await c.response()).status).to.equal(200);
        }),
        { ...FC, numRuns: 15 },
      );
      c.socket.destroy();
    });

    it('keep-alive: after a 413 the same socket answers the next request at once', async () => {
      const c = await RawClient.open(port);
      // 1. a body over the limit but within the drain bound: drained, connection kept
      const over = Buffer.alloc(LIMIT + 1000, 0x20);
      c.socket.write(
        `POST /v1/user/register HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${partnerKey}\r\nContent-Type: application/json\r\nContent-Length: ${over.length}\r\n\r\n`,
      );
      c.socket.write(over);
      const first = await c.response();
      expect(first.status).to.equal(413);
      expect(JSON.parse(first.body).errors[0].code).to.equal('RequestTooLarge');
      expect(first.headers.connection).to.not.equal('close');
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect((await c.response()).status).to.equal(200);
      // 2. a TOMP 413 with the body sent in full on the same socket, then a third request
      c.socket.write(
        `POST /edge/tomp/support HTTP/1.1\r\nHost: x\r\nX-Access-Token: ${tompKey}\r\nContent-Type: application/json\r\nContent-Length: ${over.length}\r\n\r\n`,
      );
      c.socket.write(over);
      expect((await c.response()).status).to.equal(413);
      c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      expect((await c.response()).status).to.equal(200);
      count(ROW, 'inputs', 2);
      c.socket.destroy();
    });

    it('a body far over the limit is refused at once with Connection: close, without waiting for it', async () => {
      const c = await RawClient.open(port);
      // declares 1 GB and sends nothing more: the answer must not wait for the body
      c.socket.write(
        `POST /v1/rental/start HTTP/1.1\r\nHost: x\r\nX-Auth-Token: ${partnerKey}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{`,
      );
      const res = await c.response();
      expect(res.status).to.equal(413);
      expect(res.headers.connection).to.equal('close');
      for (let i = 0; i < 100 && !c.closed; i++) await new Promise((r) => setTimeout(r, 20));
      expect(c.closed, 'the server closed the connection').to.equal(true);
      // a refusal before reading (no key) with a large unread body closes as well
      const d = await RawClient.open(port);
      d.socket.write(`POST /v1/rental/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{`);
      const unauth = await d.response();
      expect(unauth.status).to.equal(401);
      expect(unauth.headers.connection).to.equal('close');
      count(ROW, 'inputs', 2);
      d.socket.destroy();
    });
  });
});
