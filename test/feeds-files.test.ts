import { expect } from 'chai';
import request from 'supertest';
import { gunzipSync } from 'node:zlib';
import { get, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { useTestContext } from './support/context.js';
import { insertFeedZone, publishHour, tokenFor } from './support/feed-auth.js';

const MDS2 = 'application/vnd.mds+json;version=2.0';
const NOW = '2026-11-21T10:30:00Z';

/** supertest decodes gzip by default; keep the raw bytes to see what went over the wire. */
function raw(r: request.Test) {
  return r.buffer(true).parse((res, cb) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => cb(null, Buffer.concat(chunks)));
  });
}

describe('feeds: hourly files through the authenticating route', () => {
  const t = useTestContext({ now: NOW });
  let app: ReturnType<typeof request>;
  let legacy: ReturnType<typeof request>;
  let city: string;
  const trips = { version: '2.0.0', trips: [{ trip_id: 'a' }] };

  before(async () => {
    await insertFeedZone(t.ctx.db, 'berlin', '2026-11-01T12:20:00Z');
    city = `Bearer ${await tokenFor(t.ctx, 'city', 'city')}`;
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'berlin', hour: '2026-11-21T08', body: trips, records: 1 });
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'berlin', hour: '2026-11-21T07', body: { version: '2.0.0', trips: [] } });
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'berlin', hour: '2026-11-21T06', body: trips, dirty: true });
    await publishHour(t.ctx, { feed: 'mds_trips', version: '2.0', zone: 'berlin', hour: '2026-11-21T05', body: trips, status: 'failed' });
    await publishHour(t.ctx, { feed: 'mds_events', version: '2.0', zone: 'berlin', hour: '2026-11-21T08', body: { version: '2.0.0', events: [] } });
    await publishHour(t.ctx, { feed: 'mds_trips', version: '1.2', zone: 'berlin', hour: '2026-11-21T08', body: { version: '1.2.0', data: { trips: [] } } });
    await publishHour(t.ctx, {
      feed: 'mds_status_changes',
      version: '0.4',
      zone: 'berlin',
      hour: '2026-11-21T08',
      body: { version: '0.4.1', data: { status_changes: [] } },
    });
    app = request(buildApp(t.ctx).callback());
    legacy = request(buildLegacyApp(t.ctx).callback());
  });

  const trip = (hour: string) => app.get(`/v1/partner-apis/mds/berlin/trips?end_time=${hour}`).set('Authorization', city);

  describe('hour states', () => {
    it('published: 200 with the file, MDS content type, validators and cache headers', async () => {
      const res = await trip('2026-11-21T08');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal(MDS2);
      expect(res.body).to.deep.equal(trips);
      expect(res.headers.etag).to.match(/^"/);
      expect(res.headers['last-modified']).to.be.a('string');
      expect(res.headers['cache-control']).to.match(/private/);
    });

    it('published empty hour: 200 with an empty array', async () => {
      const res = await trip('2026-11-21T07');
      expect(res.status).to.equal(200);
      expect(res.body.trips).to.deep.equal([]);
    });

    for (const [label, hour] of [
      ['not yet published (inside the lateness)', '2026-11-21T09'],
      ['dirty, waiting for republish', '2026-11-21T06'],
      ['failed', '2026-11-21T05'],
      ['never published', '2026-11-20T10'],
    ]) {
      it(`${label}: 202 with an MDS error body`, async () => {
        const res = await trip(hour);
        expect(res.status).to.equal(202);
        expect(res.body).to.have.keys('error', 'error_description', 'error_details');
        expect(res.body.error_details).to.be.an('array').with.lengthOf.above(0);
      });
    }

    for (const [label, hour] of [
      ['the current hour', '2026-11-21T10'],
      ['a future hour', '2026-11-22T10'],
      ['an hour before the zone existed', '2026-11-01T11'],
    ]) {
      it(`${label}: 404`, async () => {
        const res = await trip(hour);
        expect(res.status).to.equal(404);
        expect(res.body.error).to.equal('not_found');
      });
    }

    it('the hour in which the zone was created counts', async () => {
      expect((await trip('2026-11-01T12')).status).to.equal(202);
    });

    it('historical events come from their own files', async () => {
      const res = await app.get('/v1/partner-apis/mds/berlin/events/historical?event_time=2026-11-21T08').set('Authorization', city);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ version: '2.0.0', events: [] });
    });
  });

  describe('bad input is a 400, never a 500', () => {
    for (const q of [
      '',
      'end_time=',
      'end_time=2026-02-30T10',
      'end_time=2026-11-21T24',
      'end_time=2026-11-21',
      'end_time=2026-11-21T8',
      'end_time=1700000000000',
      'end_time=2026-11-21T08&end_time=2026-11-21T09',
      'end_time=..%2F..%2Fetc',
    ]) {
      it(`trips?${q}`, async () => {
        const res = await app.get(`/v1/partner-apis/mds/berlin/trips?${q}`).set('Authorization', city);
        expect(res.status).to.equal(400);
        expect(res.body.error).to.equal('bad_param');
      });
    }
    for (const zone of ['..', '%2E%2E%2Fetc', 'a%2Fb', '-x', 'x'.repeat(65), 'ber%00lin']) {
      it(`zone ${zone}`, async () => {
        const res = await app.get(`/v1/partner-apis/mds/${zone}/trips?end_time=2026-11-21T08`).set('Authorization', city);
        expect(res.status).to.be.oneOf([400, 404]);
        expect(res.body.error).to.be.oneOf(['bad_param', 'not_found']);
      });
    }
    it('unknown zone: 404', async () => {
      const res = await app.get('/v1/partner-apis/mds/paris/trips?end_time=2026-11-21T08').set('Authorization', city);
      expect(res.status).to.equal(404);
    });
  });

  describe('version negotiation', () => {
    for (const accept of [
      undefined,
      '*/*',
      MDS2,
      'application/vnd.mds+json;version=2.0.1',
      'application/vnd.mds+json',
      'application/json',
      'text/html, application/vnd.mds+json; version="2.0"; q=0.9',
    ]) {
      it(`Accept ${accept ?? '(absent)'} → 2.0`, async () => {
        const r = trip('2026-11-21T08');
        if (accept) r.set('Accept', accept);
        const res = await r;
        expect(res.status).to.equal(200);
        expect(res.headers['content-type']).to.equal(MDS2);
      });
    }
    for (const accept of [
      'application/vnd.mds+json;version=1.2',
      'application/vnd.mds+json;version=3.0',
      'text/html',
      'application/vnd.mds+json;version=2.0;q=0',
    ]) {
      it(`Accept ${accept} → 406 listing the supported version`, async () => {
        const res = await trip('2026-11-21T08').set('Accept', accept);
        expect(res.status).to.equal(406);
        expect(res.body.error_details).to.deep.equal([MDS2]);
      });
    }
  });

  describe('conditional requests, encodings, HEAD', () => {
    it('If-None-Match with the ETag → 304 without a body', async () => {
      const first = await trip('2026-11-21T08');
      const res = await trip('2026-11-21T08').set('If-None-Match', first.headers.etag);
      expect(res.status).to.equal(304);
      expect(res.text ?? '').to.equal('');
      expect(res.headers.etag).to.equal(first.headers.etag);
      expect((await trip('2026-11-21T08').set('If-None-Match', '"other"')).status).to.equal(200);
    });

    it('If-Modified-Since at or after Last-Modified → 304; before → 200', async () => {
      const first = await trip('2026-11-21T08');
      const lm = Date.parse(first.headers['last-modified']);
      expect((await trip('2026-11-21T08').set('If-Modified-Since', new Date(lm).toUTCString())).status).to.equal(304);
      expect((await trip('2026-11-21T08').set('If-Modified-Since', new Date(lm - 5000).toUTCString())).status).to.equal(200);
      // If-None-Match wins over If-Modified-Since
      expect((await trip('2026-11-21T08').set('If-None-Match', '"x"').set('If-Modified-Since', new Date(lm).toUTCString())).status).to.equal(200);
    });

    it('gzip clients get the stored bytes unchanged, with Content-Length', async () => {
      // superagent always gunzips; read the wire with node:http instead
      const server = buildApp(t.ctx).listen(0, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { port } = server.address() as AddressInfo;
        const res = await new Promise<IncomingMessage>((resolve, reject) =>
          get(
            {
              port,
              host: '127.0.0.1',
              path: '/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T08',
              headers: { Authorization: city, 'Accept-Encoding': 'gzip, deflate' },
            },
            resolve,
          ).on('error', reject),
        );
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        const body = Buffer.concat(chunks);
        expect(res.headers['content-encoding']).to.equal('gzip');
        expect(res.headers.vary).to.match(/Accept-Encoding/i);
        expect(Number(res.headers['content-length'])).to.equal(body.length);
        const stored = await t.ctx.store.get('mds/2.0/berlin/trips/2026-11-21T08.json.gz');
        const storedChunks: Buffer[] = [];
        for await (const c of stored!.body) storedChunks.push(c as Buffer);
        expect(body.equals(Buffer.concat(storedChunks))).to.equal(true);
        expect(JSON.parse(gunzipSync(body).toString())).to.deep.equal(trips);
      } finally {
        server.close();
      }
    });

    for (const ae of ['identity', 'gzip;q=0', 'br']) {
      it(`Accept-Encoding: ${ae} → decoded on the fly, weak ETag`, async () => {
        const res = await raw(trip('2026-11-21T08').set('Accept-Encoding', ae));
        expect(res.status).to.equal(200);
        expect(res.headers['content-encoding']).to.equal(undefined);
        expect(res.headers.etag).to.match(/^W\//);
        expect(JSON.parse((res.body as Buffer).toString())).to.deep.equal(trips);
      });
    }

    it('the weak ETag of the decoded form also revalidates', async () => {
      const first = await trip('2026-11-21T08').set('Accept-Encoding', 'identity');
      expect((await trip('2026-11-21T08').set('Accept-Encoding', 'identity').set('If-None-Match', first.headers.etag)).status).to.equal(304);
    });

    it('HEAD: headers of GET, no body', async () => {
      const res = await app.head('/v1/partner-apis/mds/berlin/trips?end_time=2026-11-21T08').set('Authorization', city).set('Accept-Encoding', 'gzip');
      expect(res.status).to.equal(200);
      expect(res.headers['content-encoding']).to.equal('gzip');
      expect(Number(res.headers['content-length'])).to.be.greaterThan(0);
      expect(res.headers.etag).to.match(/^"/);
      expect(res.text ?? '').to.equal('');
    });
  });

  describe('legacy host files', () => {
    const get = (path: string, accept?: string) => {
      const r = legacy.get(path).set('Authorization', city);
      return accept ? r.set('Accept', accept) : r;
    };

    it('serves 1.2 trips by Accept', async () => {
      const res = await get('/en/berlin/trips?end_time=2026-11-21T08', 'application/vnd.mds+json;version=1.2');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal('application/vnd.mds+json;version=1.2');
      expect(res.body.version).to.equal('1.2.0');
    });

    it('serves 0.4 status changes by Accept', async () => {
      const res = await get('/en/berlin/status_changes?event_time=2026-11-21T08', 'application/vnd.mds.provider+json;version=0.4');
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal('application/vnd.mds.provider+json;version=0.4');
    });

    it('not published yet: 404 whose body says so', async () => {
      const res = await get('/en/berlin/trips?end_time=2026-11-21T09', 'application/vnd.mds+json;version=1.2');
      expect(res.status).to.equal(404);
      expect(res.body.error).to.equal('not_published');
      expect(res.body.error_description).to.match(/not published yet/);
    });

    for (const accept of [undefined, '*/*', 'application/vnd.mds+json;version=2.0', 'application/vnd.mds+json']) {
      it(`requires a legacy version in Accept (${accept ?? 'absent'} → 406 listing both)`, async () => {
        const res = await get('/en/berlin/trips?end_time=2026-11-21T08', accept);
        expect(res.status).to.equal(406);
        expect(res.body.error_details).to.deep.equal(['application/vnd.mds+json;version=1.2', 'application/vnd.mds.provider+json;version=0.4']);
      });
    }

    it('unknown legacy path: 404 in the feed error format', async () => {
      const res = await get('/en/berlin/nothing');
      expect(res.status).to.equal(404);
      expect(res.body.error).to.equal('not_found');
    });
  });
});
