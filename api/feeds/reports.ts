/**
 * GET /v1/partner-apis/mds/{zoneID}/reports/{YYYY-MM}.csv (city role): the MDS 2.0 monthly report
 * the publisher wrote after the month closed (publisher/reports.ts), served from the store with the
 * file route's validators. 404 for a month not reported (yet).
 */
import type Koa from 'koa';
import { serveObject } from '../../lib/http/serve-object.js';
import { reportKey } from '../../publisher/reports.js';
import { authenticate, authorize, resolveZone, type FeedDeps } from './auth.js';
import { badParam, notFound } from './errors.js';

const MONTH_FILE = /^(\d{4})-(0[1-9]|1[0-2])\.csv$/;

export async function monthlyReport(deps: FeedDeps, ctx: Koa.Context): Promise<void> {
  const claims = await authenticate(deps, ctx);
  authorize(claims, { family: 'mds', version: '2.0', endpoint: 'reports' });
  const zone = await resolveZone(deps, claims.zones, ctx.params.zoneID);
  const m = MONTH_FILE.exec(String(ctx.params.file));
  if (!m) throw badParam('invalid report name', 'reports are named YYYY-MM.csv (a UTC month)');
  const served = await serveObject(ctx, deps.app.store, reportKey(zone.id, `${m[1]}-${m[2]}`), { cacheControl: 'private, max-age=300', contentType: 'text/csv; charset=utf-8' });
  if (!served) throw notFound(`no report for ${m[1]}-${m[2]} yet: a month is reported after it closes`);
}
