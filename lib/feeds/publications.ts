/**
 * The catalogue of hourly feed files: which (feed, version) pairs exist, their object keys and ids.
 * The publisher writes them, the file route (api/feeds/files.ts) reads their rows in
 * feed_publications. Row semantics:
 *   status 'published' + object_key: the file at object_key is current unless `dirty` (late data
 *     arrived; republish pending). status 'failed': the last attempt failed (last_error); object_key
 *     still names the previous good version, if any. status 'pending': first publication running.
 */
import { formatHour } from './hours.js';

export type HourlyFeedName = 'mds_trips' | 'mds_events' | 'mds_status_changes' | 'insurance_trips' | 'mds_telemetry';
export type FeedVersion = '2.0' | '1.2' | '0.4';
type Family = 'mds' | 'insurance';
type Segment = 'trips' | 'events' | 'status_changes' | 'telemetry';

/**
 * Every hourly file, declared once, as (family, version, segment). lib/core/migrate.ts copies the
 * catalogue's rows into the table hourly_feeds (migration 000160) after every run; feed_publications
 * references that table, and the late-data triggers, the retention check and the publish-lag metric
 * join it by `source`.
 */
const DECLARED = [
  ['mds', '2.0', 'trips'],
  ['mds', '2.0', 'events'],
  ['mds', '1.2', 'trips'],
  ['mds', '1.2', 'status_changes'],
  ['mds', '0.4', 'trips'],
  ['mds', '0.4', 'status_changes'],
  ['insurance', '2.0', 'trips'],
  ['mds', '2.0', 'telemetry'],
] as const satisfies ReadonlyArray<readonly [Family, FeedVersion, Segment]>;

type IdOf<E> = E extends readonly [infer F extends string, infer V extends string, infer S extends string] ? `${F}-${V}-${S}` : never;
/** The id of an hourly file (`mds-2.0-trips`, `insurance-2.0-trips` …): what ops name and what the publisher renders by (publisher/feeds/hourly.ts). */
export type HourlyFeedId = IdOf<(typeof DECLARED)[number]>;

export interface HourlyFeed {
  /** stable id used by ops (`mds-2.0-trips`, `insurance-2.0-trips` …) */
  readonly id: HourlyFeedId;
  readonly feed: HourlyFeedName;
  readonly version: FeedVersion;
  /**
   * the history table the records come from (trips by end_time hour, events and telemetry by ts
   * hour): a late row of that table dirties the file, and retention of that table archives it
   */
  readonly source: 'trips' | 'events' | 'telemetry';
  /** the key segment after the zone */
  readonly segment: Segment;
  readonly family: Family;
}

function def([family, version, segment]: (typeof DECLARED)[number]): HourlyFeed {
  const feed: HourlyFeedName =
    family === 'insurance'
      ? 'insurance_trips'
      : segment === 'trips'
        ? 'mds_trips'
        : segment === 'events'
          ? 'mds_events'
          : segment === 'telemetry'
            ? 'mds_telemetry'
            : 'mds_status_changes';
  const source = segment === 'trips' || segment === 'telemetry' ? segment : 'events';
  return Object.freeze({ id: `${family}-${version}-${segment}` as HourlyFeedId, feed, version, source, segment, family });
}

/** Every hourly file (DECLARED), in catalogue order. */
export const HOURLY_FEEDS: readonly HourlyFeed[] = Object.freeze(DECLARED.map(def));

/** `mds/{version}/{zone}/{segment}/{YYYY-MM-DDTHH}.json.gz` or `insurance/2.0/{zone}/trips/…`. */
export function objectKey(f: HourlyFeed, zoneId: string, hour: Date): string {
  return `${f.family}/${f.version}/${zoneId}/${f.segment}/${formatHour(hour)}.json.gz`;
}

export function feedById(id: string): HourlyFeed | undefined {
  return HOURLY_FEEDS.find((f) => f.id === id);
}

export function feedOf(feed: string, version: string): HourlyFeed | undefined {
  return HOURLY_FEEDS.find((f) => f.feed === feed && f.version === version);
}

export class UnknownFeedError extends Error {}

/**
 * Feeds chosen by selectors: 'all', exact ids, or id prefixes (`mds-1.2` = both 1.2 files, `mds` =
 * every MDS file). An unknown selector throws, naming the valid ids.
 */
export function selectFeeds(selectors: readonly string[] | 'all'): HourlyFeed[] {
  if (selectors === 'all' || selectors.includes('all')) return [...HOURLY_FEEDS];
  const out = new Set<HourlyFeed>();
  for (const s of selectors) {
    const matched = HOURLY_FEEDS.filter((f) => f.id === s || f.id.startsWith(s.endsWith('-') ? s : `${s}-`));
    if (!matched.length) throw new UnknownFeedError(`unknown feed "${s}"; valid: all, ${HOURLY_FEEDS.map((f) => f.id).join(', ')}`);
    for (const f of matched) out.add(f);
  }
  return HOURLY_FEEDS.filter((f) => out.has(f));
}
