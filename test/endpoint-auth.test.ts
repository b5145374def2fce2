/**
 * The kit enforces what a row declares: every row of every family's endpoint table that names an
 * auth kind refuses a request without credentials, and one with a credential of another API, with
 * its family's error body. Each row is asked twice: mounted by the kit with its handler replaced by
 * a stub (the refusal must come before the handler: the kit's, not the handler's), and through the
 * real host. The tables are walked whole, so a new row or a new auth kind is covered, or fails here
 * for want of an expectation.
 *
 * And the hosts' root router: which family answers does not depend on the order the families are
 * nested in, and a set of families one of which could answer another's paths is refused.
 */
import { expect } from 'chai';
import Koa from 'koa';
import Router from '@koa/router';
import supertest from 'supertest';
import { buildApp, buildLegacyApp, hostRouter } from '../api/app.js';
import { admissionFor } from '../api/kit/admission.js';
import { mountEndpoints, type Endpoint, type FamilyKit } from '../api/kit/endpoints.js';
import { assertDisjoint, type RouteFamily } from '../api/kit/route-miss.js';
import { PARTNER_ENDPOINTS } from '../api/partner/endpoints.js';
import { partnerKit } from '../api/partner/endpoint.js';
import { partnerRoutes } from '../api/partner/router.js';
import { TOMP_ENDPOINTS } from '../api/tomp/endpoints.js';
import { tompKit } from '../api/tomp/endpoint.js';
import { TOMP_PREFIX, tompRoutes } from '../api/tomp/router.js';
import { FEED_ENDPOINTS } from '../api/feeds/endpoints.js';
import { feedKit } from '../api/feeds/endpoint.js';
import { feedRoutes } from '../api/feeds/router.js';
import { buildFeedDeps } from '../api/feeds/auth.js';
import { LEGACY_ENDPOINTS } from '../api/legacy/endpoints.js';
import { useTestContext } from './support/context.js';
import { insertPartner } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

/** A UUID v4 for every path parameter without an example: the refusal must not depend on it. */
const SOME_ID = '3f0c4e2a-8b1d-4c5e-9f6a-7b8c9d0e1f2a';

type Res = supertest.Response;
type Row = Endpoint<any, string, string, any>;
type Credentials = 'none' | 'other';

interface Keys {
  partner: string;
  tomp: string;
}

/** How a family refuses one auth kind: the headers of a request with another API's credential, and the check of both answers. */
interface Refusal {
  other(keys: Keys): Record<string, string>;
  expect(res: Res, sent: Credentials): void;
}

const jsonApi = (status: number, code: string) => (res: Res) => {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.type).to.equal('application/json');
  expect(res.body.errors?.[0]).to.include({ status: String(status), code });
};
const tomp = (status: number) => (res: Res) => {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body).to.include({ status });
  expect(res.body.title).to.be.a('string');
  expect(res.body.detail).to.be.a('string');
};
const feed = (status: number, error: string) => (res: Res) => {
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(res.body).to.include({ error });
  expect(res.body.error_details).to.be.an('array');
  expect(res.headers['www-authenticate']).to.match(/^Bearer realm="feeds"/);
};
const oauth = (res: Res) => {
  expect(res.status, JSON.stringify(res.body)).to.equal(401);
  expect(res.body).to.deep.equal({ error: 'invalid_client', error_description: 'client authentication failed' });
  expect(res.headers['www-authenticate']).to.match(/^Basic realm="feeds"/);
};

const FEED_TOKEN: Refusal = {
  // an API key is no access token
  other: (k) => ({ Authorization: `Bearer ${k.partner}` }),
  expect: (res) => feed(401, 'invalid_token')(res),
};

/** Every auth kind of every family; a kind missing here fails the walk. */
const REFUSALS: Record<string, Record<string, Refusal>> = {
  partner: {
    apiKey: {
      other: (k) => ({ 'X-Auth-Token': k.tomp }),
      expect: (res, sent) => (sent === 'none' ? jsonApi(401, 'Unauthorized') : jsonApi(403, 'Forbidden'))(res),
    },
    // the signed URL is the credential: the partner's API key does not stand in for it
    signedUrl: { other: (k) => ({ 'X-Auth-Token': k.partner }), expect: (res) => jsonApi(403, 'ErrInvalidURLSignature')(res) },
  },
  tomp: {
    accessToken: { other: (k) => ({ 'X-Access-Token': k.partner }), expect: (res, sent) => tomp(sent === 'none' ? 401 : 403)(res) },
  },
  feeds: {
    feedToken: FEED_TOKEN,
    eitherToken: FEED_TOKEN,
    legacyToken: FEED_TOKEN,
    insurer: {
      other: (k) => ({ 'X-Access-Token': k.partner }),
      expect: (res, sent) => (sent === 'none' ? feed(401, 'invalid_token') : feed(403, 'insufficient_scope'))(res),
    },
    clientCredentials: { other: (k) => ({ Authorization: `Bearer ${k.partner}` }), expect: (res) => oauth(res) },
  },
};

interface Family {
  name: keyof typeof REFUSALS;
  table: string;
  rows: readonly Row[];
  host: 'main' | 'legacy';
  prefix: string;
}

const FAMILIES: Family[] = [
  { name: 'partner', table: 'PARTNER_ENDPOINTS', rows: PARTNER_ENDPOINTS, host: 'main', prefix: '' },
  { name: 'tomp', table: 'TOMP_ENDPOINTS', rows: TOMP_ENDPOINTS, host: 'main', prefix: TOMP_PREFIX },
  { name: 'feeds', table: 'FEED_ENDPOINTS', rows: FEED_ENDPOINTS, host: 'main', prefix: '' },
  { name: 'feeds', table: 'LEGACY_ENDPOINTS', rows: LEGACY_ENDPOINTS, host: 'legacy', prefix: '' },
];

/** The row's path with every parameter filled (its example, else a UUID). */
function urlOf(f: Family, row: Row): string {
  const example = (name: string) => row.params?.[name]?.example;
  return (
    f.prefix +
    row.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(typeof example(name) === 'string' ? (example(name) as string) : SOME_ID))
  );
}

function send(server: ReturnType<Koa['callback']>, f: Family, row: Row, headers: Record<string, string>): supertest.Test {
  let req = (supertest(server) as unknown as Record<string, (url: string) => supertest.Test>)[row.method](urlOf(f, row));
  for (const [k, v] of Object.entries(headers)) req = req.set(k, v);
  // the token endpoint reads its form before the client: a well-formed one, so that only the credentials are missing
  if (row.auth === 'clientCredentials') req = req.type('form').send('grant_type=client_credentials');
  return req.set('Accept', '*/*');
}

describe('the kit enforces every row’s auth kind', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });
  let keys: Keys;
  let hosts: Record<Family['host'], ReturnType<Koa['callback']>>;

  before(async () => {
    keys = { partner: (await insertPartner(t.ctx.db)).key, tomp: (await insertMaasPartner(t.ctx.db)).key };
    hosts = { main: buildApp(t.ctx).callback(), legacy: buildLegacyApp(t.ctx).callback() };
  });

  /** The family's kit over its table, every handler a stub that records being reached. */
  function stubbed(f: Family, reached: string[]): ReturnType<Koa['callback']> {
    const admission = admissionFor(t.ctx.config);
    const deps = buildFeedDeps(t.ctx);
    const [app, kit] = (
      f.name === 'partner' ? [t.ctx, partnerKit(t.ctx, admission)] : f.name === 'tomp' ? [t.ctx, tompKit(t.ctx, admission)] : [deps, feedKit(deps)]
    ) as [unknown, FamilyKit<unknown, string, string>];
    const router = new Router(f.prefix ? { prefix: f.prefix, strict: false } : {});
    const rows = f.rows.map((r) => ({
      ...r,
      handle: (_a: unknown, ctx: Koa.Context) => {
        reached.push(r.operationId);
        ctx.status = 204;
      },
    }));
    mountEndpoints(router, rows, app, kit);
    const koa = new Koa();
    koa.silent = true;
    koa.use(router.routes() as unknown as Koa.Middleware);
    return koa.callback();
  }

  for (const f of FAMILIES) {
    it(`${f.table}: no row with an auth kind is reached without its credential`, async () => {
      const reached: string[] = [];
      const kitOnly = stubbed(f, reached);
      const guarded = f.rows.filter((r) => r.auth !== 'none');
      expect(guarded.length, 'the table has rows with an auth kind').to.be.greaterThan(0);
      const problems: string[] = [];
      for (const row of guarded) {
        const refusal = REFUSALS[f.name]?.[row.auth];
        if (!refusal) {
          problems.push(`${row.operationId}: no expectation for the auth kind ${row.auth} of ${f.name}`);
          continue;
        }
        for (const sent of ['none', 'other'] as const) {
          const headers = sent === 'none' ? {} : refusal.other(keys);
          for (const [where, server] of [
            ['kit', kitOnly],
            ['host', hosts[f.host]],
          ] as const) {
            const res = await send(server, f, row, headers);
            try {
              refusal.expect(res, sent);
            } catch (err) {
              problems.push(`${row.operationId} (${row.auth}, ${where}, credentials: ${sent}): ${(err as Error).message}`);
            }
          }
        }
      }
      expect(reached, 'handlers reached without their credential').to.deep.equal([]);
      expect(problems).to.deep.equal([]);
    });
  }

  it('a row whose auth kind the family’s kit does not name is refused when the routes are built', () => {
    const row = { ...PARTNER_ENDPOINTS[0], auth: 'cookie' } as unknown as Row;
    expect(() => mountEndpoints(new Router(), [row], t.ctx, partnerKit(t.ctx, admissionFor(t.ctx.config)) as FamilyKit<unknown, string, string>)).to.throw(
      /auth kind cookie/,
    );
  });
});

describe('the root router of a host', function () {
  this.timeout(60000);
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });

  /** What each probe must get, whichever family was nested first. */
  const PROBES: Array<{ method: 'get' | 'delete'; path: string; check: (res: Res) => void }> = [
    { method: 'get', path: '/v1/partner-apis/nope', check: (res) => expect([res.status, res.body.error]).to.deep.equal([404, 'not_found']) },
    { method: 'get', path: '/v1/partner-apis', check: (res) => expect([res.status, res.body.error]).to.deep.equal([404, 'not_found']) },
    {
      method: 'delete',
      path: '/v1/partner-apis/token',
      check: (res) => expect([res.status, res.body.error, res.headers.allow]).to.deep.equal([405, 'bad_param', 'POST']),
    },
    { method: 'get', path: '/v1/nope', check: (res) => expect([res.status, res.body.errors?.[0]?.code]).to.deep.equal([404, 'NotFound']) },
    {
      method: 'delete',
      path: '/v1/zone/info',
      check: (res) => expect([res.status, res.body.errors?.[0]?.code, res.headers.allow]).to.deep.equal([405, 'MethodNotAllowed', 'HEAD, GET']),
    },
    { method: 'get', path: `${TOMP_PREFIX}/nope`, check: (res) => expect([res.status, res.body.status]).to.deep.equal([404, 404]) },
    { method: 'get', path: '/gbfs/v2/nope', check: (res) => expect([res.status, res.body.error]).to.deep.equal([404, 'not_found']) },
    { method: 'get', path: '/v1/partner-apis/gbfs/manifest.json', check: (res) => expect([res.status, res.body.error]).to.deep.equal([401, 'invalid_token']) },
    { method: 'get', path: '/v1/zone/info', check: (res) => expect([res.status, res.body.errors?.[0]?.code]).to.deep.equal([401, 'Unauthorized']) },
    { method: 'get', path: '/nowhere', check: (res) => expect(res.status).to.equal(404) },
  ];

  function host(families: RouteFamily[]): ReturnType<Koa['callback']> {
    const koa = new Koa();
    koa.silent = true;
    koa.use(hostRouter(families));
    return koa.callback();
  }

  it('answers every probe the same whichever order the families are nested in', async () => {
    const families = [partnerRoutes(t.ctx), tompRoutes(t.ctx), feedRoutes(t.ctx)];
    const [partner, tompFamily, feeds] = families as [RouteFamily, RouteFamily, RouteFamily];
    for (const order of [families, [...families].reverse(), [feeds, partner, tompFamily]]) {
      const server = host(order);
      for (const p of PROBES) {
        const res = await supertest(server)[p.method](p.path);
        try {
          p.check(res);
        } catch (err) {
          throw new Error(`${order.map((f) => f.name).join(', ')}: ${p.method.toUpperCase()} ${p.path}: ${(err as Error).message}`);
        }
      }
    }
  });

  /** A family of plain routes (GET answers its name). */
  function family(name: string, prefixes: string[], paths: string[], use?: Koa.Middleware): RouteFamily {
    const router = new Router();
    if (use) router.use(use as never);
    for (const p of paths) router.get(p, (ctx) => void (ctx.body = name));
    return { name, routes: router.routes() as unknown as Koa.Middleware, prefixes };
  }

  it('refuses families one of which could answer a path another owns', () => {
    const feeds = family('feeds', ['/v1/partner-apis'], ['/v1/partner-apis/token', '/v1/partner-apis/mds/:zone/trips']);
    const partner = (paths: string[]) => family('partner', ['/v1'], paths);
    expect(() => assertDisjoint([feeds, partner(['/v1/rental/:id', '/v1/zone/info'])])).not.to.throw();
    // a route inside a longer prefix of another family
    expect(() => assertDisjoint([feeds, partner(['/v1/partner-apis/extra'])])).to.throw(/lies outside the paths its family owns/);
    // a parameter that reaches into it
    expect(() => assertDisjoint([feeds, partner(['/v1/:anything'])])).to.throw(/could match paths under \/v1\/partner-apis/);
    // a route outside every prefix of its family
    expect(() => assertDisjoint([feeds, partner(['/v2/zone/id'])])).to.throw(/lies outside/);
    // a router without prefixes whose route lies under one
    expect(() => assertDisjoint([feeds, family('ops', [], ['/v1/partner-apis/health'])])).to.throw(/lies outside/);
    // a middleware on every path of its router
    expect(() => assertDisjoint([feeds, family('ops', [], ['/healthz'], async (_ctx, next) => next())])).to.throw(/middleware/);
    // one prefix, two families
    expect(() => assertDisjoint([feeds, family('more feeds', ['/v1/partner-apis/'], [])])).to.throw(/both claim/);
  });
});
