/**
 * Planar geometry for the simulator and the seed data: small areas in WGS 84, where treating
 * degrees as a plane is accurate enough to place points and walk paths. Distances are geodesics on
 * the WGS 84 ellipsoid (geodesicMeters).
 */
import geographiclib from 'geographiclib-geodesic';
import type { Prng } from './prng.js';

export type Position = [lng: number, lat: number];
/** GeoJSON MultiPolygon coordinates: polygons → rings → positions. */
export type MultiPolygonCoords = Position[][][];

export interface Shape {
  coords: MultiPolygonCoords;
  bbox: [minLng: number, minLat: number, maxLng: number, maxLat: number];
}

export function shape(coords: MultiPolygonCoords): Shape {
  let [a, b, c, d] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const poly of coords)
    for (const [lng, lat] of poly[0] ?? []) {
      a = Math.min(a, lng);
      b = Math.min(b, lat);
      c = Math.max(c, lng);
      d = Math.max(d, lat);
    }
  return { coords, bbox: [a, b, c, d] };
}

function inRing(ring: Position[], lng: number, lat: number): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i];
    const [xj, yj] = ring[j];
    if (yi > lat !== yj > lat && lng < ((xj - xi) * (lat - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

export function contains(s: Shape, lng: number, lat: number): boolean {
  const [a, b, c, d] = s.bbox;
  if (lng < a || lng > c || lat < b || lat > d) return false;
  for (const poly of s.coords) {
    if (!inRing(poly[0], lng, lat)) continue;
    let inHole = false;
    for (let h = 1; h < poly.length; h++) if (inRing(poly[h], lng, lat)) inHole = true;
    if (!inHole) return true;
  }
  return false;
}

export function inAny(shapes: readonly Shape[], lng: number, lat: number): boolean {
  for (const s of shapes) if (contains(s, lng, lat)) return true;
  return false;
}

/** A point strictly inside `s` (bounding-box rejection sampling), or undefined after many misses. */
export function randomPointIn(rng: Prng, s: Shape, accept: (lng: number, lat: number) => boolean = () => true): Position | undefined {
  const [a, b, c, d] = s.bbox;
  for (let i = 0; i < 200; i++) {
    const lng = round6(rng.range(a, c));
    const lat = round6(rng.range(b, d));
    if (contains(s, lng, lat) && accept(lng, lat)) return [lng, lat];
  }
  return undefined;
}

const R = 6371008.8;
const RAD = Math.PI / 180;

const WGS84 = geographiclib.Geodesic.WGS84;

/**
 * Meters between two points on the WGS 84 ellipsoid (GeographicLib's geodesic, as PostGIS measures
 * `geography`): a ride's recorded distance, the sum of its path's segments, is then never shorter
 * than the straight line the feeds' consumers measure between its start and end (a sphere is off by
 * up to ~0.5 % either way).
 */
export function geodesicMeters(aLng: number, aLat: number, bLng: number, bLat: number): number {
  return WGS84.Inverse(aLat, aLng, bLat, bLng, geographiclib.Geodesic.DISTANCE).s12!;
}

/** The point `meters` away from (lng, lat) in direction `bearing` (radians from north). */
export function offset(lng: number, lat: number, meters: number, bearing: number): Position {
  const dLat = (meters * Math.cos(bearing)) / R / RAD;
  const dLng = (meters * Math.sin(bearing)) / (R * Math.cos(lat * RAD)) / RAD;
  return [round6(lng + dLng), round6(lat + dLat)];
}

/** Six decimals (~0.1 m): what we store and emit, and stable text for COPY. */
export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** WKT MULTIPOLYGON of closed rings. */
export function toWkt(coords: MultiPolygonCoords): string {
  const poly = (p: Position[][]) => `(${p.map((r) => `(${r.map(([x, y]) => `${x} ${y}`).join(',')})`).join(',')})`;
  return `MULTIPOLYGON(${coords.map(poly).join(',')})`;
}

/** A one-polygon MultiPolygon from an open ring of [lng, lat] corners (closed here). */
export function polygon(corners: Position[]): MultiPolygonCoords {
  return [[[...corners, corners[0]]]];
}

/** An axis-aligned rectangle centred on (lng, lat), half-sizes in degrees. */
export function rect(lng: number, lat: number, halfLng: number, halfLat: number): MultiPolygonCoords {
  const r = (x: number) => Math.round(x * 1e7) / 1e7;
  return polygon([
    [r(lng - halfLng), r(lat - halfLat)],
    [r(lng + halfLng), r(lat - halfLat)],
    [r(lng + halfLng), r(lat + halfLat)],
    [r(lng - halfLng), r(lat + halfLat)],
  ]);
}
