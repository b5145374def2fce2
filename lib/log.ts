/**
 * Structured logging (pino). Credentials never reach a log: headers and fields that carry keys,
 * tokens, secrets or signatures are redacted wherever they appear in a logged object.
 */
import type Koa from 'koa';
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT_PATHS = [
  'req.headers["x-auth-token"]',
  'req.headers["x-access-token"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-auth-token"]',
  'headers["x-access-token"]',
  'headers.authorization',
  '*.apiKey',
  '*.api_key',
  '*.secret',
  '*.client_secret',
  '*.password',
  '*.token',
  '*.access_token',
  '*.signature',
  'apiKey',
  'secret',
  'client_secret',
  'password',
  'token',
  'access_token',
  'signature',
];

/** Query parameter names that carry credentials, compared in lower case after percent-decoding. */
const CREDENTIAL_PARAMS = new Set(['client_secret', 'api_key', 'apikey', 'key', 'password', 'secret', 'token', 'access_token', 'sig', 'signature']);

/** Whether a query parameter of this name is credential-shaped: the list above, or any *token* / *secret*. */
function isCredentialParam(name: string): boolean {
  let n = name;
  try {
    n = decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    // a malformed escape: judge the raw name
  }
  n = n.toLowerCase();
  return CREDENTIAL_PARAMS.has(n) || n.includes('token') || n.includes('secret') || n.includes('password');
}

/**
 * Query strings can carry credentials (signed photo/receipt URLs, a partner's misplaced key): the
 * value of every credential-shaped parameter is cut from a logged URL, whatever the case or escaping
 * of its name.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return isCredentialParam(name) ? `${name}=[Redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${redacted}`;
}

/**
 * The request's logger (a child carrying its request id, set by api/middleware/request-envelope.ts,
 * with the ids a family's gate adds: bindRequestLog); undefined on an app built without the
 * envelope. Koa types `ctx.state` as `any`: this is the one place that says what `ctx.state.log`
 * holds, in lib/ because the shared HTTP helpers (lib/http/) read it as well as the API.
 */
export const requestLogOf = (ctx: Pick<Koa.Context, 'state'>): Logger | undefined => ctx.state.log as Logger | undefined;

/**
 * Makes `ctx.state.log` the child of `log` with `bindings`, created on first use: most requests
 * log nothing but their access line, which is written only at info, and a pino child costs the
 * serialisation of its bindings (at 2 × the capacity, BENCH=partner-api, the children made for
 * requests that logged nothing took 0.78 s of the API's 26.6 s of CPU). Bindings added before
 * that first use go into the one child; after it, into a child of it.
 */
export function lazyRequestLog(ctx: Pick<Koa.Context, 'state'>, log: Logger, bindings: Record<string, unknown>): void {
  let child: Logger | undefined;
  Object.defineProperty(ctx.state, 'log', {
    configurable: true,
    enumerable: true,
    get: () => (child ??= log.child(bindings)),
  });
  Object.defineProperty(ctx.state, 'logBindings', {
    configurable: true,
    enumerable: false,
    value: (more: Record<string, unknown>) => {
      if (child) child = child.child(more);
      else Object.assign(bindings, more);
    },
  });
}

/** Adds ids to the request's logger (a family's gate: the partner and key), without creating it. */
export function bindRequestLog(ctx: Pick<Koa.Context, 'state'>, more: Record<string, unknown>): void {
  const bind = ctx.state.logBindings as ((more: Record<string, unknown>) => void) | undefined;
  bind?.(more);
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const opts = { level, redact: { paths: REDACT_PATHS, censor: '[Redacted]' }, base: { pid: process.pid } };
  return destination ? pino(opts, destination as pino.DestinationStream) : pino(opts);
}
