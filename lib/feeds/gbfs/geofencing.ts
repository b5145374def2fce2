/**
 * Areas → GBFS geofencing rules, one mapping shared by 2.2 and 3.0 (docs/gbfs.md has the table).
 * GBFS gives overlapping features the rules of the one listed first, so features are ordered from
 * the most to the least restrictive area type. Outside every feature the 3.0 global_rules apply.
 */
import type { AreaType, GbfsArea, GbfsVehicleType, GbfsZone } from './model.js';

export interface Rule {
  rideStartAllowed: boolean;
  rideEndAllowed: boolean;
  rideThroughAllowed: boolean;
  stationParking: boolean;
  maximumSpeedKph?: number;
}

/** First listed wins on overlap: forbidding areas before permitting ones, parking spots before slow zones. */
export const AREA_PRECEDENCE: readonly AreaType[] = ['no-riding', 'no-parking', 'parking-spot', 'slow-zone', 'incentive', 'free-floating', 'operations'];

/** The rule of an area in its zone. */
export function areaRule(area: GbfsArea, zone: GbfsZone): Rule {
  // In a parking-spot zone a ride ends only in a parking spot (a station), anywhere else in a
  // free-floating zone.
  const freeEnd = zone.parkingMode === 'free-floating';
  const stations = zone.parkingMode === 'parking-spot';
  switch (area.areaType) {
    case 'no-riding':
      return { rideStartAllowed: false, rideEndAllowed: false, rideThroughAllowed: false, stationParking: false };
    case 'no-parking':
      return { rideStartAllowed: true, rideEndAllowed: false, rideThroughAllowed: true, stationParking: false };
    case 'parking-spot':
      return withSpeed({ rideStartAllowed: true, rideEndAllowed: true, rideThroughAllowed: true, stationParking: true }, area.maxSpeedKph);
    case 'slow-zone':
      return { rideStartAllowed: true, rideEndAllowed: freeEnd, rideThroughAllowed: true, stationParking: stations, maximumSpeedKph: area.maxSpeedKph ?? zone.reducedSpeedKph };
    case 'free-floating':
      return withSpeed({ rideStartAllowed: true, rideEndAllowed: true, rideThroughAllowed: true, stationParking: false }, area.maxSpeedKph);
    case 'incentive':
    case 'operations':
      return { rideStartAllowed: true, rideEndAllowed: freeEnd, rideThroughAllowed: true, stationParking: stations, maximumSpeedKph: area.maxSpeedKph ?? zone.maxSpeedKph };
  }
}

function withSpeed(rule: Rule, kph: number | null): Rule {
  return kph === null ? rule : { ...rule, maximumSpeedKph: kph };
}

/**
 * Outside every area. With operations areas, outside them nothing may start or end (riding through
 * is allowed: the vehicle does not stop at the border). A zone without operations areas operates
 * everywhere: the global rule is then the operations rule.
 */
export function globalRule(zone: GbfsZone, areas: readonly GbfsArea[]): Rule {
  if (areas.some((a) => a.areaType === 'operations')) {
    return { rideStartAllowed: false, rideEndAllowed: false, rideThroughAllowed: true, stationParking: false };
  }
  const stations = zone.parkingMode === 'parking-spot';
  return { rideStartAllowed: true, rideEndAllowed: !stations, rideThroughAllowed: true, stationParking: stations, maximumSpeedKph: zone.maxSpeedKph };
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

/** Areas in feature order. */
export function orderedAreas(areas: readonly GbfsArea[]): GbfsArea[] {
  return [...areas].sort((a, b) => AREA_PRECEDENCE.indexOf(a.areaType) - AREA_PRECEDENCE.indexOf(b.areaType));
}
