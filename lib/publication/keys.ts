/**
 * Where each published object lives in the store. The index rows name the key of what they serve,
 * so a reader never derives a key itself; these are for the writers (and the tests that look at
 * the store):
 *   hourly files   `{family}/{version}/{zone}/{segment}/{YYYY-MM-DDTHH}.json.gz` (lib/feeds/publications.ts objectKey)
 *   GBFS files     `gbfs/{version}/{scope}/{file}.json.gz` (lib/feeds/gbfs/files.ts gbfsObjectKey)
 *   reports        `mds/2.0/{zone}/reports/{YYYY-MM}.csv.gz` (below)
 * Every one is gzip (publisher/publication/bytes.ts), hence `.gz`.
 */

/** What every index row says of its object, whatever else its table holds. */
export interface IndexedObject {
  sha256: string | null;
  object_key: string | null;
}

/** The media type of a report: what the publisher stores (gzip of it) and the route serves. */
export const REPORT_CONTENT_TYPE = 'text/csv; charset=utf-8';

/** The MDS 2.0 monthly report of a zone and month (`YYYY-MM`). */
export function reportKey(zoneId: string, month: string): string {
  return `mds/2.0/${zoneId}/reports/${month}.csv.gz`;
}
