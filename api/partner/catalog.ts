/**
 * Vehicles, pricing and zones (partner-rental-api.md §4). Zones outside the partner's access do not exist for it.
 *
 * Where each read runs (lib/core/replica.ts): the zones, their areas and their list are read on the
 * streaming replica when there is one (they change when an operator edits a zone; a zone the replica
 * does not show yet is looked up on the primary). The vehicle list is rendered there only once the
 * replica has replayed every write its caller could have seen (vehicle-list.ts). A vehicle's lookup, its price and the parking occupancy are read on the primary:
 * they must show a rental started or ended, a booking, a status change the caller could have seen
 * (each is one indexed lookup, so the primary loses nothing), and occupancy counts the vehicles a
 * rental moves.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import type { Db } from '../../lib/core/db.js';
import { sql, type ParamsOf, type RowOf } from '../../lib/core/sql/typed.js';
import type { Input } from '../kit/endpoints.js';
import { lookupOnReplica, readOnReplica } from '../../lib/core/replica.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { isSleeping } from '../../lib/domain/zones.js';
import { AreaOccupancyRecord, dataOf, OperationalZonesRecord, PricingRecord, VehicleRecord, ZoneAreasRecord } from '../../schemas/partner/responses.js';
import { principalOf } from './auth.js';
import { endpoint, idParam, zoneParam, type PartnerEndpoint } from './endpoint.js';
import { presentPricing, presentVehicle } from './responses.js';
import { vehicleListsOf } from './vehicle-list.js';

/** A zone as the partner reads it: PartnerZone and PartnerZones select the same columns. */
type ZoneRow = RowOf<'PartnerZone'> & RowOf<'PartnerZones'>;

function presentZoneInfo(z: ZoneRow, now: Date) {
  return {
    zoneId: z.id,
    zoneName: z.city,
    parkingMode: z.parking_mode,
    licenceVerificationRequired: z.licence_verification_required,
    speedConfig: { maxSpeed: z.max_speed_kph, minRequiredRides: z.min_required_rides, reducedSpeed: z.reduced_speed_kph, speedUnit: z.speed_unit },
    isSleeping: isSleeping({ timezone: z.timezone, sleepWindows: z.sleep_windows, status: z.status }, now),
  };
}

/**
 * The zone row when the partner may access it, with the pool that found it (what belongs to the zone
 * is read from the same one); ZoneNotFound otherwise. `replica`: first from the replica.
 */
async function zoneFor(app: AppContext, ctx: Koa.Context, id: string, where: 'replica' | 'primary'): Promise<{ zone: ZoneRow; db: Db }> {
  const params: ParamsOf<'PartnerZone'> = [id, principalOf(ctx).zones];
  const found =
    where === 'replica' ? await lookupOnReplica(app.db, sql('PartnerZone'), params) : { row: await app.db.maybeOne(sql('PartnerZone'), params), db: app.db };
  if (!found.row) throw new RentalError('ZoneNotFound');
  return { zone: found.row, db: found.db };
}

const zoneId = { zoneId: zoneParam('zone id (see GET /v1/zone/info)') };
const vehicles = (description: string) => ({ 200: { description, schema: dataOf(VehicleRecord, true) } });

function zoneAreas(v: 1 | 2): PartnerEndpoint {
  return endpoint({
    operationId: `getZoneAreasV${v}`,
    method: 'get',
    path: `/v${v}/zone/id/{zoneId}`,
    summary: v === 1 ? 'Zone areas (v1, deprecated)' : 'Zone areas (v2)',
    description:
      (v === 1 ? 'Deprecated: use /v2, which adds the free-floating area type. ' : 'Same as v1 plus the free-floating area type. ') +
      'Zone areas change rarely: do not refresh more often than every 6 hours.',
    tag: 'Zones',
    deprecated: v === 1,
    auth: 'apiKey',
    params: zoneId,
    responses: { 200: { description: 'the areas of the zone', schema: dataOf(ZoneAreasRecord, false) } },
    errors: [],
    handle: async (app, ctx, { params }) => {
      const { zone, db } = await zoneFor(app, ctx, params.zoneId, 'replica');
      const areas = await db.many(sql('PartnerZoneAreas'), [zone.id, v === 2]);
      ctx.body = {
        data: {
          id: zone.id,
          type: 'area',
          attributes: {
            areas: areas.map((a) => ({
              id: a.id,
              type: 'area',
              name: a.name,
              area_type: a.area_type,
              vehicle_types: a.vehicle_types,
              geometry: a.geometry,
              source: a.source,
            })),
          },
        },
      };
    },
  });
}

/** `/v1/zone/id` without an id: the requirement's "zone id empty" row. */
function zoneAreasWithoutId(v: 1 | 2): PartnerEndpoint {
  return endpoint({
    operationId: `getZoneAreasEmptyIdV${v}`,
    method: 'get',
    path: `/v${v}/zone/id`,
    summary: 'Zone areas without a zone id',
    description: 'Always 400 `EmptyZoneID` (the requirement’s “zone id empty” row).',
    tag: 'Zones',
    deprecated: v === 1,
    auth: 'apiKey',
    responses: {},
    errors: [{ 400: ['EmptyZoneID'] }],
    handle: () => {
      throw new RentalError('EmptyZoneID');
    },
  });
}

async function vehicleById(app: AppContext, ctx: Koa.Context, id: string): Promise<RowOf<'PartnerVehicleById'>> {
  const row = await app.db.maybeOne(sql('PartnerVehicleById'), [id, principalOf(ctx).zones]);
  if (!row) throw new RentalError('VehicleNotFound', { status: 404 });
  return row;
}

export const CATALOG_ENDPOINTS: PartnerEndpoint[] = [
  endpoint({
    operationId: 'getVehiclePricing',
    method: 'get',
    path: '/v1/pricing/vehicle/{id}',
    summary: 'Price of a vehicle',
    description: 'Prices are dynamic: do not cache them (`Cache-Control: no-store`), ask when the user needs them.',
    tag: 'Vehicles and pricing',
    auth: 'apiKey',
    params: { id: idParam('vehicle id (UUID v4)', 'InvalidVehicleId') },
    responses: { 200: { description: 'the pricing', schema: dataOf(PricingRecord, false) } },
    errors: [{ 404: ['VehicleNotFound'] }],
    handle: async (app, ctx, { params }) => {
      const row = await vehicleById(app, ctx, params.id);
      ctx.set('Cache-Control', 'no-store'); // prices are dynamic (requirement)
      ctx.body = { data: presentPricing(row) };
    },
  }),
  endpoint({
    operationId: 'listVehicles',
    method: 'get',
    path: '/v1/vehicles',
    summary: 'Vehicles available for rental in a zone',
    description:
      'With their price. Refresh about every 7 seconds. `/v1/vehicles/?zoneID=` (trailing slash) is the same endpoint. A sleeping zone has no available vehicles. The list of a zone is shared by every partner polling it and reflects every rental, booking and vehicle change as soon as it is committed; what changes with time alone (a booking hold expiring, a sleep window opening) shows within VEHICLE_LIST_CACHE_MS (1 s). Ask `/v1/pricing/vehicle/{id}` for the price before a rental, as the requirement says.',
    tag: 'Vehicles and pricing',
    auth: 'apiKey',
    query: { zoneID: zoneParam('zone id') },
    responses: vehicles('the available vehicles'),
    errors: [],
    handle: async (app, ctx, { query }: Input<undefined>) => {
      ctx.type = 'application/json';
      ctx.body = await vehicleListsOf(app).json(query.zoneID as string, principalOf(ctx).zones);
    },
  }),
  endpoint({
    operationId: 'getVehicleByCode',
    method: 'get',
    path: '/v1/vehicles/code/{code}',
    summary: 'Vehicle by its printed code',
    description: 'The 4 characters on the vehicle (also the end of its QR code address); case-insensitive.',
    tag: 'Vehicles and pricing',
    auth: 'apiKey',
    params: {
      code: {
        description: '4 alphanumeric characters',
        schema: { type: 'string', maxLength: 4, pattern: '^[A-Za-z0-9]{4}$' },
        example: 'AB12',
        invalid: 'BadVehicleCode',
      },
    },
    responses: vehicles('the vehicle (an array of one)'),
    errors: [{ 404: ['VehicleNotFound'] }],
    handle: async (app, ctx, { params }) => {
      const row = await app.db.maybeOne(sql('PartnerVehicleByCode'), [params.code.toUpperCase(), principalOf(ctx).zones]);
      if (!row) throw new RentalError('VehicleNotFound', { status: 404 });
      ctx.body = { data: [presentVehicle(row)] };
    },
  }),
  endpoint({
    operationId: 'getVehicleById',
    method: 'get',
    path: '/v1/vehicles/id/{id}',
    summary: 'Vehicle by id',
    description: 'A vehicle of the partner’s zones with its price, as an array of one; a vehicle outside them is 404 VehicleNotFound.',
    tag: 'Vehicles and pricing',
    auth: 'apiKey',
    params: { id: idParam('vehicle id (UUID v4)', 'InvalidVehicleID') },
    responses: vehicles('the vehicle (an array of one)'),
    errors: [{ 404: ['VehicleNotFound'] }],
    handle: async (app, ctx, { params }) => {
      ctx.body = { data: [presentVehicle(await vehicleById(app, ctx, params.id))] };
    },
  }),
  zoneAreas(1),
  zoneAreas(2),
  zoneAreasWithoutId(1),
  zoneAreasWithoutId(2),
  endpoint({
    operationId: 'getAreasOccupancy',
    method: 'get',
    path: '/v1/zone/id/{zoneId}/areasOccupancy',
    summary: 'Occupancy of the parking spots of a zone',
    description: 'For each parking-spot area of the zone: the scooters parked there now and its capacity. A zone without parking spots answers an empty list.',
    tag: 'Zones',
    auth: 'apiKey',
    params: zoneId,
    responses: { 200: { description: 'one record per parking-spot area', schema: dataOf(AreaOccupancyRecord, true) } },
    errors: [],
    handle: async (app, ctx, { params }) => {
      const { zone } = await zoneFor(app, ctx, params.zoneId, 'primary');
      const rows = await app.db.many(sql('PartnerAreasOccupancy'), [zone.id]);
      ctx.body = { data: rows.map((r) => ({ id: r.id, occupancy: r.occupancy, capacity: r.capacity })) };
    },
  }),
  endpoint({
    operationId: 'getOperationalZones',
    method: 'get',
    path: '/v1/zone/info',
    summary: 'The operational zones the partner can access',
    description:
      'Each zone the key gives access to, with its parking mode, whether rentals need a verified licence, its speed settings and whether it is sleeping now.',
    tag: 'Zones',
    auth: 'apiKey',
    responses: { 200: { description: 'the zones', schema: dataOf(OperationalZonesRecord, false) } },
    errors: [],
    handle: async (app, ctx) => {
      const principal = principalOf(ctx);
      const now = app.clock.now();
      const zones = await readOnReplica(app.db, (db) => db.many(sql('PartnerZones'), [principal.zones]));
      ctx.body = { data: { id: principal.partnerId, type: 'zone', attributes: { zones: zones.map((z) => presentZoneInfo(z, now)) } } };
    },
  }),
];
