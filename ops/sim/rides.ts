/**
 * One simulated ride: where it goes, how long it takes, the telemetry along it and its price.
 * Paths are straight or bent once, checked to stay inside the operations area and out of no-riding
 * areas, so every telemetry point is where a vehicle may be.
 */
import { computeCost } from '../../lib/domain/pricing.js';
import { contains, geodesicMeters, inAny, offset, randomPointIn, round6, type Position } from './geo.js';
import { canPark, type ZoneModel } from './model.js';
import type { Prng } from './prng.js';

export type EndState = 'ENDED' | 'ENDED_WITH_NO_CHARGE' | 'ENDED_INTERNALLY';

export interface RidePlan {
  path: Position[];
  distanceM: number;
  /** seconds of movement, then `tailS` standing at the destination before the rental ends */
  movingS: number;
  tailS: number;
  endState: EndState;
  drainPerM: number;
}

export interface TelemetryPoint {
  t: number;
  lng: number;
  lat: number;
  battery: number;
}

const TELEMETRY_EVERY_MS = 30000;

function segmentAllowed(z: ZoneModel, a: Position, b: Position): boolean {
  for (let i = 0; i <= 10; i++) {
    const f = i / 10;
    const lng = a[0] + (b[0] - a[0]) * f;
    const lat = a[1] + (b[1] - a[1]) * f;
    if (!contains(z.ops, lng, lat)) return false;
    // the ride may start or end at the edge of a no-riding area, but not cross it
    if (i > 0 && i < 10 && inAny(z.noRiding, lng, lat)) return false;
  }
  return true;
}

function destination(rng: Prng, z: ZoneModel, from: Position, wanted: number): Position | undefined {
  for (let attempt = 0; attempt < 12; attempt++) {
    let dest: Position | undefined;
    if (z.parkingMode === 'parking-spot' && z.spots.length > 0) {
      // the spot whose distance is closest to what the rider wants, out of a few candidates
      let best: { p: Position; err: number } | undefined;
      for (let k = 0; k < 3; k++) {
        const spot = z.spots[rng.int(0, z.spots.length - 1)];
        const p = randomPointIn(rng, spot, (lng, lat) => canPark(z, lng, lat));
        if (!p) continue;
        const err = Math.abs(geodesicMeters(from[0], from[1], p[0], p[1]) - wanted);
        if (!best || err < best.err) best = { p, err };
      }
      dest = best?.p;
    } else {
      dest = offset(from[0], from[1], wanted * (attempt < 6 ? 1 : 0.5), rng.range(0, 2 * Math.PI));
      if (!canPark(z, dest[0], dest[1])) dest = undefined;
    }
    if (dest && geodesicMeters(from[0], from[1], dest[0], dest[1]) >= 50 && segmentAllowed(z, from, dest)) return dest;
  }
  return undefined;
}

/**
 * Plans a ride from `from` for a vehicle with `battery` percent, or undefined when no allowed
 * destination was found or the battery cannot make a short ride.
 */
export function planRide(rng: Prng, z: ZoneModel, from: Position, battery: number, rangeM: number, opts: { near?: Position } = {}): RidePlan | undefined {
  const drainPerM = (100 / rangeM) * rng.range(1.0, 1.25);
  const maxByBattery = (battery - 3) / drainPerM;
  if (maxByBattery < 300) return undefined;
  let dest: Position | undefined;
  if (opts.near) {
    // group ride: park next to the host
    for (let k = 0; k < 6 && !dest; k++) {
      const p = offset(opts.near[0], opts.near[1], rng.range(2, 25), rng.range(0, 2 * Math.PI));
      if (canPark(z, p[0], p[1]) && segmentAllowed(z, from, p)) dest = p;
    }
  }
  const wanted = Math.min(maxByBattery * 0.8, 300 + rng.exp(1700));
  dest ??= destination(rng, z, from, wanted);
  if (!dest) return undefined;
  // one gentle bend, where allowed
  let path: Position[] = [from, dest];
  const direct = geodesicMeters(from[0], from[1], dest[0], dest[1]);
  const mid = offset((from[0] + dest[0]) / 2, (from[1] + dest[1]) / 2, direct * rng.range(0, 0.12), rng.range(0, 2 * Math.PI));
  if (segmentAllowed(z, from, mid) && segmentAllowed(z, mid, dest)) path = [from, mid, dest];
  let distanceM = 0;
  for (let i = 1; i < path.length; i++) distanceM += geodesicMeters(path[i - 1][0], path[i - 1][1], path[i][0], path[i][1]);
  if (distanceM > maxByBattery) return undefined;
  const speed = rng.normal(4.5, 0.6, 3, 5.6); // m/s, about 16 km/h
  const movingS = Math.round(distanceM / speed + rng.range(0, 90));
  const r = rng.next();
  const endState: EndState = r < 0.02 ? 'ENDED_WITH_NO_CHARGE' : r < 0.03 ? 'ENDED_INTERNALLY' : 'ENDED';
  // auto-end after 10 minutes without movement; operator ends after a while; a rider parks and ends
  const tailS = endState === 'ENDED_WITH_NO_CHARGE' ? 600 + rng.int(0, 60) : endState === 'ENDED_INTERNALLY' ? rng.int(1200, 5400) : rng.int(10, 60);
  return { path, distanceM, movingS, tailS, endState, drainPerM };
}

/** Position after `meters` along the path. */
export function along(path: Position[], meters: number): Position {
  let left = meters;
  for (let i = 1; i < path.length; i++) {
    const a = path[i - 1];
    const b = path[i];
    const seg = geodesicMeters(a[0], a[1], b[0], b[1]);
    if (left <= seg || i === path.length - 1) {
      const f = seg === 0 ? 1 : Math.min(1, left / seg);
      return [round6(a[0] + (b[0] - a[0]) * f), round6(a[1] + (b[1] - a[1]) * f)];
    }
    left -= seg;
  }
  return path[path.length - 1];
}

/** Telemetry every 30 s from start to end (inclusive), battery draining with distance. */
export function telemetryOf(z: ZoneModel, plan: RidePlan, startMs: number, startBattery: number): TelemetryPoint[] {
  const out: TelemetryPoint[] = [];
  const endMs = startMs + (plan.movingS + plan.tailS) * 1000;
  const at = (t: number) => {
    const moved = Math.min(1, (t - startMs) / (plan.movingS * 1000 || 1)) * plan.distanceM;
    const [lng, lat] = along(plan.path, moved);
    if (contains(z.ops, lng, lat)) out.push({ t, lng, lat, battery: Math.max(0, Math.round(startBattery - moved * plan.drainPerM)) });
  };
  for (let t = startMs; t < endMs; t += TELEMETRY_EVERY_MS) at(t);
  at(endMs);
  return out;
}

export function costOf(plan: RidePlan, prices: { startPrice: number; pricePerMinute: number }, vatRate: number, startMs: number) {
  const durationS = plan.movingS + plan.tailS;
  return computeCost({
    startPrice: prices.startPrice,
    pricePerMinute: prices.pricePerMinute,
    vatRate,
    durationSeconds: durationS,
    distanceMeters: Math.ceil(plan.distanceM),
    endedAt: new Date(startMs + durationS * 1000),
    charge: plan.endState !== 'ENDED_WITH_NO_CHARGE',
  });
}
