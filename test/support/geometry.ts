/** Geometry of test fixtures, as WKT in WGS 84 (longitude first). */

/** A square MULTIPOLYGON centred on (lat, lng), `half` degrees from the centre to each side. */
export function squareWkt(lat: number, lng: number, half = 0.01): string {
  const [a, b, c, d] = [lng - half, lat - half, lng + half, lat + half];
  return `MULTIPOLYGON(((${a} ${b},${c} ${b},${c} ${d},${a} ${d},${a} ${b})))`;
}

/** A GeoJSON Polygon: the rectangle from (x, y) (longitude, latitude), `w` degrees wide and `h` high. */
export function squarePolygon(x: number, y: number, w: number, h = w) {
  return {
    type: 'Polygon',
    coordinates: [
      [
        [x, y],
        [x + w, y],
        [x + w, y + h],
        [x, y + h],
        [x, y],
      ],
    ],
  };
}
