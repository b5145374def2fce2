/**
 * The endpoint table of an API family and the kit that interprets it. A row declares one operation
 * once: method, path, auth, its parameters, body and responses as JSON Schemas (from schemas/…), the
 * error codes it can answer and its handler. From the rows come the Koa routes (mountEndpoints,
 * here), the request checks before the handler runs (parameters against their schemas, the body by
 * the family's reader) and the OpenAPI document (api/openapi/endpoints.ts). A family supplies only
 * what is its own: the middleware of each auth kind, how its errors look, how its body is read; the
 * kit runs the auth a row declares before its handler, so no handler authenticates for itself.
 */
import type Koa from 'koa';
import type Router from '@koa/router';
import { compile } from '../../lib/core/validate.js';
import type { Idempotency } from './idempotency.js';

export type EndpointMethod = 'get' | 'put' | 'post' | 'patch' | 'delete';
export type JsonSchema = Record<string, unknown>;

export interface ParamSpec<Code extends string = string> {
  description: string;
  /** the value's JSON Schema; an `integer` query value is sent as decimal digits */
  schema: JsonSchema;
  example?: unknown;
  /** query only (path parameters always are) */
  required?: boolean;
  /** the value handed to the handler in lower case (ids compared case-insensitively) */
  lowercase?: boolean;
  /**
   * the family's error code when the value is absent or does not match `schema`; or one code for an
   * empty value and another for a malformed one. Without it the parameter is the handler's to check
   * (the feeds check theirs after authentication, in their gates) and the kit passes it on as sent.
   */
  invalid?: Code | { empty: Code; malformed: Code };
}

export interface BodySpec {
  /** JSON Schema of the body; the kit reads and validates a JSON body, a body of another `mediaType` is its handler's */
  schema?: object;
  /** media type of the body (default application/json) */
  mediaType?: string;
  required: boolean;
  description?: string;
  example?: unknown;
}

export interface HeaderSpec {
  description: string;
  schema?: JsonSchema;
  required?: boolean;
}

export interface ResponseSpec {
  description: string;
  schema?: object;
  /** default application/json */
  mediaType?: string;
  /** instead of schema + mediaType: one schema per media type (a negotiated version each) */
  content?: Record<string, object>;
  headers?: Record<string, HeaderSpec>;
}

/** What a handler is given: the parameters as checked, the body as validated. */
export interface Input<Body> {
  params: Record<string, string>;
  query: Record<string, string | number | undefined>;
  body: Body;
}

export type ErrorTable<Code extends string> = Partial<Record<number, readonly Code[]>>;

export interface Endpoint<App, Code extends string, Auth extends string, Body = unknown> {
  operationId: string;
  method: EndpointMethod;
  /** OpenAPI path template (`/v1/rental/{id}/end`); the Koa route is derived from it */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  deprecated?: boolean;
  auth: Auth;
  params?: Record<string, ParamSpec<Code>>;
  query?: Record<string, ParamSpec<Code>>;
  /** request headers the handler reads (documented; each handler parses its own leniently) */
  headers?: Record<string, ParamSpec<Code>>;
  body?: BodySpec;
  /** the answers that are not errors, by status */
  responses: Record<number, ResponseSpec>;
  /** the error codes the endpoint itself can answer, by status (the kit's own are added by the document) */
  errors: ReadonlyArray<ErrorTable<Code>>;
  /** accepts Idempotency-Key: a retry with the key gets the first answer back (./idempotency.ts) */
  idempotent?: boolean;
  handle: (app: App, ctx: Koa.Context, input: Input<Body>) => Promise<void> | void;
}

/**
 * A row as a table holds it: the rows of one table differ in their body types, and a handler of any
 * body accepts an `Input<never>`, so a table is one array of rows without erasing their types.
 */
export type TableEndpoint<App, Code extends string, Auth extends string> = Endpoint<App, Code, Auth, never>;

/** What the OpenAPI document reads of a row (api/openapi/endpoints.ts): all but the handler, whatever the row's application and body. */
export type EndpointDeclaration<Code extends string, Auth extends string> = Omit<TableEndpoint<never, Code, Auth>, 'handle'>;

export interface FamilyKit<App, Code extends string, Auth extends string> {
  /**
   * The middleware of every auth kind the family's rows may declare, run before a row's checks and
   * handler: the kit, not the handler, enforces what a row declares. Every kind is named, so a row
   * cannot declare an auth it does not get; `null` only for a kind whose request carries no credential
   * for the kit to check (a public row, or the partner's signed URLs: the signature covers the row's
   * own purpose, so its handler verifies it). The middleware leaves what it learnt (the principal,
   * the token's claims) on ctx.state for the handler.
   */
  auth: { readonly [K in Auth]: Koa.Middleware | null };
  /** first in front of every row: renders what its auth, checks and handler throw, in the family's error body */
  render: Koa.Middleware;
  /** the family's error for a parameter that is absent (`missing`) or does not match its schema; its detail names the parameter */
  invalidParam(code: Code | undefined, name: string, where: 'path' | 'query', missing: boolean): Error;
  /** reads the JSON body of `spec` and validates it against `spec.schema` */
  readBody(app: App, ctx: Koa.Context, spec: BodySpec & { schema: object }): Promise<unknown>;
  /**
   * runs a handler under the family's admission control (api/kit/admission.ts), or throws the
   * family's overload error; undefined: handlers run at once. It wraps only the handler: the caller
   * is authenticated and counted against its rate limit first (a request over the limit is a 429,
   * whatever the load), and its parameters and body are checked and read before it takes a slot.
   */
  admit?(work: () => Promise<void>): Promise<void>;
  /** the Idempotency-Key records of the family's `idempotent` rows (./idempotency.ts) */
  idempotency?: Idempotency;
}

/** A JSON body the kit reads and validates (any other, a form or a photo, is its handler's). */
export const isJsonBody = (b: BodySpec | undefined): b is BodySpec & { schema: object } =>
  b?.schema !== undefined && (b.mediaType ?? 'application/json') === 'application/json';

/** `/v1/rental/{id}/end` → `/v1/rental/:id/end` */
export const koaPath = (template: string): string => template.replace(/\{([^}]+)\}/g, ':$1');

/** Decimal digits as an integer; anything else stays a string for the schema to refuse. */
function coerce(raw: string, schema: JsonSchema): string | number {
  return schema.type === 'integer' && /^-?\d{1,15}$/.test(raw) ? Number(raw) : raw;
}

/** Blank, or only NUL: the placeholder a family router may put in an empty path segment (api/partner/router.ts). */
const isEmpty = (raw: string) => raw.replace(/\0/g, '').trim() === '';

/** Every code a row's parameters can answer with. */
export function paramCodes<Code extends string>(e: Pick<Endpoint<unknown, Code, string>, 'params' | 'query'>): Code[] {
  const out: Code[] = [];
  for (const spec of [...Object.values(e.params ?? {}), ...Object.values(e.query ?? {})]) {
    const codes = spec.invalid === undefined ? [] : typeof spec.invalid === 'object' ? [spec.invalid.empty, spec.invalid.malformed] : [spec.invalid];
    for (const c of codes) if (!out.includes(c)) out.push(c);
  }
  return out;
}

type Check = (raw: Record<string, unknown>) => Record<string, string | number | undefined>;

function paramCheck<Code extends string>(
  specs: Record<string, ParamSpec<Code>> | undefined,
  where: 'path' | 'query',
  fail: FamilyKit<unknown, Code, string>['invalidParam'],
): Check {
  const entries = Object.entries(specs ?? {}).map(([name, spec]) => ({
    name,
    spec,
    validate: compile(spec.schema),
    code: (s: string) => (typeof spec.invalid === 'object' ? (isEmpty(s) ? spec.invalid.empty : spec.invalid.malformed) : spec.invalid),
  }));
  return (raw) => {
    const out: Record<string, string | number | undefined> = {};
    for (const { name, spec, validate, code } of entries) {
      const value = raw[name];
      if (spec.invalid === undefined) {
        if (typeof value === 'string') out[name] = value;
        continue;
      }
      if (value === undefined && where === 'query' && !spec.required) continue;
      // a repeated query parameter is not one value
      if (typeof value !== 'string') throw fail(code(''), name, where, value === undefined);
      const typed = coerce(value, spec.schema);
      if (!validate(typed)) throw fail(code(value), name, where, false);
      out[name] = spec.lowercase && typeof typed === 'string' ? typed.toLowerCase() : typed;
    }
    return out;
  };
}

/**
 * Registers every row on `router`: the family's error renderer, the middleware of the row's auth
 * kind, then the checks, then the handler (under the family's admission). A row whose auth kind the
 * kit does not name is refused here, when the routes are built, not at its first request.
 */
export function mountEndpoints<App, Code extends string, Auth extends string>(
  router: Router,
  endpoints: ReadonlyArray<TableEndpoint<App, Code, Auth>>,
  app: App,
  kit: FamilyKit<App, Code, Auth>,
): void {
  const invalidParam: FamilyKit<App, Code, Auth>['invalidParam'] = (code, name, where, missing) => kit.invalidParam(code, name, where, missing);
  for (const e of endpoints) {
    const auth = Object.hasOwn(kit.auth, e.auth) ? kit.auth[e.auth] : undefined;
    if (auth === undefined) throw new Error(`${e.operationId}: the family's kit has no middleware for the auth kind ${String(e.auth)}`);
    const params = paramCheck(e.params, 'path', invalidParam);
    const query = paramCheck(e.query, 'query', invalidParam);
    const body = isJsonBody(e.body) ? e.body : undefined;
    const idempotency = e.idempotent ? kit.idempotency : undefined;
    if (e.idempotent && !idempotency) throw new Error(`${e.operationId}: idempotent, but the family's kit keeps no Idempotency-Key records`);
    const run: Koa.Middleware = async (ctx) => {
      const input = {
        params: params((ctx as unknown as { params: Record<string, unknown> }).params ?? {}) as Record<string, string>,
        query: query(ctx.query),
        // validated against the row's schema, the one description of the row's Body (undefined
        // without a JSON body): the row's handler takes it as its own type
        body: (body ? await kit.readBody(app, ctx, body) : undefined) as never,
      };
      // the key is taken once the request is known to be one (authenticated, checked), before it runs
      if (idempotency && (await idempotency.take(ctx, input.body)) === 'replayed') return;
      if (kit.admit) await kit.admit(async () => e.handle(app, ctx, input));
      else await e.handle(app, ctx, input);
    };
    // through the method helper, so the router's own options (prefix, strict) apply as to any route
    const add = router[e.method].bind(router) as (path: string, ...mw: Koa.Middleware[]) => unknown;
    // the records' middleware outside the renderer: it keeps the answer as the client gets it
    const chain = auth ? [kit.render, auth, run] : [kit.render, run];
    add(koaPath(e.path), ...(idempotency ? [idempotency.middleware, ...chain] : chain));
  }
}
