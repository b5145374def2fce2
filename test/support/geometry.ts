/** Geometry of test fixtures, as WKT in WGS 84 (longitude first). */

/** A square MULTIPOLYGON centred on (lat, lng), `half` degrees from the centre to each side. */
export function squareWkt(lat: number, lng: number, half = 0.01): string {
  const [a, b, c, d] = [lng - half, lat - half, lng + half, lat + half];
  return `MULTIPOLYGON(((${a} ${b},${c} ${b},${c} ${d},${a} ${d},${a} ${b})))`;
}
