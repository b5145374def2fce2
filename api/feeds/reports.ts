/**
 * GET /v1/partner-apis/mds/{zoneID}/reports/{YYYY-MM}.csv (city role): the MDS 2.0 monthly report
 * the publisher wrote after the month closed, served like every published object: from its index
 * row (feed_reports, cached ≤ 2 s) through the serving path of files.ts (body cache, ETag/304, the
 * stored gzip to clients that accept it, CSV decoded for the others). 404 for a month not reported
 * (yet).
 */
import type Koa from 'koa';
import { pathParam } from './params.js';
import { REPORT_CONTENT_TYPE } from '../../lib/publication/keys.js';
import { servedObject } from '../kit/serve.js';
import { authorize, claimsOf, resolveZone, type FeedDeps } from './auth.js';
import { badParam, notFound } from './errors.js';
import { servePublished } from './files.js';

const MONTH_FILE = /^(\d{4})-(0[1-9]|1[0-2])\.csv$/;

/** Reports change only when a late trip arrives: clients may keep them a while. */
const REPORT_CACHE_CONTROL = 'private, max-age=300';

export async function monthlyReport(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = claimsOf(ctx);
  authorize(claims, { family: 'mds', version: '2.0', endpoint: 'reports' });
  const zone = await resolveZone(deps, claims.zones, pathParam(ctx, 'zoneID'));
  const m = MONTH_FILE.exec(String(pathParam(ctx, 'file')));
  if (!m) throw badParam('invalid report name', 'reports are named YYYY-MM.csv (a UTC month)');
  const month = `${m[1]}-${m[2]}`;
  const row = await deps.publications.report(zone.id, month);
  const obj = row && servedObject(row);
  if (!obj || !(await servePublished(deps, ctx, obj, REPORT_CACHE_CONTROL, REPORT_CONTENT_TYPE))) {
    throw notFound(`no report for ${month} yet: a month is reported after it closes`);
  }
}
