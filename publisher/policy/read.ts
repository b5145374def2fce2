/**
 * Reading the cities' MDS Policy and Geography documents (the `city-policy` queue, every minute):
 * per zone with a source (`ops policy add`, the console), both documents with conditional requests
 * (If-None-Match / If-Modified-Since), authenticated as the source says (none, a bearer token, or an
 * OAuth 2.0 client-credentials token fetched and kept until it expires). A document must be valid
 * against the Policy / Geography schemas (schemas/mds/policy.ts) and the two must agree (every rule's
 * geographies present); a refused or unreachable document is logged with its reason and the zone
 * keeps its last good rules. Good documents replace the zone's rules (lib/domain/policy/mapping.ts),
 * and the city's areas follow at once (./apply.ts).
 */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { compile, describeErrors } from '../../lib/core/validate.js';
import { unseal } from '../../lib/core/seal.js';
import { metrics } from '../../lib/core/metrics.js';
import { DbError } from '../../lib/core/db.js';
import { documentProblems, mapPolicies, type MappedRule } from '../../lib/domain/policy/mapping.js';
import { POLICY_SECRET_PURPOSE } from '../../lib/domain/policy/sources.js';
import {
  GeographyDocumentSchema,
  PolicyDocumentSchema,
  type Geography,
  type GeographyDocument,
  type Policy,
  type PolicyDocument,
} from '../../schemas/mds/policy.js';
import type { RowOf } from '../../lib/core/sql/typed.js';

/**
 * Every minute's job reads every source (MDS Policy's recommended minimum threshold, one minute: the
 * clock is publisher/index.ts's) but one read in the last REREAD_GUARD_SECONDS: a second publisher's
 * job of the same minute reads nothing again. Not "not read for a minute": a read out of phase (a
 * publisher starting, `ops policy read`) would then make the next minute's job skip the source, and a
 * change wait two intervals (BENCH=policy saw 76 s).
 */
const REREAD_GUARD_SECONDS = 20;
/** A city's answer slower than this is a failed read (the next minute tries again). */
const READ_TIMEOUT_MS = 15_000;
/** The largest document read (a city's geographies with detailed polygons are a few MB). */
const MAX_DOCUMENT_BYTES = 32 * 1024 * 1024;
const ACCEPT = 'application/vnd.mds+json;version=2.0, application/json;q=0.9';

type Source = RowOf<'PolicySourcesDue'>;

export type ReadOutcome = 'ok' | 'not-modified' | 'invalid' | 'unreachable';

export interface ReadResult {
  zone: string;
  outcome: ReadOutcome;
  /** why a document was refused or not read */
  reason?: string;
  /** rules mapped from good documents */
  rules?: number;
}

class ReadFailure extends Error {
  constructor(
    readonly outcome: 'invalid' | 'unreachable',
    message: string,
  ) {
    super(message);
  }
}

/** OAuth tokens of the sources, per token URL and client, until shortly before they expire. */
const tokens = new Map<string, { token: string; until: number }>();

async function authorization(ctx: AppContext, s: Source): Promise<string | undefined> {
  if (s.auth_type === 'none' || !s.auth_secret_sealed) return undefined;
  let secret: string;
  try {
    secret = unseal(ctx.config.signingSecret, POLICY_SECRET_PURPOSE, s.auth_secret_sealed);
  } catch {
    throw new ReadFailure('unreachable', "the source's secret does not open with this SIGNING_SECRET (it was sealed under another): register the source again");
  }
  if (s.auth_type === 'bearer') return `Bearer ${secret}`;
  const key = `${s.oauth_token_url}\0${s.oauth_client_id}\0${s.oauth_scope ?? ''}`;
  const held = tokens.get(key);
  if (held && held.until > Date.now()) return `Bearer ${held.token}`;
  const body = new URLSearchParams({ grant_type: 'client_credentials', ...(s.oauth_scope ? { scope: s.oauth_scope } : {}) });
  let res: Response;
  try {
    res = await fetch(s.oauth_token_url!, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(s.oauth_client_id!)}:${encodeURIComponent(secret)}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body,
      signal: AbortSignal.timeout(READ_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ReadFailure('unreachable', `token endpoint ${s.oauth_token_url}: ${(err as Error).message}`);
  }
  const json = (await res.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown } | undefined;
  if (!res.ok || typeof json?.access_token !== 'string')
    throw new ReadFailure('unreachable', `token endpoint ${s.oauth_token_url} answered ${res.status} without an access_token`);
  const ttl = typeof json.expires_in === 'number' ? json.expires_in : 3600;
  tokens.set(key, { token: json.access_token, until: Date.now() + Math.max(0, ttl - 30) * 1000 });
  return `Bearer ${json.access_token}`;
}

interface Fetched {
  /** undefined: 304, the held document still holds */
  body?: unknown;
  etag: string | null;
  lastModified: string | null;
}

/** Pages a paged Policy or Geography API may answer in (MDS bulk responses, `links.next`), at most. */
const MAX_PAGES = 100;

/**
 * A document, and its further pages when the city pages it (`links.next`, as MDS bulk responses do):
 * their `policies` or `geographies` are appended to the first page's. The validators are the first
 * page's: a change anywhere changes the city's `last_updated`, so its first page.
 */
async function fetchDocument(
  url: string,
  auth: string | undefined,
  etag: string | null,
  lastModified: string | null,
  what: string,
  list: 'policies' | 'geographies',
): Promise<Fetched> {
  const first = await fetchPage(url, auth, etag, lastModified, what);
  let page = first.body as { links?: { next?: unknown }; [k: string]: unknown } | undefined;
  const seen = new Set([url]);
  while (page && typeof page === 'object' && typeof page.links?.next === 'string' && Array.isArray((first.body as Record<string, unknown>)[list])) {
    const next = new URL(page.links.next, url).toString();
    if (seen.has(next)) throw new ReadFailure('invalid', `${what}: links.next ${next} repeats a page`);
    if (seen.size >= MAX_PAGES) throw new ReadFailure('invalid', `${what} has more than ${MAX_PAGES} pages`);
    seen.add(next);
    page = (await fetchPage(next, auth, null, null, `${what} (page ${seen.size})`)).body as typeof page;
    const items = page?.[list];
    if (!Array.isArray(items)) throw new ReadFailure('invalid', `${what}: page ${next} holds no ${list} array`);
    ((first.body as Record<string, unknown>)[list] as unknown[]).push(...(items as unknown[]));
  }
  if (first.body && typeof first.body === 'object') delete (first.body as { links?: unknown }).links;
  return first;
}

async function fetchPage(url: string, auth: string | undefined, etag: string | null, lastModified: string | null, what: string): Promise<Fetched> {
  const headers: Record<string, string> = { accept: ACCEPT };
  if (auth) headers.authorization = auth;
  if (etag) headers['if-none-match'] = etag;
  if (lastModified) headers['if-modified-since'] = lastModified;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(READ_TIMEOUT_MS), redirect: 'follow' });
  } catch (err) {
    throw new ReadFailure('unreachable', `${what} ${url}: ${(err as Error).message}`);
  }
  if (res.status === 304) return { etag, lastModified };
  if (!res.ok) {
    await res.body?.cancel();
    throw new ReadFailure('unreachable', `${what} ${url} answered ${res.status}`);
  }
  const length = Number(res.headers.get('content-length') ?? 0);
  if (length > MAX_DOCUMENT_BYTES) {
    await res.body?.cancel();
    throw new ReadFailure('invalid', `${what} is ${length} bytes, more than the ${MAX_DOCUMENT_BYTES} read`);
  }
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new ReadFailure('invalid', `${what} is more than the ${MAX_DOCUMENT_BYTES} bytes read`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ReadFailure('invalid', `${what} is not JSON`);
  }
  return { body, etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') };
}

function checked<T>(schema: object, body: unknown, what: string): T {
  const validate = compile<T>(schema);
  if (!validate(body)) throw new ReadFailure('invalid', `${what} is not a valid MDS 2.0 document: ${describeErrors(validate.errors, 5)}`);
  return body;
}

/** Reads one source and, when its documents changed and are good, replaces the zone's rules. */
async function readSource(ctx: AppContext, s: Source, now: Date): Promise<ReadResult> {
  const log = ctx.log.child({ component: 'city-policy', zone: s.zone_id });
  try {
    const auth = await authorization(ctx, s);
    // a document held only with validators (never good) is read in full
    const held = s.policies !== null && s.geographies !== null;
    const [p, g] = await Promise.all([
      fetchDocument(s.policy_url, auth, held ? s.policy_etag : null, held ? s.policy_last_modified : null, 'the policies document', 'policies'),
      fetchDocument(s.geography_url, auth, held ? s.geography_etag : null, held ? s.geography_last_modified : null, 'the geographies document', 'geographies'),
    ]);
    if (p.body === undefined && g.body === undefined) {
      await ctx.db.query(sql('PolicySourceNotModified'), [s.zone_id, now]);
      return { zone: s.zone_id, outcome: 'not-modified' };
    }
    const policyDoc =
      p.body === undefined ? { policies: s.policies as unknown as Policy[] } : checked<PolicyDocument>(PolicyDocumentSchema, p.body, 'the policies document');
    const geographyDoc =
      g.body === undefined
        ? { geographies: s.geographies as unknown as Geography[] }
        : checked<GeographyDocument>(GeographyDocumentSchema, g.body, 'the geographies document');
    const problems = documentProblems(policyDoc.policies, geographyDoc.geographies);
    if (problems.length) throw new ReadFailure('invalid', `the documents disagree: ${problems.slice(0, 3).join('; ')}`);
    const vehicleTypes = await ctx.db.many(sql('PolicyVehicleTypes'));
    const rules = mapPolicies({
      policies: policyDoc.policies,
      geographies: geographyDoc.geographies,
      fileEndDate: 'end_date' in policyDoc ? policyDoc.end_date : undefined,
      providerId: ctx.config.providerId,
      vehicleTypes,
    });
    await ctx.db.tx(async (tx) => {
      await tx.query(sql('PolicyRulesLock'));
      await tx.query(sql('PolicySourceGood'), [
        s.zone_id,
        now,
        JSON.stringify(policyDoc.policies),
        JSON.stringify(geographyDoc.geographies),
        p.etag,
        p.lastModified,
        g.etag,
        g.lastModified,
      ]);
      await tx.query(sql('PolicyRulesReplace'), [s.zone_id, JSON.stringify(rules.map(ruleRow))]);
    });
    log.info({ policies: policyDoc.policies.length, geographies: geographyDoc.geographies.length, rules: rules.length }, 'city policy read');
    return { zone: s.zone_id, outcome: 'ok', rules: rules.length };
  } catch (err) {
    // a geometry PostGIS cannot use (SQLSTATE 22…, or PostGIS's XX000) is the document's fault; any
    // other database error is the platform's: the job fails and the next minute tries again
    const geometry = err instanceof DbError && (err.code?.startsWith('22') || err.code === 'XX000');
    if (!(err instanceof ReadFailure) && !geometry) throw err;
    const failure = err instanceof ReadFailure ? err : new ReadFailure('invalid', `the geographies cannot be used: ${(err as Error).message}`);
    await ctx.db.query(sql('PolicySourceReadFailed'), [s.zone_id, now, failure.outcome, failure.message.slice(0, 1000)]);
    log.warn({ outcome: failure.outcome, reason: failure.message }, 'city policy not read: the last good rules stay');
    return { zone: s.zone_id, outcome: failure.outcome, reason: failure.message };
  }
}

/** The JSON row PolicyRulesReplace reads (sql/queries/policy.sql). */
function ruleRow(r: MappedRule) {
  return {
    policy_id: r.policyId,
    rule_id: r.ruleId,
    policy_name: r.policyName,
    rule_name: r.ruleName,
    rule_type: r.ruleType,
    position: r.position,
    mapping: r.mapping,
    note: r.note,
    max_speed_kph: r.maxSpeedKph,
    minimum: r.minimum,
    maximum: r.maximum,
    rule_units: r.ruleUnits,
    states: r.states,
    vehicle_types: r.vehicleTypes,
    starts_at: r.startsAt.toISOString(),
    ends_at: r.endsAt?.toISOString() ?? null,
    days: r.days,
    start_time: r.startTime,
    end_time: r.endTime,
    geometries: r.geometries,
    earlier: r.earlierGeographies,
  };
}

/**
 * Reads the sources due (every one of `zone`, or of every zone, when `force`), a few at a time, and
 * returns what each read did; the caller applies the rules (./apply.ts).
 */
export async function readCityPolicies(ctx: AppContext, opts: { zone?: string; force?: boolean } = {}): Promise<ReadResult[]> {
  const now = ctx.clock.now();
  const due = await ctx.db.many(sql('PolicySourcesDue'), [now, REREAD_GUARD_SECONDS, opts.zone ?? null, opts.force === true]);
  const results: ReadResult[] = [];
  const queue = [...due];
  const reader = async () => {
    for (let s = queue.shift(); s; s = queue.shift()) {
      const r = await readSource(ctx, s, now);
      metrics.cityPolicyReads.inc({ outcome: r.outcome });
      results.push(r);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, queue.length) }, reader));
  return results.sort((a, b) => a.zone.localeCompare(b.zone));
}
