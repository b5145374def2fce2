/**
 * Operator information: GET /operator/regions, /operator/meta, /operator/pricing-plans. Zones and
 * tariffs change when an operator edits them, never with a booking: they are read on the streaming
 * replica when there is one (lib/core/replica.ts).
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { sql, type ParamsOf } from '../../lib/core/sql/typed.js';
import type { Input } from '../kit/endpoints.js';
import { readOnReplica } from '../../lib/core/replica.js';
import { rfc3339Utc } from '../../lib/core/clock.js';
import { tariffParts } from './views.js';
import { principalOf } from './auth.js';
import type { TompEndpoint } from './endpoint.js';

const TOMP_VERSION = '1.6.1';

/** An entry of /operator/meta's `endpoints` (TOMP endpointImplementation). */
export interface ListedEndpoint {
  method: 'GET' | 'POST';
  path: string;
  status: 'IMPLEMENTED';
  eventType?: string;
  supportsPaging?: boolean;
  maxPageSize?: number;
}

/** The endpoints /operator/meta lists: every row of the table, once per event type it accepts. */
export function listedEndpoints(rows: readonly TompEndpoint[]): ListedEndpoint[] {
  return rows.flatMap((r) => {
    const base = { method: r.method.toUpperCase() as 'GET' | 'POST', path: r.meta?.path ?? r.path, status: 'IMPLEMENTED' as const };
    const paging = r.meta?.maxPageSize === undefined ? {} : { supportsPaging: true, maxPageSize: r.meta.maxPageSize };
    return r.meta?.eventTypes ? r.meta.eventTypes.map((eventType) => ({ ...base, eventType, ...paging })) : [{ ...base, ...paging }];
  });
}

/** The largest page of /operator/regions. */
export const MAX_PAGE = 1000;

/** Operating zones as regions. A zone boundary of several polygons is shown as its largest polygon (SQL). */
export async function regions(app: AppContext, ctx: Koa.Context, { query }: Input<undefined>): Promise<void> {
  const offset = (query.offset as number | undefined) ?? 0;
  const limit = (query.limit as number | undefined) ?? MAX_PAGE;
  const zones = principalOf(ctx).zones;
  const rows = await readOnReplica(app.db, (db) => db.many(sql('TompOperatingRegions'), [zones]));
  const all: object[] = rows.map((r) => ({
    regionId: r.id,
    name: r.name,
    type: 'OPERATING',
    // no GeoJSON for a boundary without a polygon (ST_Dump yields none)
    serviceArea: r.geojson === null ? null : (JSON.parse(r.geojson) as unknown),
  }));
  if (query.areas === 'city') {
    // the city's rules in force are `areas` rows (migration 000300), read as the engine reads them
    const cityAreas = await readOnReplica(app.db, (db) => db.many(sql('TompCityAreas'), [zones]));
    for (const a of cityAreas)
      all.push({
        regionId: a.id,
        name: a.name,
        type: CITY_AREA_TYPES[a.area_type],
        ...(a.area_type === 'slow-zone' ? { typeUnit: 'KMPH', typeValue: a.max_speed_kph } : {}),
        areaStartTime: rfc3339Utc(a.starts_at),
        ...(a.ends_at ? { areaEndTime: rfc3339Utc(a.ends_at) } : {}),
        serviceArea: JSON.parse(a.geojson) as unknown,
      });
  }
  ctx.body = all.slice(offset, offset + limit);
}

/** The TOMP area type of a city rule's area (TOMP systemRegion.type, since 1.3.0). */
const CITY_AREA_TYPES: Record<string, string> = { 'no-parking': 'NO_PARKING', 'no-riding': 'NO_ACCESS', 'slow-zone': 'SPEEDLIMIT' };

/**
 * One metadata object. AUTO_COMMIT partners see AUTO_COMMIT in processIdentifiers.booking; partners
 * with postponed commit see POSTPONED_COMMIT instead (their bookings wait for a COMMIT event).
 */
export function meta(app: AppContext, ctx: Koa.Context, endpoints: readonly ListedEndpoint[]): void {
  const postponed = principalOf(ctx).tompPostponedCommit;
  ctx.body = [
    {
      version: TOMP_VERSION,
      baseUrl: `${app.config.publicBaseUrl}/edge/tomp`,
      endpoints,
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
}

const FORM_FACTOR_NAMES: Record<string, string> = { scooter: 'e-scooter', bicycle: 'bike' };

/** One plan per operating zone and vehicle type: an unlock fee (FIXED) and a price per minute (FLEX). */
export async function pricingPlans(app: AppContext, ctx: Koa.Context, { query }: Input<undefined>): Promise<void> {
  const { regionId, stationId } = query;
  // we have no stations: a station filter matches nothing
  if (stationId !== undefined) {
    ctx.body = [];
    return;
  }
  const params: ParamsOf<'TompPricingPlans'> = [principalOf(ctx).zones, (regionId as string | undefined) ?? null];
  const rows = await readOnReplica(app.db, (db) => db.many(sql('TompPricingPlans'), params));
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
      description: `${kind} in ${r.zone_name}: ${parts[0].amount} ${currency} to unlock, then ${parts[1].amount} ${currency} per started minute (VAT included)`,
      fare: { estimated: false, parts },
    };
  });
}
