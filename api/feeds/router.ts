/**
 * The feed routes of the main host: the token endpoint, MDS 2.0, GBFS 3.0 (/v1/partner-apis/...),
 * GBFS 2.2 (/gbfs/v2/...), insurance, the token endpoint's RFC 8414 metadata
 * (/.well-known/oauth-authorization-server) and the JWKS of the feed signatures
 * (/.well-known/jwks.json). The host's root router (api/app.ts) nests them; every answer under these
 * prefixes, errors included, is in the feed error format and signed (./signatures.ts).
 */
import { routeMiss, type RouteFamily } from '../kit/route-miss.js';
import type Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../../lib/domain/context.js';
import { buildFeedDeps, type FeedDeps } from './auth.js';
import { feedErrors, FeedError, notFound } from './errors.js';
import { mountEndpoints } from '../kit/endpoints.js';
import { feedKit, hotFilesOf } from './endpoint.js';
import { FEED_ENDPOINTS } from './endpoints.js';
import { OAUTH_METADATA_PATH } from './discovery.js';
import type { FastHourFile } from './hot-path.js';
import { signedRenderer, type FeedSigner } from './signatures.js';
import { JWKS_PATH } from './jwks.js';

const PREFIXES = ['/v1/partner-apis', '/gbfs/v2', OAUTH_METADATA_PATH, JWKS_PATH];

/** A feed host's answer to a path none of `router`'s routes takes: 404, or 405 with Allow (api/kit/route-miss.ts), in the feed body, signed. */
export function feedMiss(router: Router, signer: FeedSigner): Koa.Middleware {
  const errors = feedErrors();
  return signedRenderer(signer, async (ctx) => {
    await errors(ctx, () =>
      routeMiss(router.match(ctx.path, ctx.method).path, {
        notFound: () => notFound('no such feed endpoint'),
        notAllowed: (allow) => new FeedError(405, 'bad_param', `method ${ctx.method} not allowed`, [`allowed: ${allow}`], { Allow: allow }),
      }),
    );
  });
}

/** `deps`: pass the app's own when its hot path (FEED_HOT_FILES) must share the caches. */
export function feedRoutes(ctx: AppContext, deps: FeedDeps = buildFeedDeps(ctx)): RouteFamily {
  const router = new Router();
  mountEndpoints(router, FEED_ENDPOINTS, deps, feedKit(deps));
  return { name: 'feeds', routes: router.routes() as unknown as Koa.Middleware, prefixes: PREFIXES, miss: feedMiss(router, deps.signer) };
}

/** The hourly-file routes of the main host, for the hot path: the table's hourly-file rows. */
export const FEED_HOT_FILES: readonly FastHourFile[] = hotFilesOf(FEED_ENDPOINTS);
