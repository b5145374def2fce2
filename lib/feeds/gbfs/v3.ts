/**
 * GBFS 3.0 files of one zone (requirement §2.5, spec in specs/gbfs/v3.0). Each builder returns the
 * `data` member; the envelope (last_updated, ttl, version) is added by `envelopeV3`.
 */
import { canRead, type Role } from '../roles.js';
import {
  currentRangeMeters,
  loc,
  planId,
  priceDescription,
  rentalApps,
  rentalUris,
  stationCounts,
  vehicleFlags,
  zoneAlerts,
  zoneLanguages,
  zoneRentable,
  type BuildEnv,
} from './common.js';
import { V3_FILES, manifestUrl, v2Url, v3Url, type V3File } from './files.js';
import { systemInformationV2, type V2Scope } from './v2.js';
import { areaRule, areaVehicleTypeIds, globalRule, orderedAreas, type Rule } from './geofencing.js';
import type { GbfsVehicle, ZoneData } from './model.js';
import { openingHours } from './time.js';
import { toMajor } from '../../domain/money.js';
import { rfc3339Utc } from '../../core/clock.js';

export function envelopeV3(lastUpdated: Date, ttl: number, data: unknown): Record<string, unknown> {
  return { last_updated: rfc3339Utc(lastUpdated), ttl, version: '3.0', data };
}

/** gbfs.json for a role: only the files the role may read (gbfs itself always). */
function gbfsV3(z: ZoneData, env: BuildEnv, role: Role) {
  const feeds = V3_FILES.filter((f) => f === 'gbfs' || canRead(role, { family: 'gbfs', version: '3.0', file: f })).map((name) => ({
    name,
    url: v3Url(env.publicBaseUrl, z.zone.id, name),
  }));
  return { feeds };
}

/**
 * Versions of this system only (system_id `{provider}:{zone}`). The 2.2 feed is published per
 * client scope at one URL whose system depends on the caller, so no 2.2 URL names this zone's
 * system for every reader of this file: the caller's manifest.json says which 2.2 system it reads.
 */
function gbfsVersionsV3(z: ZoneData, env: BuildEnv) {
  return { versions: [{ version: '3.0', url: v3Url(env.publicBaseUrl, z.zone.id, 'gbfs') }] };
}

/**
 * The caller's manifest: one dataset per zone of its client scope (3.0, system `{provider}:{zone}`),
 * and its 2.2 system; a one-zone scope's 2.2 system is that zone's, so one dataset with both versions.
 */
export function manifestV3(s: V2Scope, env: BuildEnv) {
  const datasets = s.zones.map((z) => ({
    system_id: `${env.providerId}:${z.zone.id}`,
    versions: [{ version: '3.0', url: v3Url(env.publicBaseUrl, z.zone.id, 'gbfs') }],
  }));
  const v2 = { version: '2.2', url: v2Url(env.publicBaseUrl, 'gbfs') };
  const systemId = systemInformationV2(s, env).system_id;
  const same = datasets.find((d) => d.system_id === systemId);
  if (same) same.versions.unshift(v2);
  else datasets.push({ system_id: systemId, versions: [v2] });
  return { datasets };
}

function systemInformationV3(z: ZoneData, env: BuildEnv) {
  const { zone } = z;
  return {
    system_id: `${env.providerId}:${zone.id}`,
    // GBFS 3.0: required from a publisher of more than one dataset (one per zone)
    manifest_url: manifestUrl(env.publicBaseUrl),
    languages: zoneLanguages(zone.language),
    name: loc(`${env.providerName} ${zone.name}`, zone.language),
    operator: loc(env.providerName, zone.language),
    attribution_organization_name: loc(env.providerName, zone.language),
    attribution_url: env.publicBaseUrl,
    email: zone.supportEmail,
    feed_contact_email: zone.supportEmail,
    opening_hours: openingHours(zone.sleepWindows),
    timezone: zone.timezone,
    rental_apps: rentalApps(env.publicBaseUrl),
  };
}

function vehicleTypesV3(z: ZoneData, env: BuildEnv) {
  const { zone } = z;
  const priced = new Set(z.prices.map((p) => p.vehicleTypeId));
  return {
    vehicle_types: z.types.map((t) => {
      const plan = priced.has(t.id) ? planId(zone.id, t.id) : undefined;
      return {
        vehicle_type_id: t.id,
        // the 3.0 enum has no plain `scooter` (specs/gbfs/README.md)
        form_factor: t.formFactor === 'scooter' ? 'scooter_standing' : 'bicycle',
        propulsion_type: t.propulsionType,
        name: loc(t.name, zone.language),
        make: loc(t.make, zone.language),
        model: loc(t.model, zone.language),
        description: loc(`${t.make} ${t.model}`, zone.language),
        color: t.color,
        eco_labels: [],
        max_range_meters: t.maxRangeMeters,
        max_permitted_speed: Math.min(t.maxSpeedKph, zone.maxSpeedKph),
        rated_power: t.ratedPowerW,
        wheel_count: t.wheelCount,
        rider_capacity: t.riderCapacity,
        // vehicles cannot be pre-booked (partner API): no reservation time
        default_reserve_time: 0,
        return_constraint: zone.parkingMode === 'parking-spot' ? 'any_station' : 'free_floating',
        vehicle_assets: { icon_url: `${env.publicBaseUrl}/assets/vehicle-types/${t.id}.svg`, icon_last_modified: '2026-01-01' },
        ...(plan ? { default_pricing_plan_id: plan, pricing_plan_ids: [plan] } : { pricing_plan_ids: [] }),
      };
    }),
  };
}

function stationInformationV3(z: ZoneData) {
  const { zone } = z;
  return {
    stations: z.areas
      .filter((a) => a.areaType === 'parking-spot')
      .map((a) => ({
        station_id: a.id,
        name: loc(a.name, zone.language),
        lat: a.lat,
        lon: a.lon,
        // a painted parking area, no docks
        is_virtual_station: true,
        station_area: a.geometry,
        capacity: a.capacity ?? 0,
      })),
  };
}

function stationStatusV3(z: ZoneData) {
  const renting = zoneRentable(z);
  return {
    stations: stationCounts(z).map((c) => ({
      station_id: c.stationId,
      is_installed: true,
      is_renting: renting,
      // a ride can always be ended at a station, also while the zone sleeps
      is_returning: true,
      last_reported: rfc3339Utc(c.lastReported),
      num_vehicles_available: c.available,
      vehicle_types_available: [...c.byType].map(([vehicle_type_id, count]) => ({ vehicle_type_id, count })),
    })),
  };
}

/**
 * One vehicle of vehicle_status. What it reads of the zone (its flags: status, sleep window, minimum
 * battery) and of `env` (the base URL) is what publisher/feeds/gbfs/vehicles.ts keys its blocks by.
 */
export function vehicleStatusItemV3(z: ZoneData, env: BuildEnv, v: GbfsVehicle) {
  const f = vehicleFlags(z, v);
  return {
    vehicle_id: v.gbfsId,
    vehicle_type_id: v.vehicleTypeId,
    lat: v.lat,
    lon: v.lon,
    is_reserved: f.isReserved,
    is_disabled: f.isDisabled,
    current_fuel_percent: v.batteryPercent / 100,
    current_range_meters: currentRangeMeters(v),
    last_reported: rfc3339Utc(v.lastSeenAt),
    rental_uris: rentalUris(env.publicBaseUrl, v.gbfsId),
    ...(v.stationId ? { station_id: v.stationId } : {}),
  };
}

function vehicleStatusV3(z: ZoneData, env: BuildEnv) {
  return { vehicles: z.vehicles.map((v) => vehicleStatusItemV3(z, env, v)) };
}

function systemRegionsV3(z: ZoneData) {
  return { regions: [{ region_id: z.zone.id, name: loc(z.zone.name, z.zone.language) }] };
}

function systemPricingPlansV3(z: ZoneData) {
  const { zone } = z;
  const names = new Map(z.types.map((t) => [t.id, t.name]));
  return {
    plans: z.prices.map((p) => ({
      plan_id: planId(zone.id, p.vehicleTypeId),
      name: loc(`${names.get(p.vehicleTypeId) ?? p.vehicleTypeId} ${zone.name}`, zone.language),
      description: [priceDescription(p.startPrice, p.pricePerMinute, zone.currency, zone.language)],
      currency: zone.currency,
      price: toMajor(p.startPrice, zone.currency),
      // prices include VAT: no tax is added on top
      is_taxable: false,
      surge_pricing: false,
      per_min_pricing: [{ start: 0, rate: toMajor(p.pricePerMinute, zone.currency), interval: 1 }],
    })),
  };
}

function systemAlertsV3(z: ZoneData, env: BuildEnv) {
  return {
    alerts: zoneAlerts(z).map((a) => ({
      alert_id: a.id,
      type: a.type,
      times: [{ start: rfc3339Utc(a.start), ...(a.end ? { end: rfc3339Utc(a.end) } : {}) }],
      region_ids: [a.zoneId],
      station_ids: z.stations.map((s) => s.id),
      url: loc(env.publicBaseUrl, z.zone.language),
      summary: loc(a.summary, a.language),
      description: loc(a.description, a.language),
      last_updated: rfc3339Utc(a.lastUpdated),
    })),
  };
}

function ruleV3(rule: Rule, vehicleTypeIds: string[] | undefined) {
  return {
    ...(vehicleTypeIds ? { vehicle_type_ids: vehicleTypeIds } : {}),
    ride_start_allowed: rule.rideStartAllowed,
    ride_end_allowed: rule.rideEndAllowed,
    ride_through_allowed: rule.rideThroughAllowed,
    station_parking: rule.stationParking,
    ...(rule.maximumSpeedKph !== undefined ? { maximum_speed_kph: rule.maximumSpeedKph } : {}),
  };
}

export function geofencingZonesV3(z: ZoneData) {
  const { zone } = z;
  const features = [];
  for (const a of orderedAreas(z.areas)) {
    const ids = areaVehicleTypeIds(a, z.types);
    if (ids?.length === 0) continue;
    features.push({
      type: 'Feature',
      geometry: a.geometry,
      properties: { name: loc(a.name, zone.language), rules: [ruleV3(areaRule(a, zone), ids)] },
    });
  }
  const allTypes = z.types.map((t) => t.id);
  return {
    geofencing_zones: { type: 'FeatureCollection', features },
    global_rules: [ruleV3(globalRule(zone), allTypes.length ? allTypes : undefined)],
  };
}

/** The `data` of a 3.0 file (role only matters for gbfs). */
export function buildV3(file: V3File, z: ZoneData, env: BuildEnv, role: Role): unknown {
  switch (file) {
    case 'gbfs':
      return gbfsV3(z, env, role);
    case 'gbfs_versions':
      return gbfsVersionsV3(z, env);
    case 'system_information':
      return systemInformationV3(z, env);
    case 'vehicle_types':
      return vehicleTypesV3(z, env);
    case 'station_information':
      return stationInformationV3(z);
    case 'station_status':
      return stationStatusV3(z);
    case 'vehicle_status':
      return vehicleStatusV3(z, env);
    case 'system_regions':
      return systemRegionsV3(z);
    case 'system_pricing_plans':
      return systemPricingPlansV3(z);
    case 'system_alerts':
      return systemAlertsV3(z, env);
    case 'geofencing_zones':
      return geofencingZonesV3(z);
  }
}
