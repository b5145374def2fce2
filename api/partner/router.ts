/**
 * The partner rental API (partner-rental-api.md): /v1/... and /v2/... on the main host, except the
 * feed prefix /v1/partner-apis, nested in the host's root router (api/app.ts). Every answer inside
 * these prefixes, errors included, is JSON:API; unmatched paths → 404 NotFound, a known path with
 * another method → 405 MethodNotAllowed.
 */
import { routeMiss, type RouteFamily } from '../kit/route-miss.js';
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/domain/context.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { mountEndpoints } from '../kit/endpoints.js';
import { partnerKit } from './endpoint.js';
import { PARTNER_ENDPOINTS } from './endpoints.js';
import { admissionFor, type Admission } from '../kit/admission.js';

/**
 * An id path parameter left empty (`/v1/vehicles/code/`, `/v1/rental//end`) matches no route, since a
 * parameter needs at least one character. Such a request is dispatched once more with the empty
 * segment replaced by this placeholder, which no id, code or zone id of the contract can be: the
 * route it then reaches refuses it with its own error-table code (BadVehicleCode, InvalidVehicleID,
 * InvalidVehicleId, InvalidUserId, …), exactly as it refuses any other malformed id. A path whose
 * filled form matches no route either stays 404 NotFound.
 */
const EMPTY_SEGMENT = '%00';

type Layer = { methods: string[] };

/** The path with its empty segments (a trailing slash, `//`) filled with EMPTY_SEGMENT; undefined when there is none. */
function fillEmptySegments(path: string): string | undefined {
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

/** `admission`: the limit the partner API shares with TOMP (api/app.ts). */
export function partnerRoutes(ctx: AppContext, admission: Admission = admissionFor(ctx.config)): RouteFamily {
  const router = new Router();
  const kit = partnerKit(ctx, admission);
  mountEndpoints(router, PARTNER_ENDPOINTS, ctx, kit);
  const routes = router.routes() as unknown as Koa.Middleware;

  // a path no route takes: once more with its empty segments filled, then 404 or 405 (api/kit/route-miss.ts)
  const miss: Koa.Middleware = async (koa) => {
    await kit.render(koa, async () => {
      const original = koa.path;
      const unmatched = (also: readonly Layer[] = []) =>
        routeMiss([...router.match(original, koa.method).path, ...also], {
          notFound: () => new RentalError('NotFound'),
          notAllowed: (allow) => new RentalError('MethodNotAllowed', { headers: { Allow: allow } }),
        });
      const filled = fillEmptySegments(original);
      if (filled === undefined) return unmatched();
      koa.path = filled;
      try {
        await routes(koa, () => unmatched(router.match(filled, koa.method).path));
      } finally {
        koa.path = original;
      }
    });
  };
  // /v1/partner-apis is the feeds' (a longer prefix: api/feeds/router.ts)
  return { name: 'partner', routes, prefixes: ['/v1', '/v2'], miss };
}
