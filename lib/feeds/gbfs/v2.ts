/**
 * GBFS 2.2 files of one region scope (requirement §2.4, spec in specs/gbfs/v2.2): the zones a
 * feed client may read, merged. Regions are the zones; vehicles carry no region (2.2 has none on
 * free_bike_status). The first zone (by id) gives the system's time zone and default language.
 * A system whose zones speak several languages is published once per language, as GBFS 2.2 does
 * it: gbfs.json is keyed by language, each language's files at /gbfs/v2/{language}/{file}.json
 * carry texts in that language (one support e-mail per system, whatever the language).
 */
import { canRead, type Role } from '../roles.js';
import { currentRangeMeters, planId, priceDescription, rentalApps, rentalUris, vehicleFlags, zoneAlerts, type BuildEnv } from './common.js';
import { V2_FILES, v2LanguageUrl, v2Url, v3Url, type V2File } from './files.js';
import { phrasesFor } from './phrases.js';
import { toMajor } from '../../domain/money.js';
import { areaRule, areaVehicleTypeIds, orderedAreas } from './geofencing.js';
import type { GbfsVehicle, GbfsVehicleType, ZoneData } from './model.js';
import { posix } from './time.js';

export interface V2Scope {
  /** gbfs_snapshots scope: gbfsV2Scope(role, zones), or v2LanguageScope of it for one language */
  id: string;
  /** gbfsV2Scope(role, zones): the client scope, whatever the language */
  clientScope: string;
  role: Role;
  /** null: every zone */
  zoneIds: string[] | null;
  /** the scope's zones that exist, ordered by id */
  zones: ZoneData[];
  /** the language of this rendering's texts */
  language: string;
  /** every language of the system, the default (the first zone's) first */
  languages: string[];
}

/** The languages of a system's texts: each zone's (English where a zone's has no phrase table), first zone first. */
export function systemLanguages(zones: readonly ZoneData[]): string[] {
  return [...new Set(zones.map((z) => phrasesFor(z.zone.language).language))];
}

export function envelopeV2(lastUpdated: Date, ttl: number, data: unknown): Record<string, unknown> {
  return { last_updated: posix(lastUpdated), ttl, version: '2.2', data };
}

/** Discovery: one entry per language; a one-language system keeps the plain /gbfs/v2/{file}.json URLs. */
function gbfsV2(s: V2Scope, env: BuildEnv) {
  const names = V2_FILES.filter((f) => f === 'gbfs' || canRead(s.role, { family: 'gbfs', version: '2.2', file: f }));
  const several = s.languages.length > 1;
  return Object.fromEntries(
    s.languages.map((lang) => [
      lang,
      { feeds: names.map((name) => ({ name, url: several ? v2LanguageUrl(env.publicBaseUrl, lang, name) : v2Url(env.publicBaseUrl, name) })) },
    ]),
  );
}

function gbfsVersionsV2(s: V2Scope, env: BuildEnv) {
  const versions = [{ version: '2.2', url: v2Url(env.publicBaseUrl, 'gbfs') }];
  // 3.0 is published per zone: it is the same system only when the scope is one zone
  if (s.zones.length === 1) versions.push({ version: '3.0', url: v3Url(env.publicBaseUrl, s.zones[0].zone.id, 'gbfs') });
  return { versions };
}

export function systemInformationV2(s: V2Scope, env: BuildEnv) {
  const first = s.zones[0]?.zone;
  const zoneIds = s.zones.map((z) => z.zone.id);
  return {
    // stable and unique per zone set; the role is not part of the system
    system_id: s.zoneIds === null ? env.providerId : `${env.providerId}:${zoneIds.join('+')}`,
    language: s.language,
    name: s.zones.length === 1 ? `${env.providerName} ${first.name}` : env.providerName,
    operator: env.providerName,
    url: env.publicBaseUrl,
    email: first?.supportEmail ?? 'support@example.com',
    timezone: first?.timezone ?? 'UTC',
    rental_apps: rentalApps(env.publicBaseUrl),
  };
}

/** Every type of every zone, once. */
function scopeTypes(s: V2Scope): GbfsVehicleType[] {
  const byId = new Map<string, GbfsVehicleType>();
  for (const z of s.zones) for (const t of z.types) byId.set(t.id, t);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
}

function vehicleTypesV2(s: V2Scope) {
  return {
    vehicle_types: scopeTypes(s).map((t) => ({
      vehicle_type_id: t.id,
      form_factor: t.formFactor,
      propulsion_type: t.propulsionType,
      name: t.name,
      // required by the schema for motorised types; a human-powered type has no range
      ...(t.propulsionType === 'human' ? {} : { max_range_meters: t.maxRangeMeters }),
    })),
  };
}

/** The vehicle types a zone prices: a bike of one of them names its pricing plan. */
export function pricedTypes(z: ZoneData): ReadonlySet<string> {
  return new Set(z.prices.map((p) => p.vehicleTypeId));
}

/**
 * One vehicle of free_bike_status. What it reads of the zone (its id, its flags: status, sleep
 * window, minimum battery; the priced types) and of `env` (the base URL) is what
 * publisher/feeds/gbfs/vehicles.ts keys its blocks by.
 */
export function freeBikeItemV2(z: ZoneData, env: BuildEnv, priced: ReadonlySet<string>, v: GbfsVehicle) {
  const f = vehicleFlags(z, v);
  return {
    bike_id: v.gbfsId,
    last_reported: posix(v.lastSeenAt),
    lat: v.lat,
    lon: v.lon,
    is_reserved: f.isReserved,
    is_disabled: f.isDisabled,
    vehicle_type_id: v.vehicleTypeId,
    current_range_meters: currentRangeMeters(v),
    ...(priced.has(v.vehicleTypeId) ? { pricing_plan_id: planId(z.zone.id, v.vehicleTypeId) } : {}),
    rental_uris: rentalUris(env.publicBaseUrl, v.gbfsId),
  };
}

function freeBikeStatusV2(s: Pick<V2Scope, 'zones'>, env: BuildEnv) {
  const bikes = [];
  for (const z of s.zones) {
    const priced = pricedTypes(z);
    for (const v of z.vehicles) bikes.push(freeBikeItemV2(z, env, priced, v));
  }
  return { bikes };
}

function systemRegionsV2(s: V2Scope) {
  return { regions: s.zones.map((z) => ({ region_id: z.zone.id, name: z.zone.name })) };
}

function systemPricingPlansV2(s: V2Scope) {
  const plans = [];
  for (const z of s.zones) {
    const { zone } = z;
    const names = new Map(z.types.map((t) => [t.id, t.name]));
    for (const p of z.prices) {
      plans.push({
        plan_id: planId(zone.id, p.vehicleTypeId),
        name: `${names.get(p.vehicleTypeId) ?? p.vehicleTypeId} ${zone.name}`,
        currency: zone.currency,
        price: toMajor(p.startPrice, zone.currency),
        is_taxable: false,
        description: priceDescription(p.startPrice, p.pricePerMinute, zone.currency, s.language).text,
        per_min_pricing: [{ start: 0, rate: toMajor(p.pricePerMinute, zone.currency), interval: 1 }],
      });
    }
  }
  return { plans };
}

function systemAlertsV2(s: V2Scope, env: BuildEnv) {
  const alerts = [];
  for (const z of s.zones) {
    for (const a of zoneAlerts(z, s.language)) {
      alerts.push({
        alert_id: a.id,
        type: a.type,
        times: [{ start: posix(a.start), ...(a.end ? { end: posix(a.end) } : {}) }],
        region_ids: [a.zoneId],
        station_ids: z.stations.map((st) => st.id),
        url: env.publicBaseUrl,
        summary: a.summary,
        description: a.description,
        last_updated: posix(a.lastUpdated),
      });
    }
  }
  return { alerts };
}

export function geofencingZonesV2(s: Pick<V2Scope, 'zones'>) {
  const features = [];
  for (const z of s.zones) {
    for (const a of orderedAreas(z.areas)) {
      const ids = areaVehicleTypeIds(a, z.types);
      if (ids?.length === 0) continue;
      const r = areaRule(a, z.zone);
      features.push({
        type: 'Feature',
        geometry: a.geometry,
        properties: {
          name: a.name,
          rules: [
            {
              ...(ids ? { vehicle_type_id: ids } : {}),
              // 2.2 has one flag for starting and ending
              ride_allowed: r.rideStartAllowed && r.rideEndAllowed,
              ride_through_allowed: r.rideThroughAllowed,
              ...(r.maximumSpeedKph !== undefined ? { maximum_speed_kph: r.maximumSpeedKph } : {}),
            },
          ],
        },
      });
    }
  }
  return { geofencing_zones: { type: 'FeatureCollection', features } };
}

/**
 * The 2.2 files that are their zones' items end to end, whatever else the system holds: a zone's
 * part is its items' JSON, comma-separated (free_bike_status: in vehicle blocks), built and validated
 * once by the zone's job and shared by every scope and language that includes the zone; a scope's
 * file is `v2PartData(file, [])` with its zones' parts joined by commas in the array (byte for byte
 * what `buildV2` gives for the scope).
 */
export const V2_PART_FILES = ['free_bike_status', 'geofencing_zones'] as const;
export type V2PartFile = (typeof V2_PART_FILES)[number];

export function isV2PartFile(file: string): file is V2PartFile {
  return (V2_PART_FILES as readonly string[]).includes(file);
}

/** The `data` of a part file around its items (as freeBikeStatusV2 and geofencingZonesV2 shape it). */
export function v2PartData(file: V2PartFile, items: unknown[]): unknown {
  return file === 'free_bike_status' ? { bikes: items } : { geofencing_zones: { type: 'FeatureCollection', features: items } };
}

/** One zone's items of a part file (the scope's items are its zones' in zone order). */
export function v2PartItems(file: V2PartFile, z: ZoneData, env: BuildEnv): unknown[] {
  return file === 'free_bike_status' ? freeBikeStatusV2({ zones: [z] }, env).bikes : geofencingZonesV2({ zones: [z] }).geofencing_zones.features;
}

/** The `data` of a 2.2 file. */
export function buildV2(file: V2File, s: V2Scope, env: BuildEnv): unknown {
  switch (file) {
    case 'gbfs':
      return gbfsV2(s, env);
    case 'gbfs_versions':
      return gbfsVersionsV2(s, env);
    case 'system_information':
      return systemInformationV2(s, env);
    case 'vehicle_types':
      return vehicleTypesV2(s);
    case 'free_bike_status':
      return freeBikeStatusV2(s, env);
    case 'system_regions':
      return systemRegionsV2(s);
    case 'system_pricing_plans':
      return systemPricingPlansV2(s);
    case 'system_alerts':
      return systemAlertsV2(s, env);
    case 'geofencing_zones':
      return geofencingZonesV2(s);
  }
}
