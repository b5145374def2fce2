/**
 * The hot path of the hourly-file routes (api/feeds/fast.ts) answers only what the ordinary route
 * would answer: the first request of a file goes the ordinary way and fills the caches, the repeats
 * are answered from them; status, headers and bytes must be identical (bar Date and X-Request-Id).
 */
import { expect } from 'chai';
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertClient, insertFeedZone, publishHour, tokenFor } from './support/feed-auth.js';

const HOUR = '2026-11-21T08';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function get(server: Server, path: string, headers: Record<string, string>, method = 'GET'): Promise<Raw> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const comparable = (h: IncomingHttpHeaders) => {
  const { date: _date, 'x-request-id': _id, connection: _c, 'keep-alive': _k, ...rest } = h;
  return rest;
};

describe('feeds: the hot path answers exactly as the ordinary route', () => {
  const t = useTestContext({ now: '2026-11-21T10:30:00Z' });
  let main: Server;
  let legacy: Server;
  let auth: string;

  before(async () => {
    await insertFeedZone(t.ctx.db, 'fastzone', '2026-11-01T00:00:00Z');
    await insertClient(t.ctx.db, 'fast-city', 'city');
    auth = `Bearer ${await tokenFor(t.ctx, 'fast-city', 'city')}`;
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'fastzone', hour: HOUR, body: { version: '2.0.0', trips: [{ trip_id: 'a' }] } });
    await publishHour(t.ctx, { feed: 'mds_status_changes', version: '1.2', zone: 'fastzone', hour: HOUR, body: { version: '1.2.0', data: { status_changes: [] } } });
    main = buildApp(t.ctx).listen(0, '127.0.0.1');
    legacy = buildLegacyApp(t.ctx).listen(0, '127.0.0.1');
    await Promise.all([once(main, 'listening'), once(legacy, 'listening')]);
  });
  after(() => {
    main?.close();
    legacy?.close();
  });

  const cases = [
    { name: 'MDS 2.0 trips', server: () => main, path: `/v1/partner-apis/mds/fastzone/trips?end_time=${HOUR}`, headers: {} },
    { name: 'legacy 1.2 status_changes', server: () => legacy, path: `/en/fastzone/status_changes?event_time=${HOUR}`, headers: { Accept: 'application/vnd.mds+json;version=1.2' } },
  ];

  for (const c of cases) {
    it(`${c.name}: 200, 304 and HEAD are the same before and after the caches are warm`, async () => {
      const h = { Authorization: auth, 'Accept-Encoding': 'gzip', ...c.headers };
      const cold = await get(c.server(), c.path, h);
      const warm = await get(c.server(), c.path, h);
      expect(cold.status).to.equal(200);
      expect(warm.status).to.equal(200);
      expect(comparable(warm.headers)).to.deep.equal(comparable(cold.headers));
      expect(warm.body.equals(cold.body)).to.equal(true);
      const etag = String(cold.headers.etag);
      const notModified = await get(c.server(), c.path, { ...h, 'If-None-Match': etag });
      expect(notModified.status).to.equal(304);
      expect(notModified.body.length).to.equal(0);
      const head = await get(c.server(), c.path, h, 'HEAD');
      expect(head.status).to.equal(200);
      expect(head.headers.etag).to.equal(etag);
      expect(head.body.length).to.equal(0);
      // a wrong token never rides the warm caches
      expect((await get(c.server(), c.path, { ...h, Authorization: 'Bearer nope' })).status).to.equal(401);
    });
  }
});
