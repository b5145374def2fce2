/**
 * Structured logging (pino). Credentials never reach a log: headers and fields that carry keys,
 * tokens, secrets or signatures are redacted wherever they appear in a logged object.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
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

/** Query strings can carry signatures (signed photo/receipt URLs): strip them from logged URLs. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  return url.slice(0, q) + url.slice(q).replace(/(sig|signature|token|access_token)=[^&]*/gi, '$1=[Redacted]');
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const opts = { level, redact: { paths: REDACT_PATHS, censor: '[Redacted]' }, base: { pid: process.pid } };
  return destination ? pino(opts, destination as pino.DestinationStream) : pino(opts);
}
