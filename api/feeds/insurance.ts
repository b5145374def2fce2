/**
 * Insurance trips (GET /v1/partner-apis/insurance/{zoneID}/trips?end_time=), from the hourly files.
 * Current credential: an API key in X-Access-Token (scope `insurance`, zones of its partner).
 * Deprecated but working: an OAuth bearer token of an insurer-role feed client.
 */
import type Koa from 'koa';
import { authenticate, authorize, resolveZone, type FeedDeps } from './auth.js';
import { INSURANCE_2_0, negotiate } from './accept.js';
import { forbidden, unauthorized } from './errors.js';
import { apiOfScope, otherScopeOf } from '../../lib/http/api-key-gate.js';
import { notYetAvailable202, serveHourFile } from './files.js';
import { single, timeHourParam } from './params.js';

async function insurerZones(deps: FeedDeps, ctx: Koa.Context): Promise<string[] | null> {
  const key = ctx.get('X-Access-Token');
  if (key) {
    const principal = await deps.insurerKeys.verify(key, 'insurance');
    if (!principal) {
      const other = await otherScopeOf(deps.insurerKeys, key, 'insurance');
      throw other ? forbidden(`this key is not an insurer key; it is a key of ${apiOfScope[other]}`) : unauthorized('the access key is invalid', true);
    }
    ctx.state.partnerId = principal.partnerId;
    return principal.zones;
  }
  const claims = await authenticate(deps, ctx);
  authorize(claims, { family: 'insurance', endpoint: 'trips' });
  return claims.zones;
}

export async function insuranceTrips(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const zones = await insurerZones(deps, ctx);
  const offer = negotiate(ctx.get('Accept') || undefined, [INSURANCE_2_0], INSURANCE_2_0);
  const zone = await resolveZone(deps, zones, ctx.params.zoneID);
  const hour = timeHourParam('end_time', single(ctx.query, 'end_time'));
  await serveHourFile(deps, ctx, { feed: 'insurance_trips', version: '2.0', zone, hour, contentType: offer.contentType, notPublished: notYetAvailable202 });
}
