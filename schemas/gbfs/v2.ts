/**
 * Our GBFS 2.2 files, one schema per file: the requirement's field lists (data-feeds.md §2.4) with
 * the value rules of specs/gbfs/v2.2 (booleans are JSON booleans, region ids strings, as the
 * official schema requires).
 */
import { container, envelope, feedList, lat, lon, multiPolygon, perMinPricing, posix, rentalApps, rentalUris, uri } from './common.js';

const str = { type: 'string', minLength: 1 } as const;
const bool = { type: 'boolean' } as const;
const ids = { type: 'array', items: str } as const;

const gbfsV2Schema = envelope('2.2', {
  type: 'object',
  // one entry per language of the system (docs/gbfs.md)
  minProperties: 1,
  patternProperties: {
    '^[a-z]{2,3}(-[A-Z]{2})?$': {
      type: 'object',
      additionalProperties: false,
      required: ['feeds'],
      properties: {
        feeds: feedList([
          'gbfs',
          'system_information',
          'vehicle_types',
          'gbfs_versions',
          'system_alerts',
          'system_pricing_plans',
          'system_regions',
          'free_bike_status',
          'geofencing_zones',
        ] as const),
      },
    },
  },
  additionalProperties: false,
});

const gbfsVersionsV2Schema = envelope(
  '2.2',
  container('versions', {
    type: 'object',
    additionalProperties: false,
    required: ['version', 'url'],
    properties: { version: { enum: ['2.2', '3.0'] }, url: uri },
  }),
);

const systemInformationV2Schema = envelope('2.2', {
  type: 'object',
  additionalProperties: false,
  required: ['system_id', 'language', 'name', 'operator', 'url', 'email', 'timezone', 'rental_apps'],
  properties: {
    system_id: str,
    language: { type: 'string', pattern: '^[a-z]{2,3}(-[A-Z]{2})?$' },
    name: str,
    operator: str,
    url: uri,
    email: { type: 'string', format: 'email' },
    timezone: str,
    rental_apps: rentalApps,
  },
});

const vehicleTypesV2Schema = envelope(
  '2.2',
  container('vehicle_types', {
    type: 'object',
    additionalProperties: false,
    required: ['vehicle_type_id', 'form_factor', 'propulsion_type', 'name'],
    properties: {
      vehicle_type_id: str,
      form_factor: { enum: ['scooter', 'bicycle'] },
      propulsion_type: { enum: ['human', 'electric_assist', 'electric'] },
      name: str,
      max_range_meters: { type: 'number', minimum: 0 },
    },
    if: { properties: { propulsion_type: { enum: ['electric', 'electric_assist'] } } },
    then: { required: ['max_range_meters'] },
  }),
);

const freeBikeStatusV2Schema = envelope(
  '2.2',
  container('bikes', {
    type: 'object',
    additionalProperties: false,
    required: ['bike_id', 'last_reported', 'lat', 'lon', 'is_reserved', 'is_disabled', 'vehicle_type_id', 'current_range_meters', 'rental_uris'],
    properties: {
      bike_id: str,
      last_reported: posix,
      lat,
      lon,
      is_reserved: bool,
      is_disabled: bool,
      vehicle_type_id: str,
      current_range_meters: { type: 'number', minimum: 0 },
      pricing_plan_id: str,
      rental_uris: rentalUris,
    },
  }),
);

const systemRegionsV2Schema = envelope(
  '2.2',
  container('regions', {
    type: 'object',
    additionalProperties: false,
    required: ['region_id', 'name'],
    properties: { region_id: str, name: str },
  }),
);

const systemPricingPlansV2Schema = envelope(
  '2.2',
  container('plans', {
    type: 'object',
    additionalProperties: false,
    required: ['plan_id', 'name', 'currency', 'price', 'is_taxable', 'description', 'per_min_pricing'],
    properties: {
      plan_id: str,
      name: str,
      currency: { type: 'string', pattern: '^[A-Z]{3}$' },
      price: { type: 'number', minimum: 0 },
      is_taxable: bool,
      description: str,
      per_min_pricing: perMinPricing,
    },
  }),
);

const systemAlertsV2Schema = envelope(
  '2.2',
  container('alerts', {
    type: 'object',
    additionalProperties: false,
    required: ['alert_id', 'type', 'times', 'region_ids', 'station_ids', 'url', 'summary', 'description', 'last_updated'],
    properties: {
      alert_id: str,
      type: { enum: ['system_closure', 'station_closure', 'station_move', 'other'] },
      times: {
        type: 'array',
        minItems: 1,
        items: { type: 'object', additionalProperties: false, required: ['start'], properties: { start: posix, end: posix } },
      },
      region_ids: ids,
      station_ids: ids,
      url: uri,
      summary: str,
      description: str,
      last_updated: posix,
    },
  }),
);

const geofencingZonesV2Schema = envelope('2.2', {
  type: 'object',
  additionalProperties: false,
  required: ['geofencing_zones'],
  properties: {
    geofencing_zones: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'features'],
      properties: {
        type: { const: 'FeatureCollection' },
        features: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['type', 'geometry', 'properties'],
            properties: {
              type: { const: 'Feature' },
              geometry: multiPolygon,
              properties: {
                type: 'object',
                additionalProperties: false,
                required: ['name', 'rules'],
                properties: {
                  name: str,
                  rules: {
                    type: 'array',
                    minItems: 1,
                    items: {
                      type: 'object',
                      additionalProperties: false,
                      required: ['ride_allowed', 'ride_through_allowed'],
                      properties: {
                        vehicle_type_id: { type: 'array', minItems: 1, items: str },
                        ride_allowed: bool,
                        ride_through_allowed: bool,
                        maximum_speed_kph: { type: 'integer', minimum: 0 },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
});

/** Schema of each 2.2 file, by file name. */
export const GBFS_V2_SCHEMAS = {
  gbfs: gbfsV2Schema,
  gbfs_versions: gbfsVersionsV2Schema,
  system_information: systemInformationV2Schema,
  vehicle_types: vehicleTypesV2Schema,
  free_bike_status: freeBikeStatusV2Schema,
  system_regions: systemRegionsV2Schema,
  system_pricing_plans: systemPricingPlansV2Schema,
  system_alerts: systemAlertsV2Schema,
  geofencing_zones: geofencingZonesV2Schema,
} as const;
