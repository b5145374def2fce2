/**
 * Structured logging (pino). Credentials never reach a log: headers and fields that carry keys,
 * tokens, secrets or signatures are redacted wherever they appear in a logged object.
 */
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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const opts = { level, redact: { paths: REDACT_PATHS, censor: '[Redacted]' }, base: { pid: process.pid } };
  return destination ? pino(opts, destination as pino.DestinationStream) : pino(opts);
}
