/**
 * The token endpoint (POST /v1/partner-apis/token on the main host, POST /token on the legacy host):
 * OAuth 2.0 client credentials grant, RFC 6749 §4.4, with errors per §5.2.
 *
 * Client authentication: HTTP Basic, the id and secret each form-urlencoded before joining (§2.3.1).
 * Credentials in the body (client_id/client_secret) are accepted only when there is no Authorization
 * header — the RFC allows them but discourages them; a request using both methods is rejected (§2.3).
 *
 * Guessing is throttled and secret checks are bounded (api/feeds/token-guard.ts): 429 `slow_down`
 * with Retry-After after a few failures per (client id, address) or per address per minute, so the
 * right secret from an address that did not guess is never refused; 503 `temporarily_unavailable`
 * when too many secret checks are already waiting. The address is the socket's peer unless
 * TOKEN_AUTH_TRUSTED_PROXY_HOPS says how many reverse proxies' X-Forwarded-For entries to believe.
 */
import { isOutage, OUTAGE_RETRY_AFTER_SECONDS } from '../kit/outage.js';
import type Koa from 'koa';
import { requestLogOf } from '../kit/request-log.js';
import { authenticateFeedClient } from '../../lib/feeds/clients.js';
import type { Reached } from './token-guard.js';
import { AdmissionRefused } from '../kit/admission.js';
import { issueFeedToken } from './access-tokens.js';
import type { FeedDeps } from './auth.js';
import { metrics } from '../../lib/core/metrics.js';
import { BodyRefused, jsonDepthExceeds, readBody } from '../kit/body.js';

const MAX_BODY = 4096;

class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'slow_down' | 'temporarily_unavailable',
    readonly description: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
}

/** The form body (api/kit/body.ts); JSON-looking nesting is refused like any malformed form. */
async function readForm(ctx: Koa.Context): Promise<string> {
  let raw: Buffer;
  try {
    raw = await readBody(ctx, MAX_BODY);
  } catch (err) {
    if (err instanceof BodyRefused) throw new OAuthError(400, 'invalid_request', 'request body too large');
    throw err;
  }
  if (jsonDepthExceeds(raw)) throw new OAuthError(400, 'invalid_request', 'malformed request body');
  return raw.toString('utf8');
}

/** application/x-www-form-urlencoded decoding: `+` is a space, then percent-decoding. */
function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    throw new OAuthError(400, 'invalid_request', 'malformed percent-encoding');
  }
}

function parseForm(body: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of body.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const k = formDecode(eq < 0 ? pair : pair.slice(0, eq));
    const v = formDecode(eq < 0 ? '' : pair.slice(eq + 1));
    // §3.2: request parameters MUST NOT be included more than once
    if (out.has(k)) throw new OAuthError(400, 'invalid_request', `parameter ${k} given more than once`);
    out.set(k, v);
  }
  return out;
}

function basicCredentials(header: string): { id: string; secret: string } | undefined {
  const m = /^Basic[ ]+([A-Za-z0-9+/]+=*)\s*$/i.exec(header);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

/**
 * One warning when a (client id, address) pair or an address reaches its limit, at most one per key
 * and window: a client id under attack from many addresses shows as many lines for that id. That is
 * the only per-id signal; the id itself is never refused (ids are not secret).
 */
function logThrottle(ctx: Koa.Context, reached: Reached, clientId: string | undefined, address: string): void {
  if (!reached.pair && !reached.address) return;
  requestLogOf(ctx)?.warn(
    { clientId: clientId?.slice(0, 129), address, limit: reached.address ? 'address' : 'client-address' },
    'failed client authentications throttled',
  );
}

type FeedClient = NonNullable<Awaited<ReturnType<typeof authenticateFeedClient>>>;

/** What the clientCredentials kind leaves on ctx.state for the token handler. */
interface TokenRequestState {
  tokenRequest?: { client: FeedClient; grant: string };
}

/**
 * The `clientCredentials` auth kind (the token endpoints): reads the form, authenticates the client
 * (§2.3; credentials may be in the form, so the form is read here) under the guard's throttle and
 * hash slots, and leaves the client and the grant on ctx.state. Every error of the row, the
 * handler's too, is an OAuth error (§5.2) rendered here, not a feed error.
 */
export function clientCredentials(deps: FeedDeps): Koa.Middleware {
  return async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    try {
      if (!ctx.is('application/x-www-form-urlencoded')) {
        throw new OAuthError(400, 'invalid_request', 'the request body must be application/x-www-form-urlencoded');
      }
      const form = parseForm(await readForm(ctx));
      const grant = form.get('grant_type');
      if (!grant) throw new OAuthError(400, 'invalid_request', 'grant_type is required');

      const header = ctx.get('Authorization');
      let creds: { id: string; secret: string } | undefined;
      if (header) {
        if (form.has('client_id') || form.has('client_secret')) {
          throw new OAuthError(400, 'invalid_request', 'use one client authentication method, not both the Authorization header and body credentials');
        }
        creds = basicCredentials(header);
      } else if (form.has('client_id') && form.has('client_secret')) {
        creds = { id: form.get('client_id')!, secret: form.get('client_secret')! };
      }
      const guard = deps.tokenGuard;
      const address = guard.addressOf(ctx.req);
      // before any lookup or hashing: a throttled guesser costs nothing
      const wait = guard.retryAfter(creds?.id, address);
      if (wait > 0) throw new OAuthError(429, 'slow_down', 'too many failed client authentications; retry later', wait);
      if (!creds) {
        logThrottle(ctx, guard.failed(undefined, address), undefined, address);
        throw new OAuthError(401, 'invalid_client', 'client authentication failed');
      }
      const now = deps.app.clock.now();
      let client: Awaited<ReturnType<typeof authenticateFeedClient>>;
      try {
        client = await authenticateFeedClient(deps.app.db, creds.id, creds.secret, now, (work) => guard.withHashSlot(work));
      } catch (err) {
        if (err instanceof AdmissionRefused)
          throw new OAuthError(503, 'temporarily_unavailable', 'too many client authentications in progress; retry later', err.retryAfterSeconds);
        throw err;
      }
      if (!client) {
        logThrottle(ctx, guard.failed(creds.id, address), creds.id, address);
        throw new OAuthError(401, 'invalid_client', 'client authentication failed');
      }
      guard.succeeded(creds.id, address);
      (ctx.state as TokenRequestState).tokenRequest = { client, grant };
      await next();
    } catch (caught) {
      // a database outage is RFC 6749's temporarily_unavailable, with the outage rule's Retry-After
      const err = isOutage(caught)
        ? new OAuthError(503, 'temporarily_unavailable', 'the service is temporarily unavailable; retry later', OUTAGE_RETRY_AFTER_SECONDS)
        : caught;
      if (!(err instanceof OAuthError)) throw err;
      metrics.tokenFailures.inc({ error: err.error });
      ctx.status = err.status;
      if (err.status === 401) ctx.set('WWW-Authenticate', 'Basic realm="feeds", charset="UTF-8"');
      if (err.retryAfterSeconds !== undefined) ctx.set('Retry-After', String(err.retryAfterSeconds));
      ctx.body = { error: err.error, error_description: err.description };
    }
  };
}

/** The token handler, behind `clientCredentials`: the grant (checked after the client, as before), then the token. */
export async function issueToken(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const request = (ctx.state as TokenRequestState).tokenRequest;
  if (!request) throw new Error('no client was authenticated for this route: its row must declare the clientCredentials auth kind');
  const { client, grant } = request;
  if (grant !== 'client_credentials') throw new OAuthError(400, 'unsupported_grant_type', 'only grant_type=client_credentials is supported');
  const { accessToken, expiresIn } = await issueFeedToken(deps.app.config, deps.app.clock, client);
  requestLogOf(ctx)?.info({ clientId: client.clientId, role: client.role }, 'feed token issued');
  metrics.tokensIssued.inc({ role: client.role });
  ctx.status = 200;
  ctx.body = { access_token: accessToken, expires_in: expiresIn, token_type: 'bearer' };
}
