/**
 * Who is asking, and may they read this: a feed client's credential — a bearer token (signature and
 * expiry checked locally, then the in-process set of client standings: revoked or unknown clients →
 * 401) or one of its API keys in X-Access-Token (the in-process set of usable keys,
 * lib/feeds/keys.ts) — then the role rules from lib/feeds/roles.ts and the zone scope. Both
 * credentials give the same principal (client, role, zones), so every route of every feed host takes
 * either. Order of answers: 401 no/bad/expired credential, 403 feed outside the role, 400 malformed
 * zone id, 404 unknown zone, 403 zone outside the client's scope.
 */
import { bearerOf } from '../kit/api-key-gate.js';
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { RevokedClients } from '../../lib/feeds/clients.js';
import { FeedKeys } from '../../lib/feeds/keys.js';
import type { Role } from '../../lib/feeds/roles.js';
import { FeedTokenVerifier } from './access-tokens.js';
import { canRead, inScope, type FeedAccess } from '../../lib/feeds/roles.js';
import { ZoneDirectory, type ZoneInfo } from './zones.js';
import { GbfsSnapshotIndex, PublicationIndex } from './publications.js';
import { ObjectCache } from '../kit/object-cache.js';
import { ApiKeyVerifier } from '../../lib/domain/credentials/api-keys.js';
import { TokenGuard } from './token-guard.js';
import { EventPagePositions } from './paging.js';
import { badParam, forbidden, notFound, unauthorized } from './errors.js';
import { zoneParam } from './params.js';
import { feedSignerOf, type FeedSigner } from './signatures.js';

/**
 * What the feed routes of one host share; built once per app. The caches live here, so each app
 * (and each process) has its own: tokens until their exp, publication and GBFS snapshot rows for ≤ 2 s, hot file
 * bodies up to FEED_CACHE_BYTES (see docs/feeds-access.md "Performance").
 */
export interface FeedDeps {
  app: AppContext;
  revoked: RevokedClients;
  /** the feed clients' API keys (X-Access-Token on every feed route) */
  keys: FeedKeys;
  zones: ZoneDirectory;
  tokens: FeedTokenVerifier;
  publications: PublicationIndex;
  /** the insurers' API keys (X-Access-Token of the insurance trips) */
  insurerKeys: ApiKeyVerifier;
  gbfs: GbfsSnapshotIndex;
  files: ObjectCache | undefined;
  /** where page[number] pages of event windows start (api/feeds/paging.ts) */
  pagePositions: EventPagePositions;
  /** failure throttle and hash gate of the token endpoints, one per process (main + legacy host) */
  tokenGuard: TokenGuard;
  /** signs every answer of the feed hosts (./signatures.ts), one key ring per process */
  signer: FeedSigner;
}

export function buildFeedDeps(app: AppContext): FeedDeps {
  return {
    app,
    revoked: new RevokedClients(app.db, app.clock, { refreshMs: app.config.feedCredentialRefreshMs }),
    keys: new FeedKeys(app.db, app.clock, { refreshMs: app.config.feedCredentialRefreshMs }),
    zones: new ZoneDirectory(app.db),
    tokens: new FeedTokenVerifier(app.config, app.clock),
    publications: new PublicationIndex(app.db, app.clock),
    insurerKeys: new ApiKeyVerifier(app.db, app.clock),
    gbfs: new GbfsSnapshotIndex(app.db, app.clock),
    files: fileCache(app),
    pagePositions: new EventPagePositions(),
    tokenGuard: tokenGuardOf(app),
    signer: feedSignerOf(app),
  };
}

const tokenGuards = new WeakMap<object, TokenGuard>();
function tokenGuardOf(app: AppContext): TokenGuard {
  let g = tokenGuards.get(app.config);
  if (!g) {
    g = new TokenGuard(app.clock, { ...app.config.tokenAuth, queue: app.config.admission });
    tokenGuards.set(app.config, g);
  }
  return g;
}

// One body cache per store, shared by the main and the legacy host of a process, so that
// FEED_CACHE_BYTES bounds the process and not each host.
const fileCaches = new WeakMap<object, ObjectCache>();
function fileCache(app: AppContext): ObjectCache | undefined {
  if (app.config.feedCacheBytes <= 0) return undefined;
  let c = fileCaches.get(app.store);
  if (!c) {
    c = new ObjectCache({ maxBytes: app.config.feedCacheBytes, clock: app.clock });
    fileCaches.set(app.store, c);
  }
  return c;
}

/** The bearer token of the request, or undefined when there is no Authorization: Bearer header. */
function bearerToken(ctx: Koa.Context): string | undefined {
  return bearerOf(ctx.get('Authorization'));
}

/**
 * The feed client a request speaks for, whichever credential it sent: what every feed route reads
 * (role and zones), never how it was proven.
 */
export interface FeedPrincipal {
  clientId: string;
  role: Role;
  /** null: every zone */
  zones: string[] | null;
  /** the key's id when the credential was an API key (X-Access-Token) */
  keyId?: string;
}

/**
 * What the feeds' auth kinds leave on ctx.state (api/feeds/endpoint.ts `feedKit`): the handler reads
 * it through `claimsOf` (./insurance.ts: `insurerZonesOf`), never by authenticating again.
 */
export interface FeedAuthState {
  /** the verified credential (feedToken, legacyToken, eitherToken; insurer when sent a token or a feed client's key) */
  feedClaims?: FeedPrincipal;
  /** insurer: the zones the credential opens (null: every zone) */
  insurerZones?: string[] | null;
}

const stateOf = (ctx: Koa.Context) => ctx.state as FeedAuthState;

/** The API key of X-Access-Token, or undefined when the header is absent or empty. */
export function accessKeyOf(ctx: Koa.Context): string | undefined {
  return ctx.get('X-Access-Token') || undefined;
}

/**
 * Verifies the request's credential: `Authorization: Bearer <token>` or `X-Access-Token: <key>`
 * (both at once is a 400: RFC 6750 §2, one method per request). Throws 401 with
 * `WWW-Authenticate: Bearer`. The principal stays on ctx.state (FeedAuthState).
 */
export async function authenticate(deps: FeedDeps, ctx: Koa.Context): Promise<FeedPrincipal> {
  const header = ctx.get('Authorization');
  const key = accessKeyOf(ctx);
  if (key !== undefined) {
    if (header) throw badParam('two credentials', 'send one credential: Authorization: Bearer <access token> or X-Access-Token: <API key>, not both');
    const found = await deps.keys.verify(key);
    if (!found) throw unauthorized('the API key is unknown or revoked, or its client is revoked', true);
    stateOf(ctx).feedClaims = found;
    return found;
  }
  const token = bearerToken(ctx);
  if (!token)
    throw unauthorized(
      header
        ? 'the Authorization header must be "Bearer <access token>"'
        : 'an access token (Authorization: Bearer) or an API key (X-Access-Token) is required',
      Boolean(header),
    );
  const res = await deps.tokens.verify(token);
  if (!res.ok) throw unauthorized(res.reason === 'expired' ? 'the access token has expired' : 'the access token is invalid', true);
  const standing = await deps.revoked.standing(res.claims.clientId);
  if (standing === 'revoked') throw unauthorized('the access token has been revoked', true);
  if (standing === 'unknown') throw unauthorized('the client of the access token does not exist', true);
  stateOf(ctx).feedClaims = res.claims;
  return res.claims;
}

/**
 * The credential kinds of the feed routes (feedToken, legacyToken, eitherToken): one verifier serves
 * both hosts, whose tokens are alike, and the same keys open both, so the three differ only in what
 * the documents say of them.
 */
export function tokenAuth(deps: FeedDeps): Koa.Middleware {
  return async (ctx, next) => {
    await authenticate(deps, ctx);
    await next();
  };
}

/** The claims the row's token auth left; a row without it reaching here is a fault of its table, not of the client. */
export function claimsOf(ctx: Koa.Context): FeedPrincipal {
  const claims = stateOf(ctx).feedClaims;
  if (!claims) throw new Error('no token was verified for this route: its row must declare a token auth kind');
  return claims;
}

export function authorize(claims: { role: Role }, access: FeedAccess): void {
  if (!canRead(claims.role, access)) throw forbidden('this feed is outside the role of the client');
}

/** Validates the zone id, checks the zone exists and is inside `zones` (null: every zone). */
export async function resolveZone(deps: FeedDeps, zones: readonly string[] | null, raw: string | undefined): Promise<ZoneInfo> {
  const id = zoneParam(raw);
  const zone = await deps.zones.get(id);
  if (!zone) throw notFound(`unknown zone ${id}`);
  if (!inScope(zones, id)) throw forbidden(`zone ${id} is outside the scope of the client`);
  return zone;
}
