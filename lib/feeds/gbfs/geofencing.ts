/**
 * Areas → GBFS geofencing rules, one mapping shared by 2.2 and 3.0 (docs/gbfs.md has the table).
 * GBFS gives overlapping features the rules of the one listed first, so features are ordered from
 * the most to the least restrictive area type. Outside every feature the 3.0 global_rules apply.
 * Order and permissions come from the SQL zone-rules decision (sql/migrations/000081_zone_rules.sql)
 * that the rental engine enforces, so the published and the enforced rules cannot disagree.
 */
import type { GbfsArea, GbfsVehicleType, GbfsZone } from './model.js';

export interface Rule {
  rideStartAllowed: boolean;
  rideEndAllowed: boolean;
  rideThroughAllowed: boolean;
  stationParking: boolean;
  maximumSpeedKph?: number;
}

/**
 * The rule of an area in its zone. Start, end, ride-through and station parking are the SQL
 * zone-rules decision's (zone_area_rule, loaded with the area), the same one the rental engine
 * enforces (zone_rules_at); only the published speed is decided here.
 */
export function areaRule(area: GbfsArea, zone: GbfsZone): Rule {
  const rule: Rule = { ...area.rule };
  switch (area.areaType) {
    case 'no-riding':
    case 'no-parking':
      return rule;
    case 'slow-zone':
      return { ...rule, maximumSpeedKph: area.maxSpeedKph ?? zone.reducedSpeedKph };
    case 'parking-spot':
    case 'free-floating':
      return withSpeed(rule, area.maxSpeedKph);
    case 'incentive':
    case 'operations':
      return { ...rule, maximumSpeedKph: area.maxSpeedKph ?? zone.maxSpeedKph };
  }
}

function withSpeed(rule: Rule, kph: number | null): Rule {
  return kph === null ? rule : { ...rule, maximumSpeedKph: kph };
}

/**
 * Outside every area: the SQL decision's global rule (zone_global_rule: with operations areas,
 * nothing starts or ends outside them; without, the whole zone operates under the operations rule,
 * published with the zone's maximum speed).
 */
export function globalRule(zone: GbfsZone): Rule {
  const rule: Rule = { ...zone.globalRule };
  return rule.rideStartAllowed ? { ...rule, maximumSpeedKph: zone.maxSpeedKph } : rule;
}

/**
 * The vehicle type ids an area's restriction names. `areas.vehicle_types` holds form factors
 * (scooter, bicycle) as in the partner API, or type ids; empty = every type (undefined here). An
 * area restricted to types the zone does not publish yields [] and is left out.
 */
export function areaVehicleTypeIds(area: GbfsArea, types: readonly GbfsVehicleType[]): string[] | undefined {
  if (area.vehicleTypes.length === 0) return undefined;
  const wanted = new Set(area.vehicleTypes);
  return types.filter((t) => wanted.has(t.id) || wanted.has(t.formFactor)).map((t) => t.id);
}

/** Areas in feature order (the SQL decision's precedence; stable within one area type). */
export function orderedAreas(areas: readonly GbfsArea[]): GbfsArea[] {
  return [...areas].sort((a, b) => a.precedence - b.precedence);
}
