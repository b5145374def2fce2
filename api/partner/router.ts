/**
 * The partner rental API (partner-rental-api.md): /v1/... and /v2/... on the main host, except the
 * feed prefix /v1/partner-apis. Every answer inside these prefixes, errors included, is JSON:API;
 * unmatched paths → 404 NotFound, a known path with another method → 405 MethodNotAllowed.
 */
import { routeMiss } from '../../lib/http/route-miss.js';
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { RentalError } from '../../lib/rentals/errors.js';
import { mountEndpoints } from '../../lib/http/endpoints.js';
import { renderError } from './errors.js';
import { partnerKit } from './endpoint.js';
import { PARTNER_ENDPOINTS } from './endpoints.js';
import { admissionFor, type Admission } from '../../lib/http/admission.js';

/**
 * An id path parameter left empty (`/v1/vehicles/code/`, `/v1/rental//end`) matches no route, since a
 * parameter needs at least one character. Such a request is dispatched once more with the empty
 * segment replaced by this placeholder, which no id, code or zone id of the contract can be: the
 * route it then reaches refuses it with its own error-table code (BadVehicleCode, InvalidVehicleID,
 * InvalidVehicleId, InvalidUserId, …), exactly as it refuses any other malformed id. A path whose
 * filled form matches no route either stays 404 NotFound.
 */
const EMPTY_SEGMENT = '%00';

/** The path with its empty segments (a trailing slash, `//`) filled with EMPTY_SEGMENT; undefined when there is none. */
export function fillEmptySegments(path: string): string | undefined {
  const segments = path.split('/');
  if (segments.length < 3) return undefined;
  let filled = false;
  for (let i = 1; i < segments.length; i++) {
    if (segments[i] === '') {
      segments[i] = EMPTY_SEGMENT;
      filled = true;
    }
  }
  return filled ? segments.join('/') : undefined;
}

function inScope(path: string): boolean {
  return (path.startsWith('/v1/') || path.startsWith('/v2/') || path === '/v1' || path === '/v2') && !path.startsWith('/v1/partner-apis');
}

export function partnerRoutes(ctx: AppContext, admission: Admission = admissionFor(ctx.config)): Koa.Middleware {
  const router = new Router();
  mountEndpoints(router, PARTNER_ENDPOINTS, ctx, partnerKit(ctx, admission));
  const routes = router.routes() as unknown as Koa.Middleware;

  return async (koa, next) => {
    if (!inScope(koa.path)) return next();
    try {
      const unmatched = async () =>
        routeMiss((koa as { matched?: Array<{ methods: string[] }> }).matched, {
          notFound: () => new RentalError('NotFound'),
          notAllowed: (allow) => new RentalError('MethodNotAllowed', { headers: { Allow: allow } }),
        });
      await routes(koa, async () => {
        const filled = fillEmptySegments(koa.path);
        if (filled === undefined) return unmatched();
        const original = koa.path;
        koa.path = filled;
        try {
          await routes(koa, unmatched);
        } finally {
          koa.path = original;
        }
      });
    } catch (err) {
      renderError(koa, err);
    }
  };
}
