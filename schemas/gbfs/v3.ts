/**
 * Our GBFS 3.0 files, one schema per file: the requirement's field lists (data-feeds.md §2.5) with
 * the value rules of specs/gbfs/v3.0. The publisher validates every file against these before
 * storing it.
 */
import {
  container,
  envelope,
  feedList,
  lat,
  localized,
  localizedUri,
  lon,
  multiPolygon,
  perMinPricing,
  rentalApps,
  rentalUris,
  rfc3339,
  uri,
} from './common.js';

const str = { type: 'string', minLength: 1 } as const;
const bool = { type: 'boolean' } as const;
const nonNegInt = { type: 'integer', minimum: 0 } as const;
const ids = { type: 'array', items: str } as const;

const gbfsV3Schema = envelope('3.0', {
  type: 'object',
  additionalProperties: false,
  required: ['feeds'],
  properties: {
    feeds: feedList([
      'gbfs',
      'gbfs_versions',
      'system_information',
      'vehicle_types',
      'station_information',
      'station_status',
      'vehicle_status',
      'system_regions',
      'system_pricing_plans',
      'system_alerts',
      'geofencing_zones',
    ] as const),
  },
});

const gbfsVersionsV3Schema = envelope(
  '3.0',
  container('versions', {
    type: 'object',
    additionalProperties: false,
    required: ['version', 'url'],
    properties: { version: { enum: ['2.2', '3.0'] }, url: uri },
  }),
);

const systemInformationV3Schema = envelope('3.0', {
  type: 'object',
  additionalProperties: false,
  required: [
    'system_id',
    'languages',
    'name',
    'operator',
    'attribution_organization_name',
    'attribution_url',
    'email',
    'feed_contact_email',
    'opening_hours',
    'timezone',
    'rental_apps',
    'manifest_url',
  ],
  properties: {
    system_id: str,
    manifest_url: uri,
    languages: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[a-z]{2,3}(-[A-Z]{2})?$' } },
    name: localized,
    operator: localized,
    attribution_organization_name: localized,
    attribution_url: uri,
    email: { type: 'string', format: 'email' },
    feed_contact_email: { type: 'string', format: 'email' },
    opening_hours: str,
    timezone: str,
    rental_apps: rentalApps,
  },
});

const vehicleTypesV3Schema = envelope(
  '3.0',
  container('vehicle_types', {
    type: 'object',
    additionalProperties: false,
    required: [
      'vehicle_type_id',
      'form_factor',
      'propulsion_type',
      'name',
      'make',
      'model',
      'description',
      'color',
      'eco_labels',
      'max_range_meters',
      'max_permitted_speed',
      'rated_power',
      'wheel_count',
      'rider_capacity',
      'default_reserve_time',
      'return_constraint',
      'vehicle_assets',
      'pricing_plan_ids',
    ],
    properties: {
      vehicle_type_id: str,
      form_factor: { enum: ['bicycle', 'scooter_standing'] },
      propulsion_type: { enum: ['human', 'electric_assist', 'electric'] },
      name: localized,
      make: localized,
      model: localized,
      description: localized,
      color: str,
      // always empty (no label is published), typed as GBFS 3.0 defines a label
      eco_labels: {
        type: 'array',
        maxItems: 0,
        items: {
          type: 'object',
          required: ['country_code', 'eco_sticker'],
          properties: { country_code: { type: 'string', pattern: '^[A-Z]{2}$' }, eco_sticker: { type: 'string' } },
        },
      },
      max_range_meters: { type: 'number', minimum: 0 },
      max_permitted_speed: nonNegInt,
      rated_power: nonNegInt,
      wheel_count: nonNegInt,
      rider_capacity: nonNegInt,
      default_reserve_time: nonNegInt,
      return_constraint: { enum: ['free_floating', 'any_station'] },
      vehicle_assets: {
        type: 'object',
        additionalProperties: false,
        required: ['icon_url', 'icon_last_modified'],
        properties: { icon_url: uri, icon_last_modified: { type: 'string', format: 'date' } },
      },
      default_pricing_plan_id: str,
      pricing_plan_ids: ids,
    },
  }),
);

const stationInformationV3Schema = envelope(
  '3.0',
  container('stations', {
    type: 'object',
    additionalProperties: false,
    required: ['station_id', 'name', 'lat', 'lon', 'is_virtual_station', 'station_area', 'capacity'],
    properties: { station_id: str, name: localized, lat, lon, is_virtual_station: bool, station_area: multiPolygon, capacity: nonNegInt },
  }),
);

const stationStatusV3Schema = envelope(
  '3.0',
  container('stations', {
    type: 'object',
    additionalProperties: false,
    required: ['station_id', 'is_installed', 'is_renting', 'is_returning', 'last_reported', 'num_vehicles_available', 'vehicle_types_available'],
    properties: {
      station_id: str,
      is_installed: bool,
      is_renting: bool,
      is_returning: bool,
      last_reported: rfc3339,
      num_vehicles_available: nonNegInt,
      vehicle_types_available: {
        type: 'array',
        items: { type: 'object', additionalProperties: false, required: ['vehicle_type_id', 'count'], properties: { vehicle_type_id: str, count: nonNegInt } },
      },
    },
  }),
);

const vehicleStatusV3Schema = envelope(
  '3.0',
  container('vehicles', {
    type: 'object',
    additionalProperties: false,
    required: [
      'vehicle_id',
      'vehicle_type_id',
      'lat',
      'lon',
      'is_reserved',
      'is_disabled',
      'current_fuel_percent',
      'current_range_meters',
      'last_reported',
      'rental_uris',
    ],
    properties: {
      vehicle_id: str,
      vehicle_type_id: str,
      lat,
      lon,
      is_reserved: bool,
      is_disabled: bool,
      current_fuel_percent: { type: 'number', minimum: 0, maximum: 1 },
      current_range_meters: { type: 'number', minimum: 0 },
      last_reported: rfc3339,
      rental_uris: rentalUris,
      station_id: str,
    },
  }),
);

const systemRegionsV3Schema = envelope(
  '3.0',
  container('regions', {
    type: 'object',
    additionalProperties: false,
    required: ['region_id', 'name'],
    properties: { region_id: str, name: localized },
  }),
);

const systemPricingPlansV3Schema = envelope(
  '3.0',
  container('plans', {
    type: 'object',
    additionalProperties: false,
    required: ['plan_id', 'name', 'description', 'currency', 'price', 'is_taxable', 'surge_pricing', 'per_min_pricing'],
    properties: {
      plan_id: str,
      name: localized,
      description: localized,
      currency: { type: 'string', pattern: '^[A-Z]{3}$' },
      price: { type: 'number', minimum: 0 },
      is_taxable: bool,
      surge_pricing: bool,
      per_min_pricing: perMinPricing,
    },
  }),
);

const systemAlertsV3Schema = envelope(
  '3.0',
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
        items: { type: 'object', additionalProperties: false, required: ['start'], properties: { start: rfc3339, end: rfc3339 } },
      },
      region_ids: ids,
      station_ids: ids,
      url: localizedUri,
      summary: localized,
      description: localized,
      last_updated: rfc3339,
    },
  }),
);

const ruleV3 = {
  type: 'object',
  additionalProperties: false,
  required: ['ride_start_allowed', 'ride_end_allowed', 'ride_through_allowed', 'station_parking'],
  properties: {
    vehicle_type_ids: { type: 'array', minItems: 1, items: str },
    ride_start_allowed: bool,
    ride_end_allowed: bool,
    ride_through_allowed: bool,
    station_parking: bool,
    maximum_speed_kph: nonNegInt,
  },
} as const;

const geofencingZonesV3Schema = envelope('3.0', {
  type: 'object',
  additionalProperties: false,
  required: ['geofencing_zones', 'global_rules'],
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
                properties: { name: localized, rules: { type: 'array', minItems: 1, items: ruleV3 } },
              },
            },
          },
        },
      },
    },
    global_rules: { type: 'array', minItems: 1, items: ruleV3 },
  },
});

/**
 * manifest.json (GBFS 3.0: required from a publisher of more than one dataset, one per zone here):
 * the datasets a caller may read, each with its versions (sorted) and their discovery URLs. Served at
 * one URL for every zone (/v1/partner-apis/gbfs/manifest.json), so not one of the per-zone files.
 */
export const manifestV3Schema = envelope('3.0', {
  type: 'object',
  additionalProperties: false,
  required: ['datasets'],
  properties: {
    datasets: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['system_id', 'versions'],
        properties: {
          system_id: str,
          versions: {
            type: 'array',
            minItems: 1,
            items: { type: 'object', additionalProperties: false, required: ['version', 'url'], properties: { version: { enum: ['2.2', '3.0'] }, url: uri } },
          },
        },
      },
    },
  },
});

/** Schema of each 3.0 file, by file name. */
export const GBFS_V3_SCHEMAS = {
  gbfs: gbfsV3Schema,
  gbfs_versions: gbfsVersionsV3Schema,
  system_information: systemInformationV3Schema,
  vehicle_types: vehicleTypesV3Schema,
  station_information: stationInformationV3Schema,
  station_status: stationStatusV3Schema,
  vehicle_status: vehicleStatusV3Schema,
  system_regions: systemRegionsV3Schema,
  system_pricing_plans: systemPricingPlansV3Schema,
  system_alerts: systemAlertsV3Schema,
  geofencing_zones: geofencingZonesV3Schema,
} as const;
