/**
 * The OpenAPI documents against the code they describe:
 *  - the routes each family really serves (read from its @koa/router routers) and the documented
 *    operations are the same set, both ways (HEAD implied by GET);
 *  - each document is well-formed OpenAPI 3.1 as far as we can check without a meta-schema: $refs
 *    resolve, operations have responses, operationIds are unique, path parameters match the path
 *    templates, security names exist, every schema compiles as JSON Schema 2020-12, and every
 *    example validates against its schema;
 *  - the partner API's documented ErrorCodes are the requirement's table and lib/domain/rentals/errors.ts;
 *  - every documented operation, called without credentials, answers a documented status with a
 *    body that matches the documented schema of that status;
 *  - GET /openapi/*.json and /docs serve them.
 */
import { expect } from 'chai';
import Koa from 'koa';
import Router from '@koa/router';
import request from 'supertest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { useTestContext } from './support/context.js';
import { buildApp, buildLegacyApp } from '../api/app.js';
import { partnerRoutes } from '../api/partner/router.js';
import { tompRoutes } from '../api/tomp/router.js';
import { feedRoutes } from '../api/feeds/router.js';
import { legacyRoutes } from '../api/legacy/router.js';
import { docsRoutes } from '../api/docs/router.js';
import { DOCUMENT_NAMES, openApiDocuments, operationsOf, type OpenApiDocument } from '../api/docs/documents.js';
import type { Operation, Response, Schema } from '../api/openapi/common.js';
import { ERRORS } from '../lib/domain/rentals/errors.js';
import { EXPORT_DIR, exportedFiles } from '../api/docs/export.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppContext } from '../lib/domain/context.js';
import { insertPartner } from './support/partner-fixtures.js';
import { insertMaasPartner } from './support/tomp-fixtures.js';

const addFormats = ((addFormatsImport as any).default ?? addFormatsImport) as typeof import('ajv-formats').default;

interface Layer {
  path: string;
  methods: string[];
  regexp: RegExp;
}
interface RouterLike {
  stack: Layer[];
}

/**
 * The routers a family builds. Every family wraps its router in middleware of its own (error
 * renderer, prefix check), so `.router` is not reachable from outside; instead we record each
 * router whose dispatch middleware is created (router.routes() → router.middleware()) while the
 * family's factory runs. Routers mounted inside another router would appear twice; none is today,
 * and `nested` drops them if that changes.
 */
function routersOf(build: () => unknown): RouterLike[] {
  const proto = Router.prototype as unknown as { middleware: (...a: unknown[]) => unknown; use: (...a: unknown[]) => unknown };
  const seen: RouterLike[] = [];
  const nested = new Set<unknown>();
  const { middleware, use } = proto;
  proto.middleware = function (this: RouterLike, ...a: unknown[]) {
    seen.push(this);
    return middleware.apply(this, a);
  };
  proto.use = function (this: RouterLike, ...a: unknown[]) {
    for (const m of a) if (m && typeof m === 'function' && (m as { router?: unknown }).router) nested.add((m as { router?: unknown }).router);
    return use.apply(this, a);
  };
  try {
    build();
  } finally {
    proto.middleware = middleware;
    proto.use = use;
  }
  return [...new Set(seen)].filter((r) => !nested.has(r));
}

interface Served {
  method: string;
  path: string;
  layer: Layer;
}

function servedRoutes(routers: RouterLike[]): Served[] {
  const out: Served[] = [];
  for (const r of routers) {
    for (const layer of r.stack) {
      const methods = layer.methods.filter((m) => !(m === 'HEAD' && layer.methods.includes('GET')));
      for (const m of methods) out.push({ method: m, path: layer.path, layer });
    }
  }
  return out;
}

/** `{id}` and `:id` alike */
const canon = (p: string) =>
  p
    .replace(/\{[^}]+\}/g, '{}')
    .replace(/:[A-Za-z_$][\w$]*/g, '{}')
    .replace(/\/+$/, '') || '/';
const concrete = (p: string) => p.replace(/\{([^}]+)\}/g, (_, n: string) => `${n}1`);
/** a parameter that is only part of a segment (`/:file.json`): matched by the router's own regexp */
const partialParam = (p: string) => p.split('/').some((seg) => seg.includes(':') && !/^:[A-Za-z_$][\w$]*$/.test(seg));

interface Documented {
  method: string;
  path: string;
}

function compare(served: Served[], documented: Documented[]): { undocumented: string[]; unserved: string[] } {
  const same = (s: Served, d: Documented) =>
    s.method === d.method && (canon(s.path) === canon(d.path) || (partialParam(s.path) && s.layer.regexp.test(concrete(d.path))));
  return {
    undocumented: served.filter((s) => !documented.some((d) => same(s, d))).map((s) => `${s.method} ${s.path}`),
    unserved: documented.filter((d) => !served.some((s) => same(s, d))).map((d) => `${d.method} ${d.path}`),
  };
}

function documentedOps(doc: OpenApiDocument, prefix: string): Documented[] {
  return operationsOf(doc).map(({ method, path }) => ({ method: method.toUpperCase(), path: prefix + path }));
}

// ---------- structure ----------

function resolvePointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = doc;
  for (const raw of ref.slice(2).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(part in node)) return undefined;
    node = node[part];
  }
  return node;
}

function collectRefs(node: unknown, at: string, out: { ref: string; at: string }[]): void {
  if (Array.isArray(node)) node.forEach((n, i) => collectRefs(n, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push({ ref: v, at });
      else collectRefs(v, `${at}/${k}`, out);
    }
  }
}

/** A schema with its #/components refs inlined (our schemas have no cycles; depth-limited anyway). */
function deref(doc: OpenApiDocument, node: unknown, depth = 0): any {
  if (depth > 50) throw new Error('schema nesting too deep (a $ref cycle?)');
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, depth + 1));
  if (!node || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  if (typeof o.$ref === 'string') {
    const { $ref, ...rest } = o;
    const target = deref(doc, resolvePointer(doc, $ref), depth + 1);
    return Object.keys(rest).length ? { allOf: [target], ...deref(doc, rest, depth + 1) } : target;
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, deref(doc, v, depth + 1)]));
}

function resolved(doc: OpenApiDocument, r: unknown): Response | undefined {
  if (r && typeof r === 'object' && '$ref' in r) return resolvePointer(doc, (r as { $ref: string }).$ref) as Response | undefined;
  return r as Response | undefined;
}

function newAjv() {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addKeyword('x-error-codes');
  return ajv;
}

function structureProblems(doc: OpenApiDocument): string[] {
  const problems: string[] = [];
  if (doc.openapi !== '3.1.0') problems.push(`openapi is ${String(doc.openapi)}`);
  if (!doc.info?.title || !doc.info?.version) problems.push('info.title and info.version are required');
  // one server: a client with one base URL reaches every path of the document
  if (doc.servers.length !== 1) problems.push(`${doc.servers.length} servers, not one`);
  for (const s of doc.servers) if (!/^https?:\/\//.test(s.url)) problems.push(`server url not absolute: ${s.url}`);
  for (const [path, item] of Object.entries(doc.paths)) if ('servers' in item) problems.push(`${path}: a path with servers of its own`);

  const refs: { ref: string; at: string }[] = [];
  collectRefs(doc, '#', refs);
  for (const r of refs) if (resolvePointer(doc, r.ref) === undefined) problems.push(`unresolved $ref ${r.ref} at ${r.at}`);

  const schemes = doc.components.securitySchemes ?? {};
  const checkSecurity = (reqs: Record<string, string[]>[] | undefined, where: string) => {
    for (const req of reqs ?? []) for (const name of Object.keys(req)) if (!schemes[name]) problems.push(`${where}: unknown security scheme ${name}`);
  };
  checkSecurity(doc.security, 'root');
  for (const [name, s] of Object.entries(schemes)) {
    const flow = (s as any).flows?.clientCredentials;
    if (s.type === 'oauth2' && !/^https?:\/\//.test(flow?.tokenUrl ?? '')) problems.push(`${name}: clientCredentials.tokenUrl must be an absolute URL`);
  }

  const ids = new Set<string>();
  for (const { method, path, item, op } of operationsOf(doc)) {
    const where = `${method.toUpperCase()} ${path}`;
    if (!path.startsWith('/')) problems.push(`${where}: path must start with /`);
    if (!op.operationId || !/^[A-Za-z][A-Za-z0-9_]*$/.test(op.operationId)) problems.push(`${where}: bad operationId ${op.operationId}`);
    if (ids.has(op.operationId)) problems.push(`${where}: duplicate operationId ${op.operationId}`);
    ids.add(op.operationId);
    const codes = Object.keys(op.responses ?? {});
    if (codes.length === 0) problems.push(`${where}: no responses`);
    for (const c of codes) {
      if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(c)) problems.push(`${where}: bad response code ${c}`);
      const resp = op.responses[c] as Response;
      if (!('$ref' in resp) && !resp.description) problems.push(`${where} ${c}: response without description`);
    }
    checkSecurity(op.security, where);
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])] as { name: string; in: string; required?: boolean }[];
    const keys = params.map((p) => `${p.in}:${p.name}`);
    if (new Set(keys).size !== keys.length) problems.push(`${where}: duplicate parameters`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const t of templated) {
      const p = params.find((x) => x.in === 'path' && x.name === t);
      if (!p) problems.push(`${where}: path parameter {${t}} not declared`);
      else if (p.required !== true) problems.push(`${where}: path parameter ${t} must be required`);
    }
    for (const p of params) if (p.in === 'path' && !templated.includes(p.name)) problems.push(`${where}: path parameter ${p.name} not in the path`);
    if ((method === 'get' || method === 'delete') && op.requestBody) problems.push(`${where}: request body on ${method}`);
  }
  return problems;
}

/** Every schema of the document (components, parameters, bodies, responses, headers) with where it is. */
function schemasOf(doc: OpenApiDocument): { at: string; schema: Schema; examples: unknown[] }[] {
  const out: { at: string; schema: Schema; examples: unknown[] }[] = [];
  for (const [name, s] of Object.entries(doc.components.schemas ?? {})) out.push({ at: `components.schemas.${name}`, schema: s, examples: [] });
  for (const [name, r] of Object.entries(doc.components.responses ?? {})) {
    for (const [type, m] of Object.entries(r.content ?? {}))
      if (m.schema) out.push({ at: `components.responses.${name} ${type}`, schema: m.schema, examples: exampleValues(m) });
  }
  for (const { method, path, op } of operationsOf(doc)) {
    const where = `${method.toUpperCase()} ${path}`;
    for (const p of (op.parameters ?? []) as { name: string; schema: Schema; example?: unknown }[]) {
      out.push({ at: `${where} parameter ${p.name}`, schema: p.schema, examples: p.example === undefined ? [] : [p.example] });
    }
    for (const [type, m] of Object.entries(op.requestBody?.content ?? {})) {
      if (m.schema) out.push({ at: `${where} request ${type}`, schema: m.schema, examples: exampleValues(m) });
    }
    for (const [code, r] of Object.entries(op.responses)) {
      if ('$ref' in r) continue; // checked once in components.responses
      const resp = r;
      for (const [type, m] of Object.entries(resp.content ?? {}))
        if (m.schema) out.push({ at: `${where} ${code} ${type}`, schema: m.schema, examples: exampleValues(m) });
      for (const [h, hd] of Object.entries(resp.headers ?? {}))
        out.push({ at: `${where} ${code} header ${h}`, schema: (hd as { schema: Schema }).schema, examples: [] });
    }
  }
  return out;
}

const exampleValues = (m: { example?: unknown; examples?: Record<string, { value: unknown }> }) => [
  ...(m.example === undefined ? [] : [m.example]),
  ...Object.values(m.examples ?? {}).map((e) => e.value),
];

// ---------- the requirement's partner error table (§7), as (operation, status, code) ----------

const PARTNER_ERROR_TABLE: [string, number, string][] = [
  ['registerUser', 400, 'InvalidRequestBody'],
  ['registerUser', 400, 'ErrEmptyUserExternalID'],
  ['registerUser', 400, 'EmptyUserEmailID'],
  ['registerUser', 400, 'ErrInvalidUserEmailID'],
  ['registerUser', 500, 'ErrUserRegistrationFailed'],
  ['getUser', 400, 'InvalidUserId'],
  ['getUser', 404, 'ErrUserNotFound'],
  ['updateUser', 404, 'ErrUserNotFound'],
  ['updateUser', 400, 'InvalidRequestBody'],
  ['startRental', 400, 'InvalidRequestBody'],
  ['startRental', 400, 'InvalidUserId'],
  ['startRental', 400, 'InvalidVehicleId'],
  ['startRental', 400, 'UserNotFound'],
  ['startRental', 400, 'RentalAlreadyExists'],
  ['startRental', 400, 'VehicleNotFound'],
  ['startRental', 400, 'UserLicenceVerificationRequired'],
  ['startRental', 405, 'UserTooFarFromVehicle'],
  ['startRental', 405, 'ZoneIsSleeping'],
  ['startRental', 405, 'VehicleNotAvailable'],
  ['startRental', 500, 'FailedToUpdateVehicle'],
  ['startRental', 500, 'FailedToUnlockVehicle'],
  ['startRental', 500, 'FailedToStartRental'],
  ['endRental', 400, 'InvalidRentalID'],
  ['endRental', 404, 'RentalIDDoesNotExist'],
  ['endRental', 400, 'RentalAlreadyEnded'],
  ['endRental', 405, 'FailedToEndRentalNoParking'],
  ['endRental', 500, 'FailedToEndRental'],
  ['getActiveRental', 400, 'InvalidInput'],
  ['getActiveRental', 404, 'ActiveRentalNotFound'],
  ['getUserRentals', 400, 'InvalidInput'],
  ['getUserRentals', 400, 'InvalidUserId'],
  ['getUserRentals', 404, 'ErrUserNotFound'],
  ['getVehiclePricing', 400, 'InvalidVehicleId'],
  ['getVehicleByCode', 400, 'BadVehicleCode'],
  ['getVehicleByCode', 404, 'VehicleNotFound'],
  ['getVehicleById', 404, 'VehicleNotFound'],
  ['getVehicleById', 400, 'InvalidVehicleID'],
  ['getZoneAreasV1', 400, 'EmptyZoneID'],
  ['getZoneAreasV2', 400, 'EmptyZoneID'],
];
/** Photo upload codes (statuses not in the requirement; ours are in lib/domain/rentals/errors.ts). */
const PHOTO_CODES = ['InvalidParkingPhoto', 'ValidateParkingPhotoFailed', 'ErrRentalIsNotEnded', 'ParkingPhotoUploadWindowExpired', 'ErrInvalidURLSignature'];
/** Where a route answers a code with another status than the catalogue's default (and says so in the code). */
const STATUS_OVERRIDES = new Set(['VehicleNotFound@404', 'InvalidParkingPhoto@413', 'InvalidParkingPhoto@415']);

function documentedCodes(doc: OpenApiDocument, op: Operation): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const [code, r] of Object.entries(op.responses)) {
    const schema = resolved(doc, r)?.content?.['application/json']?.schema as { 'x-error-codes'?: string[] } | undefined;
    if (schema?.['x-error-codes']) out.set(Number(code), schema['x-error-codes']);
  }
  return out;
}

describe('OpenAPI documents', function () {
  this.timeout(60000);
  const t = useTestContext();
  let docs: ReturnType<typeof openApiDocuments>;

  before(() => {
    docs = openApiDocuments(t.ctx.config);
  });

  describe('served routes and documented operations are the same set', () => {
    const families: { name: string; build: (c: AppContext) => unknown; doc: DocumentNameKey; prefix: string }[] = [
      { name: 'partner (api/partner)', build: partnerRoutes, doc: 'partner', prefix: '' },
      { name: 'TOMP (api/tomp)', build: tompRoutes, doc: 'tomp', prefix: '/edge/tomp' },
      { name: 'feeds, main host (api/feeds)', build: feedRoutes, doc: 'feeds', prefix: '' },
      { name: 'feeds, legacy host (api/legacy)', build: legacyRoutes, doc: 'legacy', prefix: '' },
    ];
    for (const f of families) {
      it(f.name, () => {
        const routers = routersOf(() => f.build(t.ctx));
        const served = servedRoutes(routers);
        expect(served.length, 'no routes found: did the family stop using @koa/router?').to.be.greaterThan(0);
        const diff = compare(served, documentedOps(docs[f.doc], f.prefix));
        expect(
          diff,
          `served but not documented:\n  ${diff.undocumented.join('\n  ') || '-'}\ndocumented but not served:\n  ${diff.unserved.join('\n  ') || '-'}\n`,
        ).to.deep.equal({
          undocumented: [],
          unserved: [],
        });
      });
    }

    it('the comparison itself catches both directions', () => {
      const router = new Router();
      router.get('/a/:id', () => undefined);
      router.get('/f/:file.json', () => undefined);
      const served = servedRoutes(routersOf(() => router.routes()));
      expect(
        compare(served, [
          { method: 'GET', path: '/a/{x}' },
          { method: 'GET', path: '/f/one.json' },
        ]),
      ).to.deep.equal({ undocumented: [], unserved: [] });
      expect(
        compare(served, [
          { method: 'GET', path: '/a/{x}' },
          { method: 'POST', path: '/b' },
        ]),
      ).to.deep.equal({ undocumented: ['GET /f/:file.json'], unserved: ['POST /b'] });
    });
  });

  for (const name of DOCUMENT_NAMES) {
    describe(`${name}.json`, () => {
      it('is well-formed OpenAPI 3.1', () => {
        expect(structureProblems(docs[name])).to.deep.equal([]);
      });

      it('has schemas that compile as JSON Schema 2020-12 and examples that validate against them', () => {
        const ajv = newAjv();
        const problems: string[] = [];
        for (const { at, schema, examples } of schemasOf(docs[name])) {
          let validate;
          try {
            validate = ajv.compile(deref(docs[name], schema));
          } catch (err) {
            problems.push(`${at}: ${(err as Error).message}`);
            continue;
          }
          for (const ex of examples)
            if (!validate(ex)) problems.push(`${at}: example ${JSON.stringify(ex).slice(0, 120)} → ${ajv.errorsText(validate.errors)}`);
        }
        expect(problems).to.deep.equal([]);
      });
    });
  }

  describe('partner API errors', () => {
    const opById = (id: string) => operationsOf(docs.partner).find((o) => o.op.operationId === id)!.op;

    it('documents every row of the requirement’s error table with its status', () => {
      const missing = PARTNER_ERROR_TABLE.filter(([id, status, code]) => !(documentedCodes(docs.partner, opById(id)).get(status) ?? []).includes(code));
      expect(missing).to.deep.equal([]);
      const photo = [...documentedCodes(docs.partner, opById('uploadParkingPhoto')).values()].flat();
      expect(PHOTO_CODES.filter((c) => !photo.includes(c))).to.deep.equal([]);
    });

    it('lists only codes of lib/domain/rentals/errors.ts, under their status', () => {
      const wrong: string[] = [];
      for (const { op } of operationsOf(docs.partner)) {
        for (const [status, codes] of documentedCodes(docs.partner, op)) {
          for (const code of codes) {
            const def = (ERRORS as Record<string, { status: number }>)[code];
            if (!def) wrong.push(`${op.operationId}: unknown code ${code}`);
            else if (def.status !== status && !STATUS_OVERRIDES.has(`${code}@${status}`))
              wrong.push(`${op.operationId}: ${code} documented ${status}, code says ${def.status}`);
          }
        }
      }
      expect(wrong).to.deep.equal([]);
    });

    it('documents 401, 403, 429 with Retry-After on every API-key endpoint and 413 on every JSON body', () => {
      for (const { op } of operationsOf(docs.partner)) {
        if (op.security?.length) {
          expect(op.responses, op.operationId).to.include.keys('401', '403', '429');
          expect(resolved(docs.partner, op.responses['429'])!.headers, op.operationId).to.have.property('Retry-After');
        }
        if (op.requestBody?.content['application/json']) expect(op.responses, op.operationId).to.include.keys('413');
      }
      expect(docs.partner.components.securitySchemes).to.deep.include({
        XAuthToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token', description: 'the partner API key (valid 3 years)' },
      });
      expect(docs.partner.components.securitySchemes!.BearerToken).to.include({ type: 'http', scheme: 'bearer' });
    });
  });

  it('TOMP: server under /edge/tomp, X-Access-Token, booking headers', () => {
    expect(docs.tomp.servers[0].url).to.equal(`${t.ctx.config.publicBaseUrl}/edge/tomp`);
    expect(docs.tomp.components.securitySchemes!.XAccessToken).to.include({ type: 'apiKey', in: 'header', name: 'X-Access-Token' });
    const created = docs.tomp.paths['/bookings/one-stop'].post!.responses['201'] as Response;
    expect(created.headers).to.include.keys('Content-Language', 'Expires');
    expect(docs.tomp.components.schemas!.TompError).to.deep.include({ required: ['status', 'detail'] });
  });

  it('feeds: one document per host, OAuth2 client credentials on both, versioned media types', () => {
    const s = docs.feeds.components.securitySchemes as any;
    expect(s.FeedOAuth.flows.clientCredentials.tokenUrl).to.equal(`${t.ctx.config.publicBaseUrl}/v1/partner-apis/token`);
    // GBFS 2.2 is on the main host and takes the legacy host's tokens too
    expect(s.LegacyOAuth.flows.clientCredentials.tokenUrl).to.equal(`${t.ctx.config.publicLegacyUrl}/token`);
    expect(docs.feeds.paths['/gbfs/v2/{language}/{file}.json'].get!.security).to.deep.equal([{ LegacyOAuth: [] }, { FeedOAuth: [] }, { FeedKey: [] }]);
    // a feed client's API key on every feed operation of both hosts (the token endpoints and the public metadata aside)
    expect(s.FeedKey).to.include({ type: 'apiKey', in: 'header', name: 'X-Access-Token' });
    expect((docs.legacy.components.securitySchemes as any).FeedKey).to.include({ type: 'apiKey', in: 'header', name: 'X-Access-Token' });
    for (const doc of [docs.feeds, docs.legacy])
      for (const [path, item] of Object.entries(doc.paths))
        for (const op of Object.values(item) as Array<{ security?: Array<Record<string, unknown>>; operationId?: string }>) {
          const names = (op.security ?? []).flatMap((r) => Object.keys(r));
          if (/token|well-known/.test(path)) continue;
          expect(names, `${op.operationId} ${path}`).to.satisfy((n: string[]) => n.includes('FeedKey') || n.includes('InsurerKey'));
        }
    expect(docs.feeds.servers.map((x) => x.url)).to.deep.equal([t.ctx.config.publicBaseUrl]);
    expect(docs.legacy.servers.map((x) => x.url)).to.deep.equal([t.ctx.config.publicLegacyUrl]);
    expect((docs.legacy.components.securitySchemes as any).LegacyOAuth.flows.clientCredentials.tokenUrl).to.equal(`${t.ctx.config.publicLegacyUrl}/token`);
    for (const p of ['/token', '/en/{zoneID}/trips', '/en/{zoneID}/status_changes', '/en/{zoneID}/events', '/en/{zoneID}/vehicles']) {
      expect(docs.legacy.paths, p).to.have.property(p);
      expect(docs.feeds.paths, p).not.to.have.property(p);
    }
    const trips = docs.feeds.paths['/v1/partner-apis/mds/{zoneID}/trips'].get!.responses;
    expect(trips).to.include.keys('200', '202', '304', '400', '401', '403', '404', '406');
    expect((trips['200'] as Response).content).to.have.key('application/vnd.mds+json;version=2.0');
    expect((docs.legacy.paths['/en/{zoneID}/trips'].get!.responses['200'] as Response).content).to.have.keys(
      'application/vnd.mds+json;version=1.2',
      'application/vnd.mds.provider+json;version=0.4',
    );
    expect((docs.feeds.paths['/v1/partner-apis/insurance/{zoneID}/trips'].get!.responses['200'] as Response).content).to.have.key(
      'application/vnd.insurance+json;version=2.0',
    );
  });

  describe('every API-key operation, called with a valid key (its own API’s, then another’s), answers with the documented headers', () => {
    // what the gate adds to every answer once it knows the key (api/openapi/rate-limit.ts), and the
    // other headers a document declares required; an answer carrying a rate-limit or Retry-After
    // header the document does not declare for its status fails too. A key of the other API gets
    // the gate's documented 403, without rate-limit headers.
    const header = { partner: 'X-Auth-Token', tomp: 'X-Access-Token' } as const;
    for (const name of ['partner', 'tomp'] as const) {
      it(name, async () => {
        const doc = docs[name];
        const app = buildApp(t.ctx).callback();
        const own = name === 'partner' ? (await insertPartner(t.ctx.db)).key : (await insertMaasPartner(t.ctx.db)).key;
        const other = name === 'partner' ? (await insertMaasPartner(t.ctx.db)).key : (await insertPartner(t.ctx.db)).key;
        const problems: string[] = [];
        const calls = operationsOf(doc)
          .filter(({ op }) => op.security?.length)
          .flatMap((o) => [
            { ...o, key: own, status: undefined },
            { ...o, key: other, status: 403 },
          ]);
        for (const { method, path, op, key, status } of calls) {
          const url = (name === 'tomp' ? '/edge/tomp' : '') + concrete(path).replace(/\{|\}/g, '');
          const res = await (request(app) as any)[method](url).set(header[name], key).set('Accept', '*/*');
          const where = `${method.toUpperCase()} ${url} ${res.status}`;
          if (status && res.status !== status) problems.push(`${where}: a key of another API, not ${status}`);
          const documented = resolved(doc, op.responses[String(res.status)]);
          if (!documented) {
            problems.push(`${where}: status not documented (${JSON.stringify(res.body).slice(0, 120)})`);
            continue;
          }
          const declared = Object.entries(documented.headers ?? {}).map(([h, d]) => ({
            h: h.toLowerCase(),
            required: Boolean((d as { required?: boolean }).required),
          }));
          for (const d of declared) if (d.required && res.headers[d.h] === undefined) problems.push(`${where}: documented header ${d.h} missing`);
          for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'retry-after']) {
            if (res.headers[h] !== undefined && !declared.some((d) => d.h === h)) problems.push(`${where}: ${h} sent but not documented`);
          }
        }
        expect(problems).to.deep.equal([]);
      });
    }
  });

  describe('every documented operation, called without credentials, answers as documented', () => {
    for (const name of DOCUMENT_NAMES) {
      it(name, async () => {
        const doc = docs[name];
        const main = buildApp(t.ctx).callback();
        const legacy = buildLegacyApp(t.ctx).callback();
        const ajv = newAjv();
        const problems: string[] = [];
        const prefix = name === 'tomp' ? '/edge/tomp' : '';
        for (const { method, path, op } of operationsOf(doc)) {
          const url = prefix + concrete(path).replace(/\{|\}/g, '');
          const server = name === 'legacy' ? legacy : main;
          const res = await (request(server) as any)[method](url).set('Accept', '*/*');
          // without credentials every route answers before looking anything up: a 404/405 means the request never reached it
          if (res.status === 404 || res.status === 405) {
            problems.push(`${method.toUpperCase()} ${url}: ${res.status}, the documented route is not reached (${JSON.stringify(res.body).slice(0, 160)})`);
            continue;
          }
          const documented = resolved(doc, op.responses[String(res.status)] ?? op.responses.default);
          if (!documented) {
            problems.push(`${method.toUpperCase()} ${url}: ${res.status} is not documented (${JSON.stringify(res.body).slice(0, 160)})`);
            continue;
          }
          const schema = documented.content?.['application/json']?.schema;
          if (schema && res.status >= 400) {
            const validate = ajv.compile(deref(doc, schema));
            if (!validate(res.body))
              problems.push(
                `${method.toUpperCase()} ${url} ${res.status}: body ${JSON.stringify(res.body).slice(0, 160)} → ${ajv.errorsText(validate.errors)}`,
              );
          }
        }
        expect(problems).to.deep.equal([]);
      });
    }
  });

  it('docs/openapi/*.json (the committed export) is up to date', () => {
    const stale = Object.entries(exportedFiles()).filter(
      ([name, content]) => !existsSync(join(EXPORT_DIR, name)) || readFileSync(join(EXPORT_DIR, name), 'utf8') !== content,
    );
    expect(
      stale.map(([n]) => n),
      'stale export: run `node --import tsx bin/export-openapi.ts`',
    ).to.deep.equal([]);
  });

  describe('GET /openapi/*.json and /docs', () => {
    let app: Koa;
    before(() => {
      app = new Koa();
      app.use(docsRoutes(t.ctx));
    });

    for (const name of DOCUMENT_NAMES) {
      it(`/openapi/${name}.json`, async () => {
        const res = await request(app.callback())
          .get(`/openapi/${name}.json`)
          .expect(200)
          .expect('Content-Type', /application\/json/);
        expect(res.body).to.deep.equal(JSON.parse(JSON.stringify(docs[name])));
      });
    }

    it('an unknown document is 404', async () => {
      await request(app.callback()).get('/openapi/nope.json').expect(404);
    });

    it('/docs links the bundled Swagger UI and every document, no outside address', async () => {
      const res = await request(app.callback())
        .get('/docs')
        .expect(200)
        .expect('Content-Type', /text\/html/);
      expect(res.headers['content-security-policy']).to.match(/script-src 'self'/);
      for (const a of ['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui-standalone-preset.js', '/docs/init.js']) {
        expect(res.text).to.include(a);
        await request(app.callback()).get(a).expect(200);
      }
      for (const n of DOCUMENT_NAMES) expect(res.text).to.include(`/openapi/${n}.json`);
      expect(res.text).not.to.match(/https?:\/\//);
      const init = await request(app.callback())
        .get('/docs/init.js')
        .expect('Content-Type', /javascript/);
      expect(init.text).to.include('validatorUrl: null');
    });

    it('serves only the listed assets', async () => {
      await request(app.callback()).get('/docs/assets/package.json').expect(404);
      await request(app.callback()).get('/docs/assets/..%2Fpackage.json').expect(404);
      await request(app.callback())
        .get('/docs/assets/swagger-ui.css')
        .expect(200)
        .expect('Content-Type', /text\/css/);
    });
  });
});

type DocumentNameKey = (typeof DOCUMENT_NAMES)[number];
