/**
 * The checks every MDS endpoint makes before it reads anything, in one place for the hourly-file
 * routes and the realtime ones of both hosts: after the token (verified by the row's auth kind, in
 * the kit: api/feeds/endpoint.ts), the version the client accepts, the role's right to the endpoint,
 * and the zone (known, and within the client's zones).
 */
import type Koa from 'koa';
import { pathParam } from './params.js';
import type { MdsEndpoint } from '../../lib/feeds/roles.js';
import { authorize, claimsOf, resolveZone, type FeedDeps } from './auth.js';
import { MDS_0_4, MDS_1_2, MDS_2_0, negotiate, type MediaOffer } from './accept.js';
import type { ZoneInfo } from './zones.js';

export type LegacyVersion = '1.2' | '0.4';

/**
 * MDS 2.0 (main host): the version defaults to 2.0 when the client names none. An endpoint that MDS
 * 2.1 added (/incidents) passes MDS_2_1 as its one offer, its default as well.
 */
export async function mdsGate(deps: FeedDeps, ctx: Koa.Context, endpoint: MdsEndpoint, offer: MediaOffer<'2.0' | '2.1'> = MDS_2_0): Promise<ZoneInfo> {
  const claims = claimsOf(ctx);
  negotiate(ctx.get('Accept') || undefined, [offer], offer);
  authorize(claims, { family: 'mds', version: offer.version, endpoint });
  return resolveZone(deps, claims.zones, pathParam(ctx, 'zoneID'));
}

/** MDS 1.2 / 0.4 (legacy host): the version is required, by Accept. */
export async function legacyGate(deps: FeedDeps, ctx: Koa.Context, endpoint: MdsEndpoint): Promise<{ zone: ZoneInfo; offer: MediaOffer<LegacyVersion> }> {
  const claims = claimsOf(ctx);
  const offer = negotiate<LegacyVersion>(ctx.get('Accept') || undefined, [MDS_1_2, MDS_0_4], undefined);
  authorize(claims, { family: 'mds', version: offer.version, endpoint });
  const zone = await resolveZone(deps, claims.zones, pathParam(ctx, 'zoneID'));
  return { zone, offer };
}
