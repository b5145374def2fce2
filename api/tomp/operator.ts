/**
 * Operator information: GET /operator/regions, /operator/meta, /operator/pricing-plans.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/context.js';
import { q } from '../../lib/db.js';
import { TompError } from '../../lib/tomp/errors.js';
import { tariffParts } from '../../lib/tomp/views.js';
import { principalOf } from './auth.js';

const TOMP_VERSION = '1.6.1';

/** Every endpoint we serve, as listed in /operator/meta (paths relative to the base URL). */
export const ENDPOINTS = [
  { method: 'GET', path: '/operator/meta', status: 'IMPLEMENTED' },
  { method: 'GET', path: '/operator/regions', status: 'IMPLEMENTED', supportsPaging: true, maxPageSize: 1000 },
  { method: 'GET', path: '/operator/pricing-plans', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/bookings/one-stop', status: 'IMPLEMENTED' },
  { method: 'GET', path: '/bookings/{id}', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/bookings/{id}/events', eventType: 'COMMIT', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/bookings/{id}/events', eventType: 'CANCEL', status: 'IMPLEMENTED' },
  { method: 'GET', path: '/legs/{id}', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/legs/{id}/events', eventType: 'START_FINISHING', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/legs/{id}/events', eventType: 'FINISH', status: 'IMPLEMENTED' },
  { method: 'POST', path: '/support/', status: 'IMPLEMENTED' },
] as const;

const MAX_PAGE = 1000;

function pagingParam(ctx: Koa.Context, name: string): number | undefined {
  const raw = ctx.query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw)) throw new TompError(400, `${name} must be a non-negative integer`);
  return Number(raw);
}

/** Operating zones as regions. A zone boundary of several polygons is shown as its largest polygon (SQL). */
export function regions(app: AppContext): Koa.Middleware {
  return async (ctx) => {
    const offset = pagingParam(ctx, 'offset') ?? 0;
    const limit = pagingParam(ctx, 'limit') ?? MAX_PAGE;
    if (limit > MAX_PAGE) throw new TompError(400, `limit must be at most ${MAX_PAGE}`);
    const rows = await app.db.many(q('TompOperatingRegions'), [principalOf(ctx).zones]);
    ctx.body = rows.slice(offset, offset + limit).map((r) => ({
      regionId: r.id,
      name: r.name,
      type: 'OPERATING',
      serviceArea: JSON.parse(r.geojson),
    }));
  };
}

/**
 * One metadata object. AUTO_COMMIT partners see AUTO_COMMIT in processIdentifiers.booking; partners
 * with postponed commit see POSTPONED_COMMIT instead (their bookings wait for a COMMIT event).
 */
export function meta(app: AppContext): Koa.Middleware {
  return async (ctx) => {
    const postponed = principalOf(ctx).tompPostponedCommit;
    ctx.body = [
      {
        version: TOMP_VERSION,
        baseUrl: `${app.config.publicBaseUrl}/edge/tomp`,
        endpoints: ENDPOINTS,
        scenarios: ['POSTPONED_COMMIT', 'PAY_WHEN_FINISHED'],
        processIdentifiers: {
          operatorInformation: [],
          planning: [],
          booking: [postponed ? 'POSTPONED_COMMIT' : 'AUTO_COMMIT'],
          tripExecution: [],
          support: [],
          payment: [],
          general: [],
        },
      },
    ];
  };
}

const FORM_FACTOR_NAMES: Record<string, string> = { scooter: 'e-scooter', bicycle: 'bike' };

/** One plan per operating zone and vehicle type: an unlock fee (FIXED) and a price per minute (FLEX). */
export function pricingPlans(app: AppContext): Koa.Middleware {
  return async (ctx) => {
    const regionId = ctx.query.regionId;
    const stationId = ctx.query.stationId;
    if ((regionId !== undefined && typeof regionId !== 'string') || (stationId !== undefined && typeof stationId !== 'string')) {
      throw new TompError(400, 'regionId and stationId may be given once');
    }
    // we have no stations: a station filter matches nothing
    if (stationId !== undefined) {
      ctx.body = [];
      return;
    }
    const rows = await app.db.many(q('TompPricingPlans'), [principalOf(ctx).zones, regionId ?? null]);
    ctx.body = rows.map((r) => {
      const currency = String(r.currency).trim();
      const parts = tariffParts(r.start_price, r.price_per_minute, currency, Number(r.vat_rate));
      const kind = r.propulsion_type === 'human' ? r.form_factor : (FORM_FACTOR_NAMES[r.form_factor] ?? r.form_factor);
      return {
        planId: `${r.zone_id}:${r.vehicle_type_id}`,
        regionId: r.zone_id,
        name: `${r.vehicle_type_name} (${r.zone_name})`,
        // prices include VAT: no tax is added on top
        isTaxable: false,
        description: `${kind} in ${r.zone_name}: ${parts[0]!.amount} ${currency} to unlock, then ${parts[1]!.amount} ${currency} per started minute (VAT included)`,
        fare: { estimated: false, parts },
      };
    });
  };
}
