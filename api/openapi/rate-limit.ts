/**
 * The rate-limit headers of the API-key families (partner rental API, TOMP) in their documents. The
 * one API-key gate (api/kit/api-key-gate.ts) sets X-RateLimit-Limit and X-RateLimit-Remaining as
 * soon as it has verified the key, before the request goes on, so every answer after it carries
 * them, errors included (400, 404, 405, 413, 429 ...). Only what the gate refuses before it knows
 * the key goes without: 401 (no, unknown or revoked key) and 403 (a key of another API). A 5xx can
 * come from before the gate (a database outage while the key is verified, the admission queue), so
 * there they may be absent. The feeds have no per-client rate limit and send neither header.
 */
import type { Header } from './common.js';
import { header } from './common.js';

const COUNT = { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 };

const HEADERS = (required: boolean): Record<string, Header> => ({
  'X-RateLimit-Limit': header('requests per minute allowed for the key (summed over every request of the key)', COUNT, required),
  'X-RateLimit-Remaining': header('requests left in the current minute', COUNT, required),
});
const ALWAYS = HEADERS(true);
const MAYBE = HEADERS(false);

/** The rate-limit headers an answer of an API-key operation with this status carries (none: it never does). */
export function rateLimitHeaders(status: number): Record<string, Header> | undefined {
  if (status === 401 || status === 403) return undefined;
  return status >= 500 ? MAYBE : ALWAYS;
}

/** `Retry-After` as every family sends it (429, 503; the feeds' 202 and not-published 404), in whole seconds. */
export const retryAfter = (required = true): Header =>
  header('seconds to wait before retrying', { type: 'integer', format: 'int32', minimum: 0, maximum: 86400 }, required);
