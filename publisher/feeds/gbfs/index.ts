/**
 * GBFS snapshot job: builds every GBFS 3.0 file of every zone and every GBFS 2.2 file of every
 * region scope of the feed clients, validates each against schemas/gbfs, and stores it gzip at
 * `gbfs/{version}/{scope}/{file}.json.gz` with its gbfs_snapshots row (the index the file route
 * reads). Unchanged data writes nothing: a file is first rebuilt with the stored last_updated and
 * compared by sha256 with the stored row. last_updated is when the data last changed for the static
 * files, and for the status files when the publisher last confirmed them: those are written again
 * once STATUS_REFRESH_SECONDS old, so that a reader never sees one older than its ttl.
 *
 * Cadence (docs/gbfs.md): call it every ~15 s. Without `only` it decides itself: the status files
 * (vehicle/station status, alerts: ttl 30) every call, the static files (ttl 3600) on the first call
 * of each clock hour in this process. `only: 'status' | 'static' | 'all'` forces a set. A status run
 * also builds the static files that have never been published (a new zone or client scope is
 * discoverable at once).
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { AppContext } from '../../../lib/context.js';
import { q } from '../../../lib/db.js';
import { ROLES, gbfsV2Scope, hasGbfs, type Role } from '../../../lib/feeds/roles.js';
import type { BuildEnv } from '../../../lib/feeds/gbfs/common.js';
import { MANIFEST_FILE, STATIC_TTL, STATUS_REFRESH_SECONDS, V2_FILES, V3_FILES, gbfsObjectKey, gbfsTtl, isStatusFile, v2LanguageScope, type GbfsVersion } from '../../../lib/feeds/gbfs/files.js';
import { loadZoneData, type ZoneData } from '../../../lib/feeds/gbfs/model.js';
import { wholeSeconds } from '../../../lib/feeds/gbfs/time.js';
import { buildV2, envelopeV2, systemLanguages, type V2Scope } from '../../../lib/feeds/gbfs/v2.js';
import { buildV3, envelopeV3, manifestV3 } from '../../../lib/feeds/gbfs/v3.js';
import { unchangedObject } from '../../../lib/publication/unchanged.js';
import { compile, describeErrors } from '../../../lib/validate.js';
import { GBFS_V2_SCHEMAS } from '../../../schemas/gbfs/v2.js';
import { GBFS_V3_SCHEMAS, manifestV3Schema } from '../../../schemas/gbfs/v3.js';

export type GbfsPublishMode = 'status' | 'static' | 'all';

export interface GbfsPublishResult {
  written: number;
  unchanged: number;
  /** files that failed to build, validate or store (logged; the others are still published) */
  failed: number;
}

interface Task {
  version: GbfsVersion;
  scope: string;
  /** gbfs_snapshots.file (`gbfs.{role}` for the 3.0 discovery variants) */
  file: string;
  ttl: number;
  schema: object;
  /** the document with a given last_updated */
  render(lastUpdated: Date): Record<string, unknown>;
}

interface Previous {
  sha256: string;
  lastUpdated: Date;
  objectKey: string;
}

const CONCURRENCY = 8;

/** Per process: the clock hour of the last complete static build (the automatic cadence). */
const lastStaticHour = new WeakMap<AppContext, number>();

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const bodyOf = (doc: unknown) => Buffer.from(JSON.stringify(doc));
const rowKey = (version: string, scope: string, file: string) => `${version}/${scope}/${file}`;

export async function publishGbfsSnapshots(ctx: AppContext, opts: { only?: GbfsPublishMode } = {}): Promise<GbfsPublishResult> {
  const log = ctx.log.child({ job: 'gbfs', only: opts.only ?? 'auto' });
  const now = ctx.clock.now();
  const env: BuildEnv = { now, publicBaseUrl: ctx.config.publicBaseUrl, providerId: ctx.config.providerId, providerName: ctx.config.providerName };

  const [rows, clientScopes] = await Promise.all([ctx.db.many(q('GbfsSnapshotList')), ctx.db.many<{ role: Role; zones: string[] | null }>(q('GbfsFeedClientScopes'))]);
  const previous = new Map<string, Previous>(rows.map((r) => [rowKey(r.version, r.scope, r.file), { sha256: r.sha256, lastUpdated: r.last_updated, objectKey: r.object_key }]));
  const gbfsRoles = ROLES.filter(hasGbfs);

  let mode: GbfsPublishMode = opts.only ?? 'status';
  const hour = Math.floor(now.getTime() / 3_600_000);
  if (opts.only === undefined && lastStaticHour.get(ctx) !== hour) mode = 'all';
  let zones = await loadZoneData(ctx.db, { zoneIds: null, now, areas: mode !== 'status', vehicles: mode !== 'static' });
  let tasks = plan(mode, zones, scopesOf(clientScopes, zones), gbfsRoles, env);
  if (mode === 'status') {
    const missing = plan('static', zones, scopesOf(clientScopes, zones), gbfsRoles, env).some((t) => !previous.has(rowKey(t.version, t.scope, t.file)));
    if (missing) {
      mode = 'all';
      zones = await loadZoneData(ctx.db, { zoneIds: null, now, areas: true, vehicles: true });
      tasks = plan(mode, zones, scopesOf(clientScopes, zones), gbfsRoles, env);
    }
  }

  const result: GbfsPublishResult = { written: 0, unchanged: 0, failed: 0 };
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      try {
        const outcome = await publishOne(ctx, task, previous.get(rowKey(task.version, task.scope, task.file)), now);
        result[outcome]++;
      } catch (err) {
        result.failed++;
        log.error({ err, version: task.version, scope: task.scope, file: task.file }, 'gbfs file not published');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, tasks.length) }, worker));
  if (mode === 'all') lastStaticHour.set(ctx, hour);
  log.debug({ ...result, files: tasks.length }, 'gbfs snapshots');
  return result;
}

/**
 * Distinct 2.2 region scopes of the clients not revoked whose role reads GBFS: each in its default
 * language (the plain URLs), and, for a system whose zones speak several languages, once more per
 * language (v2LanguageScope, the /gbfs/v2/{language}/ URLs its discovery lists).
 */
function scopesOf(rows: Array<{ role: Role; zones: string[] | null }>, zones: Map<string, ZoneData>): V2Scope[] {
  const out = new Map<string, V2Scope>();
  for (const r of rows) {
    if (!hasGbfs(r.role)) continue;
    const id = gbfsV2Scope(r.role, r.zones);
    if (out.has(id)) continue;
    const wanted = r.zones === null ? null : new Set(r.zones);
    const data = [...zones.values()].filter((z) => wanted === null || wanted.has(z.zone.id));
    if (!data.length) continue;
    const languages = systemLanguages(data);
    const scope: V2Scope = { id, clientScope: id, role: r.role, zoneIds: r.zones === null ? null : [...new Set(r.zones)].sort(), zones: data, language: languages[0]!, languages };
    out.set(id, scope);
    if (languages.length > 1) for (const language of languages) out.set(v2LanguageScope(id, language), { ...scope, id: v2LanguageScope(id, language), language });
  }
  return [...out.values()];
}

function plan(mode: GbfsPublishMode, zones: Map<string, ZoneData>, scopes: V2Scope[], roles: Role[], env: BuildEnv): Task[] {
  const wanted = (file: string) => mode === 'all' || (mode === 'status') === isStatusFile(file);
  const tasks: Task[] = [];
  for (const z of zones.values()) {
    for (const file of V3_FILES.filter(wanted)) {
      const variants: Array<[string, Role]> = file === 'gbfs' ? roles.map((r) => [`gbfs.${r}`, r]) : [[file, roles[0]!]];
      for (const [stored, role] of variants) {
        // built once; only last_updated differs between renders
        let data: unknown;
        tasks.push({
          version: '3.0',
          scope: z.zone.id,
          file: stored,
          ttl: gbfsTtl(file),
          schema: GBFS_V3_SCHEMAS[file],
          render: (lu) => envelopeV3(lu, gbfsTtl(file), (data ??= buildV3(file, z, env, role))),
        });
      }
    }
  }
  for (const s of scopes) {
    // the caller's manifest.json (GBFS 3.0): stored per client scope, like the 2.2 files
    if (wanted(MANIFEST_FILE) && s.id === s.clientScope) {
      tasks.push({
        version: '3.0',
        scope: s.id,
        file: MANIFEST_FILE,
        ttl: STATIC_TTL,
        schema: manifestV3Schema,
        render: (lu) => envelopeV3(lu, STATIC_TTL, manifestV3(s, env)),
      });
    }
    for (const file of V2_FILES.filter(wanted)) {
      let data: unknown;
      tasks.push({
        version: '2.2',
        scope: s.id,
        file,
        ttl: gbfsTtl(file),
        schema: GBFS_V2_SCHEMAS[file],
        render: (lu) => envelopeV2(lu, gbfsTtl(file), (data ??= buildV2(file, s, env))),
      });
    }
  }
  return tasks;
}

class GbfsValidationError extends Error {}

async function publishOne(ctx: AppContext, task: Task, prev: Previous | undefined, now: Date): Promise<'written' | 'unchanged'> {
  // a status file's last_updated is how current the knowledge is: past STATUS_REFRESH_SECONDS it is
  // written again with the same data; a static file's is when its data last changed
  // the data rendered with the stored last_updated: byte-equal to the stored file when nothing changed
  const key = rowKey(task.version, task.scope, task.file);
  const objectKey = gbfsObjectKey(task.version, task.scope, task.file);
  const current = (p: Previous) => !isStatusFile(task.file) || now.getTime() - p.lastUpdated.getTime() < STATUS_REFRESH_SECONDS * 1000;
  const sameAs = async (p: Previous | undefined) =>
    p !== undefined && current(p) && (await unchangedObject(ctx.store, { sha256: p.sha256, object_key: p.objectKey }, { sha256: sha256(bodyOf(task.render(p.lastUpdated))), key: objectKey }));
  if (await sameAs(prev)) return 'unchanged';

  return ctx.db.tx(async (tx) => {
    // one writer per file in the cluster; a busy file is being written by another process right now
    const { locked } = await tx.one<{ locked: boolean }>(q('GbfsSnapshotTryLock'), [key]);
    if (!locked) return 'unchanged';
    const row = await tx.maybeOne<{ sha256: string; last_updated: Date; object_key: string }>(q('GbfsSnapshotGet'), [task.version, task.scope, task.file]);
    const cur = row ? { sha256: row.sha256, lastUpdated: row.last_updated, objectKey: row.object_key } : undefined;
    if (await sameAs(cur)) return 'unchanged';

    // last_updated moves forward even if the clock does not (two runs in one second)
    let lastUpdated = wholeSeconds(now);
    if (cur && lastUpdated <= cur.lastUpdated) lastUpdated = new Date(cur.lastUpdated.getTime() + 1000);
    const doc = task.render(lastUpdated);
    const validate = compile(task.schema);
    if (!validate(doc)) throw new GbfsValidationError(`${task.version} ${task.file}: ${describeErrors(validate.errors, 5)}`);
    const body = bodyOf(doc);
    const hash = sha256(body);
    const gz = gzipSync(body);
    await ctx.store.put(objectKey, gz, {
      contentType: 'application/json',
      contentEncoding: 'gzip',
      metadata: { sha256: hash, 'last-updated': lastUpdated.toISOString(), ttl: String(task.ttl) },
    });
    await tx.query(q('GbfsSnapshotUpsert'), [task.version, task.scope, task.file, objectKey, hash, gz.length, task.ttl, lastUpdated, now]);
    return 'written';
  });
}
