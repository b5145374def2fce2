/**
 * The authenticating file route's core: answers an hourly feed request from its publication row and
 * the stored object, as the serving decision says (api/kit/serve.ts, which the hot path
 * before Koa follows too). Hour states: an hour not yet closed, or before the zone existed → 404; a
 * closed hour without a current file (inside the lateness, dirty and waiting to be republished,
 * failed) → the caller's "not published yet" answer (202 on MDS 2.0, 404 on the legacy host);
 * published → 200 with the file (an empty hour is a file with an empty array).
 */
import type Koa from 'koa';
import { requestLogOf } from '../kit/request-log.js';
import { floorHour } from '../../lib/feeds/hours.js';
import type { HourlyFeedName } from '../../lib/feeds/publications.js';
import { serveObject, type ServeObjectOptions } from '../kit/serve-object.js';
import { hourFile, hourlyObject, servedObject } from '../kit/serve.js';
import type { FeedDeps } from './auth.js';
import type { ZoneInfo } from './zones.js';
import { FeedError, notFound } from './errors.js';
import type { Hour } from './params.js';

/** Hour files can be republished (late data): let clients keep them briefly, then revalidate. */
export const HOUR_FILE_CACHE_CONTROL = 'private, max-age=60';

export interface HourFileRequest {
  feed: HourlyFeedName;
  version: '2.0' | '1.2' | '0.4';
  zone: ZoneInfo;
  hour: Hour;
  contentType: string;
  /** what to answer for a closed hour without a current file */
  notPublished: (hour: Hour) => FeedError;
}

export async function serveHourFile(deps: FeedDeps, ctx: Koa.Context, r: HourFileRequest): Promise<void> {
  const state = hourFile(r.hour.start.getTime(), deps.app.clock.now().getTime(), floorHour(r.zone.createdAt).getTime());
  if (state === 'not_in_past') throw notFound(`hour ${r.hour.key} is not in the past`);
  if (state === 'before_zone') throw notFound(`zone ${r.zone.id} did not operate in hour ${r.hour.key}`);
  const obj = hourlyObject(await deps.publications.row(r.feed, r.version, r.zone.id, r.hour.sql));
  if (!obj || !(await servePublished(deps, ctx, obj, HOUR_FILE_CACHE_CONTROL, r.contentType))) throw r.notPublished(r.hour);
}

/**
 * The one serving path of every published object (hourly files, GBFS snapshots, monthly reports):
 * the object its index row names, through the process's body cache keyed by the row's key + sha256
 * (a republished object is never answered from memory), answered as the serving decision says.
 * False when the index names an object the store does not have (deleted by hand, or a store
 * switch): the object needs publishing again, which the caller tells the client.
 */
export async function servePublished(
  deps: FeedDeps,
  ctx: Koa.Context,
  row: { key: string; sha256: string | null } | { key: string; version: string },
  cacheControl: string,
  contentType: string,
  derive?: ServeObjectOptions['derive'],
): Promise<boolean> {
  const obj = 'version' in row ? row : servedObject({ object_key: row.key, sha256: row.sha256 })!;
  const served = await serveObject(ctx, deps.app.store, obj.key, {
    cacheControl,
    contentType,
    ...(deps.files ? { cache: { cache: deps.files, version: obj.version } } : {}),
    ...(derive ? { derive } : {}),
  });
  if (!served) requestLogOf(ctx)?.warn({ key: obj.key }, 'published object missing from the store');
  return served;
}

/** MDS 2.0 (and insurance): 202 with an error body (MDS 2.0 "Data is not yet available for this hour"). */
export const notYetAvailable202 = (hour: Hour) =>
  new FeedError(202, 'not_published', `data for hour ${hour.key} is not available yet; retry later`, [`hour ${hour.key} has not been published yet`], {
    'Retry-After': '60',
  });

/** Legacy 1.2/0.4: 404 saying so (1.2's "102 Processing" breaks proxies). */
export const notYetPublished404 = (hour: Hour) =>
  new FeedError(404, 'not_published', `hour ${hour.key} is not published yet; retry later`, [`hour ${hour.key} has not been published yet`], {
    'Retry-After': '60',
  });
