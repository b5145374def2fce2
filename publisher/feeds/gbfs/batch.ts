/**
 * One transaction of GBFS builds: a batch of zone jobs (zone.ts buildGbfsZones, the zones' own 2.2
 * systems with them) or a scope job (scope.ts). What the builds compare with is read for all of
 * them at once (the index rows of their files, the build rows of their 2.2 systems), and what they
 * record is written for all of them at once, at the end (the index rows, the zones' parts, the
 * zones' and systems' build rows): a statement each, whatever the number of zones.
 *
 * Why: at 100 zones, submitting statements was the publisher's largest cost (bench/breadth.bench.ts
 * profile at stop 35: node-postgres' socket writes 38 % of an idle minute's busy time), and a zone
 * job was thirteen statements even for the ttl refresh of an idle zone. The caller holds the locks
 * of everything it builds (publisher/publication/lock.ts: one writer per file in the cluster), so the rows
 * read here stay what the builds saw until they commit, and the build rows are written as the
 * builds decided them from those rows.
 */
import type { Queryable } from '../../../lib/core/db.js';
import { sql } from '../../../lib/core/sql/typed.js';
import { GBFS_INDEX, type GbfsIndexRow } from '../../publication/indexes.js';
import { storeParts, type NewPart } from './parts.js';
import type { GbfsMemory } from './memory.js';
import { rowKey, type SnapshotWriter, type StoredRow } from './snapshots.js';

/** A 2.2 system's build row (gbfs_scope_builds). */
export interface ScopeBuildRow {
  inputs: string;
  status_written_at: Date;
  rebuild_due_at: Date;
}

/** A zone's build row (gbfs_zone_builds) as its build decided it. */
export interface ZoneBuildRow {
  zone: string;
  statusToken: string | number;
  staticToken: string | number;
  sleepKey: string;
  statusWrittenAt: Date;
  rebuildDueAt: Date;
}

/** The value of a timestamp column never set (a build row's defaults). */
export const EPOCH = new Date(0);

const LANGUAGE = '/lang=';

export class BuildTx {
  /** the index rows read, by rowKey: the rows every writer of this transaction compares with */
  readonly rows = new Map<string, StoredRow>();
  private readonly rowScopes = new Set<string>();
  /** 2.2 scopes whose language scopes' rows were read with them */
  private readonly languagesOf = new Set<string>();
  private readonly scopeBuilds = new Map<string, ScopeBuildRow | undefined>();
  private readonly index: GbfsIndexRow[] = [];
  private readonly parts: NewPart[] = [];
  private readonly zoneBuilds: ZoneBuildRow[] = [];
  private readonly scopeBuildRows = new Map<string, ScopeBuildRow>();

  constructor(
    readonly tx: Queryable,
    readonly now: Date,
    /** the publisher's GBFS memory the builds of this transaction read and keep (memory.ts) */
    readonly memory: GbfsMemory,
  ) {}

  /**
   * Reads the index rows of `scopes` (zones, 2.2 scopes) and of the language scopes of the 2.2
   * scopes `systems`, in one statement, leaving out what this transaction read already; returns
   * every row read so far (`rows`).
   */
  async readRows(scopes: readonly string[], systems: readonly string[] = []): Promise<Map<string, StoredRow>> {
    const wanted = scopes.filter((s) => !this.covers(s));
    const languages = systems.filter((s) => !this.languagesOf.has(s));
    if (!wanted.length && !languages.length) return this.rows;
    const rows = await this.tx.many(sql('PublicationGbfsRows'), [wanted, languages]);
    for (const s of wanted) this.rowScopes.add(s);
    for (const s of languages) this.languagesOf.add(s);
    for (const r of rows) {
      this.rows.set(rowKey(r.version, r.scope, r.file), {
        sha256: r.sha256,
        contentDigest: r.content_digest,
        lastUpdated: r.last_updated,
        objectKey: r.object_key,
        bytes: Number(r.bytes),
      });
    }
    return this.rows;
  }

  private covers(scope: string): boolean {
    if (this.rowScopes.has(scope)) return true;
    const at = scope.indexOf(LANGUAGE);
    return at > 0 && this.languagesOf.has(scope.slice(0, at));
  }

  /** Reads the build rows of the 2.2 systems `scopes` not read yet, in one statement. */
  async readScopeBuilds(scopes: readonly string[]): Promise<void> {
    const wanted = scopes.filter((s) => !this.scopeBuilds.has(s));
    if (!wanted.length) return;
    const rows = await this.tx.many(sql('GbfsScopeBuildsGet'), [wanted]);
    for (const s of wanted) this.scopeBuilds.set(s, undefined);
    for (const r of rows) this.scopeBuilds.set(r.scope, { inputs: r.inputs, status_written_at: r.status_written_at, rebuild_due_at: r.rebuild_due_at });
  }

  /** A 2.2 system's build row (undefined: never built). */
  async scopeBuild(scope: string): Promise<ScopeBuildRow | undefined> {
    await this.readScopeBuilds([scope]);
    return this.scopeBuilds.get(scope);
  }

  /** The index rows of what `writer` published, recorded at `flush`. */
  record(writer: SnapshotWriter): void {
    this.index.push(...writer.takeRows());
  }

  /** Parts a zone build made, stored at `flush`. */
  storeParts(zone: string, changed: ReadonlyArray<{ part: string; fragment: NewPart['fragment'] }>): void {
    for (const c of changed) this.parts.push({ zone, ...c });
  }

  zoneBuild(row: ZoneBuildRow): void {
    this.zoneBuilds.push(row);
  }

  scopeBuilt(scope: string, row: ScopeBuildRow): void {
    this.scopeBuildRows.set(scope, row);
  }

  /** Writes what the builds recorded, a statement per table; returns the zones of which a 2.2 part changed. */
  async flush(): Promise<Set<string>> {
    const changed = await storeParts(this.tx, this.memory, this.parts.splice(0));
    const index = this.index.splice(0);
    if (index.length) await GBFS_INDEX.record(this.tx, index, this.now);
    const zones = this.zoneBuilds.splice(0);
    if (zones.length) {
      await this.tx.query(sql('GbfsZoneBuildsUpsert'), [
        zones.map((z) => z.zone),
        zones.map((z) => z.statusToken),
        zones.map((z) => z.staticToken),
        zones.map((z) => z.sleepKey),
        zones.map((z) => z.statusWrittenAt),
        zones.map((z) => z.rebuildDueAt),
        this.now,
      ]);
    }
    const scopes = [...this.scopeBuildRows];
    this.scopeBuildRows.clear();
    if (scopes.length) {
      await this.tx.query(sql('GbfsScopeBuildsUpsert'), [
        scopes.map(([s]) => s),
        scopes.map(([, r]) => r.inputs),
        scopes.map(([, r]) => r.status_written_at),
        scopes.map(([, r]) => r.rebuild_due_at),
      ]);
    }
    return new Set(changed.filter((c) => c.part.startsWith('v2/')).map((c) => c.zone));
  }
}
