/**
 * Insurance trips (GET /v1/partner-apis/insurance/{zoneID}/trips?end_time=), from the hourly files.
 * Current credential: an API key in X-Access-Token: an insurer partner's key (scope `insurance`,
 * zones of its partner) or, as on every feed route, a key of an insurer-role feed client.
 * Deprecated but working: an OAuth bearer token of an insurer-role feed client.
 */
import type Koa from 'koa';
import { accessKeyOf, authenticate, authorize, resolveZone, type FeedAuthState, type FeedDeps } from './auth.js';
import { INSURANCE_2_0, negotiate } from './accept.js';
import { forbidden, unauthorized } from './errors.js';
import { apiOfScope, otherScopeOf } from '../kit/api-key-gate.js';
import { notYetAvailable202, serveHourFile } from './files.js';
import { single, timeHourParam, pathParam } from './params.js';

/**
 * The `insurer` auth kind: an insurer partner's key (403 for a live key of another API), or else
 * the feed routes' credential (a feed client's key or token: ./auth.ts authenticate) and the role's
 * right to the insurance trips (an insurer credential is one that opens them), before the handler
 * negotiates the version. Leaves the zones the credential opens on ctx.state.
 */
export function insurerAuth(deps: FeedDeps): Koa.Middleware {
  return async (ctx, next) => {
    const state = ctx.state as FeedAuthState;
    const key = accessKeyOf(ctx);
    const partner = key !== undefined && !ctx.get('Authorization') ? await deps.insurerKeys.verify(key, 'insurance') : undefined;
    if (partner) {
      ctx.state.partnerId = partner.partnerId;
      state.insurerZones = partner.zones;
    } else {
      // neither an insurer's key nor a feed client's: a live key of another API is told which one it is
      if (key !== undefined && !ctx.get('Authorization') && !(await deps.keys.verify(key))) {
        const other = await otherScopeOf(deps.insurerKeys, key, 'insurance');
        throw other ? forbidden(`this key is not an insurer key; it is a key of ${apiOfScope[other]}`) : unauthorized('the access key is invalid', true);
      }
      const claims = await authenticate(deps, ctx);
      authorize(claims, { family: 'insurance', endpoint: 'trips' });
      state.insurerZones = claims.zones;
    }
    await next();
  };
}

/** The zones the insurer's credential opens, as `insurerAuth` left them. */
function insurerZonesOf(ctx: Koa.Context): string[] | null {
  const zones = (ctx.state as FeedAuthState).insurerZones;
  if (zones === undefined) throw new Error('no insurer credential was checked for this route: its row must declare the insurer auth kind');
  return zones;
}

export async function insuranceTrips(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const zones = insurerZonesOf(ctx);
  const offer = negotiate(ctx.get('Accept') || undefined, [INSURANCE_2_0], INSURANCE_2_0);
  const zone = await resolveZone(deps, zones, pathParam(ctx, 'zoneID'));
  const hour = timeHourParam('end_time', single(ctx.query, 'end_time'));
  await serveHourFile(deps, ctx, { feed: 'insurance_trips', version: '2.0', zone, hour, contentType: offer.contentType, notPublished: notYetAvailable202 });
}
