/** Vehicles, pricing and zones (partner-rental-api.md §4). Zones outside the partner's access do not exist for it. */
import type { Router, RouterMiddleware as Mw, RouterContext } from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { q, type Row } from '../../lib/db.js';
import { RentalError, requireUuid } from '../../lib/rentals/errors.js';
import { isSleeping } from '../../lib/zones.js';
import { principalOf } from './auth.js';
import { presentPricing, presentVehicle } from './responses.js';

const ZONE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

function presentZoneInfo(z: Row, now: Date) {
  return {
    zoneId: z.id as string,
    zoneName: z.city as string,
    parkingMode: z.parking_mode as string,
    licenceVerificationRequired: z.licence_verification_required as boolean,
    speedConfig: { maxSpeed: z.max_speed_kph, minRequiredRides: z.min_required_rides, reducedSpeed: z.reduced_speed_kph, speedUnit: z.speed_unit },
    isSleeping: isSleeping({ timezone: z.timezone, sleepWindows: z.sleep_windows, status: z.status }, now),
  };
}

export function catalogRoutes(router: Router, app: AppContext, auth: Mw): void {
  /** The zone row when it exists and the partner may access it; EmptyZoneID / ZoneNotFound otherwise. */
  async function zoneFor(ctx: RouterContext, raw: unknown): Promise<Row> {
    // NUL is the router's placeholder of an empty path segment (api/partner/router.ts)
    if (typeof raw !== 'string' || raw.replace(/\0/g, '').trim() === '') throw new RentalError('EmptyZoneID');
    if (!ZONE_ID.test(raw)) throw new RentalError('ZoneNotFound');
    const zone = await app.db.maybeOne(q('PartnerZone'), [raw, principalOf(ctx).zones]);
    if (!zone) throw new RentalError('ZoneNotFound');
    return zone;
  }

  router.get('/v1/pricing/vehicle/:id', auth, async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidVehicleId');
    const row = await app.db.maybeOne(q('PartnerVehicleById'), [id, principalOf(ctx).zones]);
    if (!row) throw new RentalError('VehicleNotFound', { status: 404 });
    ctx.set('Cache-Control', 'no-store'); // prices are dynamic (requirement)
    ctx.body = { data: presentPricing(row) };
  });

  router.get('/v1/vehicles', auth, async (ctx) => {
    const raw = ctx.query.zoneID;
    if (typeof raw !== 'string' || raw.trim() === '') throw new RentalError('EmptyZoneID');
    if (!ZONE_ID.test(raw)) throw new RentalError('ZoneNotFound');
    const now = app.clock.now();
    // zone and vehicles in one round trip (see the query)
    const rows = await app.db.many(q('PartnerAvailableVehicles'), [raw, now, principalOf(ctx).zones]);
    const zone = rows[0];
    if (!zone) throw new RentalError('ZoneNotFound');
    // a sleeping zone has no available vehicles
    const sleeping = isSleeping({ timezone: zone.timezone, sleepWindows: zone.sleep_windows, status: zone.zone_status }, now);
    ctx.body = { data: sleeping || zone.id === null ? [] : rows.map(presentVehicle) };
  });

  router.get('/v1/vehicles/code/:code', auth, async (ctx) => {
    const code = String(ctx.params.code);
    if (!/^[A-Za-z0-9]{4}$/.test(code)) throw new RentalError('BadVehicleCode');
    const row = await app.db.maybeOne(q('PartnerVehicleByCode'), [code.toUpperCase(), principalOf(ctx).zones]);
    if (!row) throw new RentalError('VehicleNotFound', { status: 404 });
    ctx.body = { data: [presentVehicle(row)] };
  });

  router.get('/v1/vehicles/id/:id', auth, async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidVehicleID');
    const row = await app.db.maybeOne(q('PartnerVehicleById'), [id, principalOf(ctx).zones]);
    if (!row) throw new RentalError('VehicleNotFound', { status: 404 });
    ctx.body = { data: [presentVehicle(row)] };
  });

  const zoneAreas = (withFreeFloating: boolean): Mw => async (ctx) => {
    const zone = await zoneFor(ctx, ctx.params.zoneId);
    const areas = await app.db.many(q('PartnerZoneAreas'), [zone.id, withFreeFloating]);
    ctx.body = {
      data: {
        id: zone.id,
        type: 'area',
        attributes: {
          areas: areas.map((a) => ({ id: a.id, type: 'area', name: a.name, area_type: a.area_type, vehicle_types: a.vehicle_types, geometry: a.geometry })),
        },
      },
    };
  };
  const emptyZone: Mw = async () => {
    throw new RentalError('EmptyZoneID');
  };
  router.get('/v1/zone/id/:zoneId', auth, zoneAreas(false));
  router.get('/v2/zone/id/:zoneId', auth, zoneAreas(true));
  router.get('/v1/zone/id', auth, emptyZone);
  router.get('/v2/zone/id', auth, emptyZone);

  router.get('/v1/zone/id/:zoneId/areasOccupancy', auth, async (ctx) => {
    const zone = await zoneFor(ctx, ctx.params.zoneId);
    const rows = await app.db.many(q('PartnerAreasOccupancy'), [zone.id]);
    ctx.body = { data: rows.map((r) => ({ id: r.id as string, occupancy: r.occupancy as number, capacity: r.capacity as number })) };
  });

  router.get('/v1/zone/info', auth, async (ctx) => {
    const principal = principalOf(ctx);
    const now = app.clock.now();
    const zones = await app.db.many(q('PartnerZones'), [principal.zones]);
    ctx.body = { data: { id: principal.partnerId, type: 'zone', attributes: { zones: zones.map((z) => presentZoneInfo(z, now)) } } };
  });
}
