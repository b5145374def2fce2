/**
 * Values both GBFS versions derive the same way: ids, money, deep links, availability, alerts,
 * station counts. The version builders (v2.ts, v3.ts) only shape them.
 */
import type { GbfsVehicle, ZoneData } from './model.js';
import { phrasesFor } from './phrases.js';
import { toMajor } from '../../domain/money.js';

export interface BuildEnv {
  now: Date;
  publicBaseUrl: string;
  providerId: string;
  providerName: string;
}

/** Plan ids are unique across zones (a 2.2 scope merges several): `{zone}:{vehicle type}`. */
export function planId(zoneId: string, vehicleTypeId: string): string {
  return `${zoneId}:${vehicleTypeId}`;
}

/** Currency formats by language and currency: making one costs ~50× a format (a 2.2 system formats every zone's prices). */
const formats = new Map<string, Intl.NumberFormat | null>();

function money(minor: number, currency: string, language: string): string {
  const key = `${language}\u0000${currency}`;
  let f = formats.get(key);
  if (f === undefined) {
    try {
      f = new Intl.NumberFormat(language, { style: 'currency', currency });
    } catch {
      // not a language tag or not a currency code Intl knows
      f = null;
    }
    formats.set(key, f);
  }
  return f ? f.format(toMajor(minor, currency)) : `${toMajor(minor, currency)} ${currency}`;
}

/** "€1.00 to unlock, then €0.25 per minute" in the zone's language (or English), with its tag. */
export function priceDescription(startPrice: number, perMinute: number, currency: string, language: string): { text: string; language: string } {
  const p = phrasesFor(language);
  return { text: p.t.price(money(startPrice, currency, language), money(perMinute, currency, language)), language: p.language };
}

/** Languages of a zone's 3.0 texts: its own, plus English when generated sentences fall back to it. */
export function zoneLanguages(language: string): string[] {
  return [...new Set([language, phrasesFor(language).language])];
}

/** Deep links into the rider app by the rotating GBFS id (never the device id or the printed code). */
export function rentalUris(publicBaseUrl: string, gbfsId: string): { android: string; ios: string; web: string } {
  const id = encodeURIComponent(gbfsId);
  return {
    android: `${publicBaseUrl}/app/android/vehicles/${id}`,
    ios: `${publicBaseUrl}/app/ios/vehicles/${id}`,
    web: `${publicBaseUrl}/app/vehicles/${id}`,
  };
}

/** Rider app store entries (system_information.rental_apps). */
export function rentalApps(publicBaseUrl: string): {
  android: { store_uri: string; discovery_uri: string };
  ios: { store_uri: string; discovery_uri: string };
} {
  return {
    android: { store_uri: 'https://play.google.com/store/apps/details?id=com.demomobility.rider', discovery_uri: `${publicBaseUrl}/app/android/` },
    ios: { store_uri: 'https://apps.apple.com/app/id1000000000', discovery_uri: `${publicBaseUrl}/app/ios/` },
  };
}

/** Rentals cannot start while the zone is closed or asleep. */
export function zoneRentable(z: ZoneData): boolean {
  return z.zone.status === 'operating' && !z.sleeping;
}

/**
 * A listed vehicle is disabled when it cannot be rented now: its zone is closed or asleep, or its
 * battery is under the zone's minimum. Reserved = booked.
 */
export function vehicleFlags(z: ZoneData, v: GbfsVehicle): { isReserved: boolean; isDisabled: boolean } {
  return { isReserved: v.status === 'booked', isDisabled: !zoneRentable(z) || v.batteryPercent < z.zone.minBatteryPercent };
}

export function currentRangeMeters(v: GbfsVehicle): number {
  return Math.round((v.maxRangeMeters * v.batteryPercent) / 100);
}

export interface StationCount {
  stationId: string;
  available: number;
  byType: Map<string, number>;
  lastReported: Date;
}

/**
 * Vehicles available at each station (inside its area, neither reserved nor disabled), per type.
 * last_reported: the latest report of a vehicle there, else when the station was created: stable
 * while nothing changes, so an unchanged station does not rewrite the file.
 */
export function stationCounts(z: ZoneData): StationCount[] {
  const counts = new Map<string, StationCount>();
  for (const s of z.stations) counts.set(s.id, { stationId: s.id, available: 0, byType: new Map(z.types.map((t) => [t.id, 0])), lastReported: s.createdAt });
  for (const v of z.vehicles) {
    const c = v.stationId ? counts.get(v.stationId) : undefined;
    if (!c) continue;
    if (v.lastSeenAt > c.lastReported) c.lastReported = v.lastSeenAt;
    const f = vehicleFlags(z, v);
    if (f.isReserved || f.isDisabled) continue;
    c.available++;
    c.byType.set(v.vehicleTypeId, (c.byType.get(v.vehicleTypeId) ?? 0) + 1);
  }
  return [...counts.values()];
}

export interface Alert {
  id: string;
  type: 'system_closure';
  zoneId: string;
  start: Date;
  end?: Date;
  summary: string;
  description: string;
  /** language of summary and description */
  language: string;
  lastUpdated: Date;
}

/**
 * Alerts of a zone now: closed (zones.status), asleep (inside a sleep window, zone clock). A closure
 * has no known end; it started at the zone's last update (when the status was set).
 */
/** The zone's alerts, their texts in `textLanguage` (default: the zone's own; GBFS 2.2 renders each language of a system). */
export function zoneAlerts(z: ZoneData, textLanguage: string = z.zone.language): Alert[] {
  const out: Alert[] = [];
  const { t, language } = phrasesFor(textLanguage);
  if (z.zone.status === 'closed') {
    out.push({
      id: `${z.zone.id}:closed`,
      type: 'system_closure',
      zoneId: z.zone.id,
      start: z.zone.updatedAt,
      summary: t.closedSummary(z.zone.name),
      description: t.closedDescription(z.zone.name),
      language,
      lastUpdated: z.zone.updatedAt,
    });
  }
  if (z.sleeping) {
    out.push({
      id: `${z.zone.id}:sleep:${Math.floor(z.sleeping.start.getTime() / 1000)}`,
      type: 'system_closure',
      zoneId: z.zone.id,
      start: z.sleeping.start,
      end: z.sleeping.end,
      summary: t.sleepSummary(z.zone.name),
      description: t.sleepDescription(z.zone.name),
      language,
      lastUpdated: z.sleeping.start,
    });
  }
  return out;
}

/** GBFS 3.0 localized text. */
export function loc(text: string, language: string): Array<{ text: string; language: string }> {
  return [{ text, language }];
}
