/**
 * The one rule every API family applies to a database failure that is not the request's fault:
 * Postgres unreachable (connection refused or lost, pool exhausted past its wait) or a statement
 * cancelled by its timeout is a 503 with `Retry-After: OUTAGE_RETRY_AFTER_SECONDS`, never a 500.
 * The SQLSTATEs behind the two kinds are read in one place too (lib/core/db.ts classify). Each family
 * renders the answer in its own error format (api/partner/errors.ts, api/tomp/http.ts,
 * api/feeds/errors.ts, the OAuth token endpoint in api/feeds/token.ts).
 */
import { isDbOutage, type DbError } from '../../lib/core/db.js';

export const OUTAGE_RETRY_AFTER_SECONDS = 5;

export function isOutage(err: unknown): err is DbError {
  return isDbOutage(err);
}
