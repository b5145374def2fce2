/**
 * Idempotency-Key on the writes a client may have to retry without knowing whether the first
 * attempt took effect (issue 39; draft-ietf-httpapi-idempotency-key-header, as Stripe and Dott's
 * MaaS API do it). A row of an endpoint table opts in (`idempotent: true`, api/kit/endpoints.ts) and
 * the family supplies its errors and the client's scope; the rules are decided here, once:
 *
 * - Without the header nothing changes. The key is the draft's structured-field string (`"…"`) or,
 *   as most clients send it, the bare value: 1–255 visible ASCII characters.
 * - A request takes the key after it is authenticated and its parameters and body are checked (an
 *   invalid request is not an attempt: its retry is checked again), before its handler runs.
 * - Its answer is recorded for 24 hours under (client scope, key), with the request's fingerprint:
 *   the method, path, query and the body's JSON in a canonical form (keys sorted, so a client that
 *   serialises its object again sends the same request). A retry with the same key and the same
 *   request gets that answer back: same status, same body, the headers that describe it, and
 *   `Idempotent-Replayed: true`.
 * - The same key with another request is 422; while the first is still running, 409 with
 *   Retry-After (the draft's rule: the retry does not wait, nor execute).
 * - Answers a retry must not get back are not recorded and the key is given back: 5xx (nothing took
 *   effect: the engine rolls a failed start or end back) and 429 (nothing was attempted). 4xx answers
 *   are the request's own outcome and are recorded.
 * - The race between two requests with one key is decided by Postgres (IdempotencyTake: INSERT … ON
 *   CONFLICT); only the request that holds the key records or releases it (its `owner`). A process
 *   that dies while it holds one leaves it running until its lease ends (LEASE_MARGIN_MS beyond the
 *   longest a handler can take: two vehicle commands); a retry then takes it and executes. That
 *   retry can find the first attempt's effect done and answer as a retry without a key would (the
 *   one window: a process that dies between a write's commit and the record of its answer).
 * - The records are in Postgres, written before the answer leaves: they survive a failover to the
 *   synchronous standby as the writes do. A record that cannot be written (the database went away
 *   after the write) does not change the answer: it is written again in the background while the
 *   key's lease lasts (a retry meanwhile gets the 409), so a failover does not lose it.
 */
import { createHash, randomUUID } from 'node:crypto';
import type Koa from 'koa';
import stringify from 'safe-stable-stringify';
import type { Clock } from '../../lib/core/clock.js';
import type { Db } from '../../lib/core/db.js';
import type { Logger } from '../../lib/core/log.js';
import { sql } from '../../lib/core/sql/typed.js';
import { requestLogOf } from './request-log.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_KEY_LENGTH = 255;
/** How long an answer is kept for a retry (the draft's suggestion, Stripe's figure). */
export const KEEP_HOURS = 24;
/** Beyond the longest a handler can run (a command and its compensation, each up to GATEWAY_TIMEOUT_MS): a live request's key is never taken from it. */
const LEASE_MARGIN_MS = 30_000;
/** How often a record or release the database refused is tried again (Idempotency.persist). */
const PERSIST_RETRY_MS = 500;
/** What a 409 asks the client to wait: the first attempt is typically done by then. */
export const IN_USE_RETRY_AFTER_SECONDS = 1;
/** The answer's own headers, replayed with it; the rest (rate limit, request id, date) belong to the retry. */
const RECORDED_HEADERS = ['content-type', 'content-language', 'location', 'cache-control', 'etag', 'last-modified', 'allow', 'link'];
/** The key a request holds, by request (nothing on ctx.state for a handler to touch). */
const held = new WeakMap<Koa.Context, Held>();

/** The family's side: whose key it is, and its errors. */
export interface IdempotencyFamily {
  /** the client the key belongs to (keys of two clients never collide) */
  scopeOf(ctx: Koa.Context): string;
  /** 400: the header is not a key */
  invalid(detail: string): Error;
  /** 409: the first request with this key is still running */
  inUse(): Error;
  /** 422: the key was used for another request */
  reused(): Error;
}

interface Held {
  scope: string;
  key: string;
  owner: string;
  /** Date.now() past which the lease may be another request's: the record is not tried after it */
  leaseEndsAt: number;
}

/**
 * The key of the request: undefined without the header; the family's 400 when it is not one
 * (empty, too long, not visible ASCII, or a malformed structured-field string).
 */
function keyOf(ctx: Koa.Context, family: IdempotencyFamily): string | undefined {
  const raw = ctx.get(IDEMPOTENCY_KEY_HEADER);
  if (ctx.req.headers['idempotency-key'] === undefined) return undefined;
  const value = raw.trim();
  let key = value;
  if (value.startsWith('"')) {
    // RFC 8941 §3.3.3: a string is "…" with \" and \\ as its only escapes
    const m = /^"((?:[^"\\]|\\["\\])*)"$/.exec(value);
    if (!m) throw family.invalid(`${IDEMPOTENCY_KEY_HEADER} is not a structured-field string ("…")`);
    key = m[1].replace(/\\(["\\])/g, '$1');
  }
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key)) {
    throw family.invalid(`${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters`);
  }
  return key;
}

export class Idempotency {
  private readonly leaseMs: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly family: IdempotencyFamily,
    opts: { gatewayTimeoutMs: number },
  ) {
    this.leaseMs = LEASE_MARGIN_MS + 2 * opts.gatewayTimeoutMs;
  }

  /**
   * Outermost middleware of an idempotent row (before the family's renderer, so that it sees the
   * answer as the client gets it, errors rendered): records the answer of a request that took its
   * key, or gives the key back.
   */
  readonly middleware: Koa.Middleware = async (ctx, next) => {
    let done = false;
    try {
      await next();
      done = true;
    } finally {
      const mine = held.get(ctx);
      if (mine) await (done && recordable(ctx.status) ? this.record(ctx, mine) : this.release(ctx, mine));
    }
  };

  /**
   * Takes the request's key before its handler runs. 'run': the handler runs (no key, or the key is
   * now this request's); 'replayed': the first answer is on ctx and the handler must not run.
   * Throws the family's 422 or 409.
   */
  async take(ctx: Koa.Context, body: unknown): Promise<'run' | 'replayed'> {
    const key = keyOf(ctx, this.family);
    if (key === undefined) return 'run';
    const scope = this.family.scopeOf(ctx);
    const fingerprint = createHash('sha256')
      // a trailing slash is the same resource (TOMP spells /support/)
      .update(`${ctx.method} ${ctx.path.replace(/\/+$/, '')}?${ctx.querystring}\n${body === undefined ? '' : (stringify(body) ?? '')}`)
      .digest();
    // a record given back between the two statements is taken on the next round
    for (let round = 0; round < 3; round++) {
      const now = this.clock.now();
      const owner = randomUUID();
      const taken = await this.db.maybeOne(sql('IdempotencyTake'), [
        scope,
        key,
        fingerprint,
        owner,
        now,
        new Date(now.getTime() + this.leaseMs),
        new Date(now.getTime() + KEEP_HOURS * 3_600_000),
      ]);
      if (taken) {
        held.set(ctx, { scope, key, owner, leaseEndsAt: Date.now() + this.leaseMs });
        return 'run';
      }
      const record = await this.db.maybeOne(sql('IdempotencyGet'), [scope, key]);
      if (!record) continue;
      if (!record.fingerprint.equals(fingerprint)) throw this.family.reused();
      if (record.state !== 'done' || record.status === null || record.body === null) throw this.family.inUse();
      ctx.status = record.status;
      for (const [name, value] of Object.entries((record.headers ?? {}) as Record<string, string>)) ctx.set(name, value);
      ctx.set(REPLAYED_HEADER, 'true');
      ctx.body = record.body.length ? record.body : null;
      return 'replayed';
    }
    throw this.family.inUse();
  }

  private async record(ctx: Koa.Context, held: Held): Promise<void> {
    const body = bodyBytes(ctx.body);
    if (body === undefined) return this.release(ctx, held);
    const headers: Record<string, string> = {};
    for (const name of RECORDED_HEADERS) {
      const value = ctx.response.get(name);
      if (value) headers[name] = String(value);
    }
    await this.persist(ctx, held, 'the answer of an idempotent request', () =>
      this.db.maybeOne(sql('IdempotencyRecord'), [held.scope, held.key, held.owner, ctx.status, headers, body]),
    );
  }

  private release(ctx: Koa.Context, held: Held): Promise<void> {
    return this.persist(ctx, held, 'the key of an idempotent request', () => this.db.query(sql('IdempotencyRelease'), [held.scope, held.key, held.owner]));
  }

  /**
   * Writes a record or a release once before the answer leaves; when the database is away (a
   * failover between the write's commit and this statement: test/faults-failover.test.ts saw it),
   * the answer leaves anyway and the statement is tried again in the background, every
   * PERSIST_RETRY_MS while the key's lease lasts. Meanwhile a retry of the key gets the 409 with
   * Retry-After, and once the new primary takes the record it gets the first answer: the client
   * that was told "started" is never told "already exists" for its own start. Only the death of
   * this process in that window leaves the key to its lease (the module comment's one window).
   */
  private async persist(ctx: Koa.Context, held: Held, what: string, write: () => Promise<unknown>): Promise<void> {
    const log = requestLogOf(ctx) ?? this.log;
    try {
      await write();
      return;
    } catch (err) {
      log.warn({ err: (err as Error).message }, `${what} could not be written; tried again while its lease lasts`);
    }
    void (async () => {
      while (Date.now() + PERSIST_RETRY_MS < held.leaseEndsAt) {
        await new Promise((r) => setTimeout(r, PERSIST_RETRY_MS).unref());
        try {
          await write();
          this.log.info({ key: held.key }, `${what} written on a later try`);
          return;
        } catch {
          // the database is still away: the next try
        }
      }
      this.log.warn({ key: held.key }, `${what} could not be written within its lease; the key is taken again after it`);
    })();
  }
}

/** 2xx–4xx answers are the request's outcome; a 429 was never attempted; a 5xx took no effect. */
const recordable = (status: number) => status < 500 && status !== 429;

/** The body as the client gets it: Koa writes an object as JSON.stringify does. A stream is not kept. */
function bodyBytes(body: unknown): Buffer | undefined {
  if (body === null || body === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body);
  if (typeof (body as { pipe?: unknown }).pipe === 'function') return undefined;
  return Buffer.from(JSON.stringify(body));
}
