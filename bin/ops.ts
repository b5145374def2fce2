/**
 * The ops CLI (`npm run ops -- <command>`; the Makefile targets call it). Every command has --help.
 * Secrets are printed once, when created or rotated, and never logged.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import { exitOnStartError, loadConfigOrExit } from '../lib/core/config.js';
import { migrate } from '../lib/core/migrate.js';
import { HOURLY_FEEDS } from '../lib/feeds/publications.js';
import { createContext, closeContext } from '../lib/domain/runtime.js';
import type { AppContext } from '../lib/domain/context.js';
import { sql } from '../lib/core/sql/typed.js';
import {
  createKey,
  listKeys,
  revokeKey,
  rotateKey,
  createFeedClient,
  listFeedClients,
  rotateFeedClient,
  revokeFeedClient,
  createClientKey,
  listClientKeys,
  revokeClientKey,
  AdminError,
} from '../ops/admin/credentials.js';
import { importZones, ZoneImportError, type ZonesImported } from '../ops/admin/zones.js';
import { readZoneDocuments, type ZoneDocument } from '../ops/admin/zone-file.js';
import { listPrices, setPrices, type PriceRow } from '../ops/admin/prices.js';
import { importFeedClients, readClientEntries } from '../ops/admin/client-import.js';
import { createDevice, listDevices, revokeDevice, rotateDevice, syncBroker, syncFile, type IssuedCredentials } from '../ops/admin/devices.js';
import { DEFAULT_OVERLAP_DAYS, listFeedSigningKeys, rotateFeedSigningKeys } from '../ops/admin/signing-keys.js';
import { parseHour } from '../lib/feeds/hours.js';
import type { BackfillProgress, PublishStatus, CellState } from '../publisher/ops.js';
import { isUuid } from '../lib/core/uuid.js';
import type { SeedSummary } from '../ops/seed/index.js';
import type { SimSummary } from '../ops/sim/index.js';
import { complianceView, PolicySourceError, removePolicySource, savePolicySource, type PolicyAuthType } from '../lib/domain/policy/sources.js';
import { formatCompliance, policySecret } from '../ops/admin/policy.js';
import { readCityPolicies } from '../publisher/policy/read.js';
import { cityRulesRound } from '../publisher/policy/index.js';
import { KEY_SCOPES, type KeyScope } from '../lib/domain/credentials/api-keys.js';
import { addIncident, listIncidents, updateIncident } from '../ops/admin/incidents.js';
import { INCIDENT_TYPES_21 } from '../schemas/mds/v21.js';

/** hours × feeds, one letter per cell, then the legend, totals and every failure by name */
function formatStatus(s: PublishStatus): string {
  const letter: Record<CellState, string> = { published: '✓', dirty: 'D', failed: 'F', pending: 'P', missing: '·', not_due: ' ' };
  const short = s.feeds.map((f, i) => `${String.fromCharCode(97 + i)}=${f}`);
  const head = `zone         hour           ${s.feeds.map((_, i) => String.fromCharCode(97 + i)).join(' ')}`;
  const lines = [head, ...s.rows.map((r) => `${r.zone.padEnd(12)} ${r.hour}  ${s.feeds.map((f) => letter[r.states[f]] ?? '?').join(' ')}`)];
  lines.push('', `feeds: ${short.join('  ')}`, 'legend: ✓ published  D dirty (republish pending)  F failed  P pending  · missing', '');
  lines.push(
    `totals: ${Object.entries(s.totals)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}; republished ${s.republished} times (content changed)`,
  );
  for (const f of s.failures) lines.push(`FAILED ${f.feed} ${f.zone} ${f.hour}: ${f.error}`);
  lines.push('', `history catch-up (hours before the cron's look-back, at most PUBLISH_CATCHUP_HOURS_PER_TICK a tick):`);
  for (const c of s.catchup)
    lines.push(`  ${c.zone.padEnd(12)} ${c.hoursLeft ? `catching up: ${c.hoursLeft} hours from ${c.completeBefore} still to confirm` : 'complete'}`);
  lines.push('', 'history retained in Postgres (older hours are served from their published files):');
  for (const h of s.history) {
    const range = h.oldestDay ? `${h.oldestDay} … ${h.newestDay}` : 'no partitions';
    const archived = h.droppedBefore ? `, archived before ${h.droppedBefore.toISOString()} (${h.droppedPartitions} partitions dropped)` : '';
    lines.push(
      `  ${h.table.padEnd(10)} ${String(h.partitions).padStart(4)} days ${range}, ${(h.bytes / 1048576).toFixed(1)} MiB, retention ${h.retentionDays} days${archived}`,
    );
  }
  return lines.join('\n');
}

/** What `ops seed` did, and the demo credentials, one per line (not the summary object). */
function formatSeed(s: SeedSummary): string {
  const lines = [
    s.created
      ? `demo data seeded: zones ${s.zones.join(', ')}; ${s.vehicles} vehicles in service since ${s.deployedAt.toISOString()}; ${s.partners} partners, ${s.users} users`
      : `demo data already present (zones ${s.zones.join(', ')}): nothing written but demo credentials that were missing`,
    'demo credentials:',
    ...s.credentials.apiKeys.map((k) => `  API key ${k.key.padEnd(22)} scope ${k.scope.padEnd(9)} partner ${k.partner}`),
    ...s.credentials.feedClients.map((c) => `  feed client ${c.clientId} / ${c.secret}  role ${c.role}`),
  ];
  return lines.join('\n');
}

/**
 * `make simulate` passes OPS_CALLER (make-embedded or make): the hints then name make's variables
 * (END=, VEHICLES=, EMBEDDED_PG_DB=) instead of the CLI's flags.
 */
function simulateHints(): { end: string; vehicles: string; seed: string; freshDb: string } {
  const caller = process.env.OPS_CALLER ?? '';
  if (caller.startsWith('make')) {
    return {
      end: 'END=YYYY-MM-DDTHH',
      vehicles: 'VEHICLES=',
      seed: 'SEED=',
      freshDb:
        caller === 'make-embedded'
          ? 'a database of its own on the embedded cluster (EMBEDDED_PG_DB=sim make simulate …: created, migrated and seeded on first use)'
          : 'a database of its own (DATABASE_URL=…)',
    };
  }
  return { end: '--end YYYY-MM-DDTHH', vehicles: '--vehicles', seed: '--seed', freshDb: 'a database of its own (DATABASE_URL=…)' };
}

/** `ops simulate`'s options, as its flags and their parsers (int, hour) give them. */
interface SimulateOptions {
  days: number;
  vehicles: number;
  seed: number;
  /** comma-separated zone ids */
  zones?: string;
  end?: Date;
}

/** `ops backfill`'s options (addHourWindow's flags and --force). */
interface BackfillCliOptions {
  from: Date;
  to: Date;
  zone: string[] | 'all';
  feeds: string[] | 'all';
  force: boolean;
}

/** `ops publish-status`'s options. */
interface PublishStatusCliOptions {
  zone: string[] | 'all';
  from?: Date;
  to?: Date;
}

/** `ops clients create`'s options. */
interface ClientCreateOptions {
  role: string;
  /** comma-separated zone ids; absent: every zone */
  zones?: string;
  label: string;
}

const program = new Command('ops').description('Operator tooling of the partner platform');

/**
 * Runs `fn` with a context built from the environment, closing it afterwards; errors exit non-zero.
 * `args` are what commander passes the action: the command's arguments, then its options (each
 * command's options interface below says what its flags and their parsers give).
 */
function withContext<A extends unknown[]>(
  fn: (ctx: AppContext, ...args: A) => Promise<void>,
  { vehicles = false }: { vehicles?: boolean } = {},
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    // only the commands that command vehicles (vehicles: true) connect to their broker
    const ctx = await createContext(loadConfigOrExit().config, { applicationName: 'ops', logLevel: process.env.LOG_LEVEL ?? 'warn', vehicles }).catch(
      exitOnStartError,
    );
    try {
      await fn(ctx, ...args);
    } catch (err) {
      // expected operator mistakes: say what is wrong, no stack trace
      if (
        err instanceof AdminError ||
        err instanceof ZoneImportError ||
        ['RentalError', 'OpsError', 'UnknownFeedError', 'SimulationRepeatedError', 'DemoSeedRefused'].includes((err as Error)?.constructor?.name)
      ) {
        console.error(`error: ${(err as Error).message}`);
        process.exitCode = 1;
      } else throw err;
    } finally {
      await closeContext(ctx);
    }
  };
}

const int = (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('must be a whole number');
  return Number(v);
};
const hour = (v: string) => {
  const h = parseHour(v);
  if (!h) throw new InvalidArgumentError('must be a UTC hour YYYY-MM-DDTHH with a real date and hour 00–23');
  return h;
};
// ids are uuids in the database: a malformed one is an operator typo, not a SQL error
const uuid = (v: string) => {
  if (!isUuid(v)) throw new InvalidArgumentError('must be a uuid (as printed by the list commands)');
  return v.toLowerCase();
};
const list = (v: string) =>
  v === 'all'
    ? 'all'
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
/** A file's text; a missing or unreadable file is an operator mistake (one line), not a stack trace. */
const readText = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new AdminError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
};
/** `scooter=100,25`: a vehicle type's start price and price per minute (minor units, VAT included). */
const priceArg = (v: string): PriceRow => {
  const m = /^([a-z0-9_-]{1,32})=(\d+),(\d+)$/.exec(v);
  if (!m) throw new AdminError(`price ${v}: write <vehicle type>=<start price>,<price per minute> in minor units, VAT included (scooter=100,25)`);
  return { vehicle_type_id: m[1], start_price: Number(m[2]), price_per_minute: Number(m[3]) };
};
const isKeyScope = (v: string): v is KeyScope => (KEY_SCOPES as readonly string[]).includes(v);
const warn = (lines: string[]) => {
  for (const w of lines) console.error(`warning: ${w}`);
};

/** One line per zone, the vehicle types touched, and a total for more than one zone. */
function formatZones(r: ZonesImported): string {
  const lines = r.zones.map((z) => {
    const extra = [
      z.prices ? `prices for ${z.prices.join(', ')}` : '',
      z.operatingSince ? `operating since ${z.operatingSince.toISOString().slice(0, 13)}` : '',
    ].filter(Boolean);
    return `${z.created ? 'created' : 'updated'} zone ${z.zoneId} with ${z.areas} areas${extra.length ? `, ${extra.join(', ')}` : ''}`;
  });
  const t = r.vehicleTypes;
  const types = [
    t.created.length ? `created ${t.created.join(', ')}` : '',
    t.updated.length ? `updated ${t.updated.join(', ')}` : '',
    t.unchanged.length ? `unchanged ${t.unchanged.join(', ')}` : '',
  ].filter(Boolean);
  if (types.length) lines.push(`vehicle types: ${types.join('; ')}`);
  if (r.zones.length > 1) {
    const created = r.zones.filter((z) => z.created).length;
    lines.push(
      `${r.zones.length} zones in one transaction: ${created} created, ${r.zones.length - created} updated, ${r.zones.reduce((n, z) => n + z.areas, 0)} areas`,
    );
  }
  return lines.join('\n');
}

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(async () => {
    const { applied } = await migrate(loadConfigOrExit().config.databaseUrl, HOURLY_FEEDS);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  });

program
  .command('seed')
  .description(
    'seed the demo zones, fleet, partners and demo credentials into an empty database (no-op when present; refused where real partners, clients or zones are)',
  )
  .action(
    withContext(async (ctx) => {
      await migrate(ctx.config.databaseUrl, HOURLY_FEEDS);
      const { seedDemo } = await import('../ops/seed/index.js');
      console.log(formatSeed(await seedDemo(ctx)));
    }),
  );

program
  .command('simulate')
  .description('simulate fleet history, deterministic for a seed, ending at --end (default: the current hour)')
  .option('--days <n>', 'days of history', int, 1)
  .option('--vehicles <n>', 'vehicles per zone', int, 200)
  .option('--seed <n>', 'random seed', int, 42)
  .option('--zones <ids>', 'comma-separated zone ids (default: all)')
  .option('--end <hour>', 'UTC hour the history ends at, YYYY-MM-DDTHH (default: the current hour); same seed and end give the same rows', hour)
  .action(
    withContext(async (ctx, opts: SimulateOptions) => {
      await migrate(ctx.config.databaseUrl, HOURLY_FEEDS);
      // the demo (zones, partners, public credentials) only where it is or nothing is
      const { seedDemoWhereDemo } = await import('../ops/seed/index.js');
      if (!(await seedDemoWhereDemo(ctx))) {
        console.error(
          "note: not the demo database: simulating the zones it holds, with the simulator's own partners (no key) and users; no demo data or credentials added",
        );
      }
      const known = (await ctx.db.many(sql('AdminListZoneIds'))).map((z) => z.id);
      if (!known.length) throw new AdminError('nothing written: the database holds no zones (ops zone import <file>)');
      const unknown = (opts.zones?.split(',') ?? []).filter((z) => !known.includes(z));
      if (unknown.length) throw new AdminError(`unknown zone${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}; known zones: ${known.join(', ')}`);
      const { simulateHistory, SimulationRepeatedError } = await import('../ops/sim/index.js');
      const started = Date.now();
      const end: Date = opts.end ?? new Date(Math.floor(ctx.clock.now().getTime() / 3_600_000) * 3_600_000);
      const from = new Date(end.getTime() - opts.days * 86_400_000);
      const window = `${from.toISOString().slice(0, 13)} – ${end.toISOString().slice(0, 13)}`;
      const hint = simulateHints();
      if (end.getTime() > ctx.clock.now().getTime())
        throw new AdminError(`${hint.end.split(' ')[0]} ${end.toISOString().slice(0, 13)} is in the future: history ends at the latest at the current hour`);
      let summary: SimSummary;
      try {
        summary = await simulateHistory(ctx, {
          days: opts.days,
          vehicles: opts.vehicles,
          seed: opts.seed,
          end,
          ...(opts.zones ? { zones: opts.zones.split(',') } : {}),
        });
      } catch (err) {
        if (!(err instanceof SimulationRepeatedError)) throw err;
        // two causes, one error: the window's rides exist, or a run with this seed wrote the same ids
        throw new AdminError(
          `nothing written: this database already holds simulated rides in ${window}, or the rows of an earlier run with seed ${opts.seed} (ids follow from the seed). ` +
            `Simulate into ${hint.freshDb}, or another window (${hint.end}) with another seed (${hint.seed}) and more vehicles (${hint.vehicles}: new vehicles start at the window's start)`,
        );
      }
      const unpriced =
        `${summary.unpricedZones.join(', ')} ${summary.unpricedZones.length === 1 ? 'has' : 'have'} no prices, so no vehicle is put into service or rides there ` +
        `(a zone file's "prices", or ops zone prices <zone> <type>=<start>,<per minute>)`;
      if (summary.events === 0 && summary.unpricedZones.length === summary.zones.length) throw new AdminError(`nothing written: ${unpriced}`);
      if (summary.unpricedZones.length) warn([unpriced]);
      if (summary.unpricedVehicles) warn([`${summary.unpricedVehicles} vehicles stood still: their type has no price in their zone (ops zone prices)`]);
      if (summary.events === 0) {
        // each vehicle continues from its last event, so a window before the last events of the
        // vehicles it took (the first --vehicles of each zone by code, SimLockVehicles) is empty
        const { last, most } = await ctx.db.one(sql('SimVehiclesReach'), [summary.zones, opts.vehicles]);
        throw new AdminError(
          `nothing written in ${window}: the simulator continues each vehicle from its last event, and every vehicle of ` +
            `${summary.zones.join(', ')} has history up to ${last ? `${last.toISOString().slice(0, 16)}Z` : 'after the window'} already (make run's live simulator or an earlier simulate). ` +
            `Simulate into ${hint.freshDb}, or add vehicles (${hint.vehicles} above the ${most ?? 0} a zone has: new vehicles start at the window's start)`,
        );
      }
      const s = summary;
      console.log(
        `simulated ${window} in ${s.zones.join(', ')}: ${s.vehicles} vehicles (${s.vehiclesAdded} added), ${s.rentals} rentals, ${s.trips} trips, ` +
          `${s.events} events, ${s.telemetry} telemetry points, ${s.tompBookings} TOMP bookings, ${s.usersAdded} users added; ${s.rowsWritten} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    }),
  );

function addHourWindow(cmd: Command): Command {
  return cmd
    .requiredOption('--from <hour>', 'first UTC hour, YYYY-MM-DDTHH', hour)
    .requiredOption('--to <hour>', 'last UTC hour, YYYY-MM-DDTHH (inclusive)', hour)
    .option('--zone <ids>', 'zone id(s), comma-separated, or all', list, 'all')
    .option('--feeds <list>', 'feed ids or prefixes, comma-separated (e.g. mds-2.0-trips, mds-1.2, insurance) or all', list, 'all');
}

addHourWindow(program.command('backfill'))
  .description('publish every hour in the window that is missing, dirty or failed (safe to re-run)')
  .option('--force', 'rewrite every hour even when published (republish)', false)
  .action(
    withContext(async (ctx, opts: BackfillCliOptions) => {
      const { backfill } = await import('../publisher/ops.js');
      const bar = new SingleBar({ format: ' {bar} {percentage}% | {value}/{total} files | {item}', hideCursor: true }, Presets.shades_classic);
      let started = false;
      const result = await backfill(ctx, {
        zones: opts.zone,
        from: opts.from,
        to: opts.to,
        feeds: opts.feeds,
        force: opts.force,
        onProgress: (p: BackfillProgress) => {
          if (!started) {
            bar.start(p.total, 0, { item: '' });
            started = true;
          }
          bar.update(p.done, { item: p.kind });
        },
      });
      if (started) bar.stop();
      if (result.nothingDone) console.log(`nothing done: ${result.nothingDone}`);
      console.log(`${result.total} files: ${result.written} written, ${result.unchanged} unchanged, ${result.skipped} skipped, ${result.failed.length} failed`);
      for (const f of result.failed) console.error(`FAILED ${f.feed} ${f.zone} ${f.hour}: ${f.error}`);
      if (result.failed.length) process.exitCode = 1;
    }),
  );

program
  .command('publish-status')
  .description('table of hours × feeds: published, dirty, failed, missing')
  .option('--zone <ids>', 'zone id(s), comma-separated, or all', list, 'all')
  .option('--from <hour>', 'first UTC hour (default: 24 hours ago)', hour)
  .option('--to <hour>', 'last UTC hour (default: the last closed hour)', hour)
  .action(
    withContext(async (ctx, opts: PublishStatusCliOptions) => {
      const { publishStatus } = await import('../publisher/ops.js');
      const status = await publishStatus(ctx, { zones: opts.zone, from: opts.from, to: opts.to });
      console.log(formatStatus(status));
      if (status.totals.failed > 0) process.exitCode = 1;
    }),
  );

const keys = program
  .command('keys')
  .description('API keys of partners (partner), MaaS providers (tomp), insurers (insurance) and operator staff (ops: the console)');
keys
  .command('create')
  .description('create a key; the partner is created when it does not exist; the key is shown once')
  .requiredOption('--partner <name>', 'partner name')
  .requiredOption('--scope <scope>', 'partner | tomp | insurance | ops (the operator console, /console)')
  .option('--label <text>', 'a note', '')
  .action(
    withContext(async (ctx, opts: { partner: string; scope: string; label: string }) => {
      if (!isKeyScope(opts.scope)) throw new AdminError(`scope must be one of ${KEY_SCOPES.join(', ')}`);
      const k = await createKey(ctx.db, opts.partner, opts.scope, opts.label);
      console.log(`key id ${k.id} (${k.scope}, ${k.partner})\nAPI key (shown once): ${k.key}`);
    }),
  );
keys
  .command('list')
  .description('list keys (prefixes only)')
  .option('--scope <scope>', 'partner | tomp | insurance | ops')
  // unchecked, as it always was: an unknown scope lists no key (AdminListApiKeys compares text)
  .action(withContext(async (ctx, opts: { scope?: string }) => console.table(await listKeys(ctx.db, opts.scope as KeyScope | undefined))));
keys
  .command('rotate')
  .argument('<keyId>', 'key id', uuid)
  .description('issue a new key for the same partner and scope, revoking the old one')
  .action(
    withContext(async (ctx, keyId: string) => {
      const k = await rotateKey(ctx.db, ctx.clock, keyId);
      console.log(`revoked ${k.revoked}; new key id ${k.id}\nAPI key (shown once): ${k.key}`);
    }),
  );
keys
  .command('revoke')
  .argument('<keyId>', 'key id', uuid)
  .description('revoke a key (effective everywhere within a minute)')
  .action(withContext(async (ctx, keyId: string) => console.log(`revoked ${(await revokeKey(ctx.db, ctx.clock, keyId)).id}`)));

const clients = program.command('clients').description('OAuth 2.0 client-credentials clients of the data feeds');
clients
  .command('create <clientId>')
  .description('create a feed client; the secret is shown once')
  .requiredOption('--role <role>', 'city | insurer | gbfs | data')
  .option('--zones <ids>', 'comma-separated zone ids, each an existing zone (default: every zone)')
  .option('--label <text>', 'a note', '')
  .action(
    withContext(async (ctx, clientId: string, opts: ClientCreateOptions) => {
      const c = await createFeedClient(
        ctx.db,
        clientId,
        opts.role,
        opts.zones
          ? opts.zones
              .split(',')
              .map((z) => z.trim())
              .filter(Boolean)
          : null,
        opts.label,
      );
      console.log(`client ${c.client_id} (${c.role}, zones ${c.zones ? c.zones.join(',') : 'all'})\nsecret (shown once): ${c.secret}`);
    }),
  );
clients
  .command('import <file>')
  .description('create many feed clients in one transaction from a JSON array or NDJSON of {client_id, role, zones?, label?}; the secrets are shown once')
  .action(
    withContext(async (ctx, file: string) => {
      const made = await importFeedClients(ctx.db, readClientEntries(readText(file), file));
      console.log(`created ${made.length} feed client${made.length === 1 ? '' : 's'}; secrets (shown once), tab-separated: client_id role zones secret`);
      for (const c of made) console.log(`${c.client_id}\t${c.role}\t${c.zones ? c.zones.join(',') : 'all'}\t${c.secret}`);
    }),
  );
clients
  .command('list')
  .description('list feed clients')
  .action(withContext(async (ctx) => console.table(await listFeedClients(ctx.db))));
clients
  .command('rotate <clientId>')
  .description('replace the secret (the old one stops working at once; issued tokens run out within their lifetime)')
  .action(withContext(async (ctx, clientId: string) => console.log(`secret (shown once): ${(await rotateFeedClient(ctx.db, clientId)).secret}`)));
clients
  .command('revoke <clientId>')
  .description('revoke a client: its tokens stop working within 60 seconds')
  .action(withContext(async (ctx, clientId: string) => console.log(`revoked ${(await revokeFeedClient(ctx.db, ctx.clock, clientId)).client_id}`)));

const clientKeys = clients.command('keys').description('API keys of feed clients: X-Access-Token on every feed host, with the role and zones of their client');
clientKeys
  .command('create <clientId>')
  .description('create a key for an active feed client; the key is shown once')
  .option('--label <text>', 'a note', '')
  .action(
    withContext(async (ctx, clientId: string, opts: { label: string }) => {
      const k = await createClientKey(ctx.db, clientId, opts.label);
      console.log(`key id ${k.id} (client ${k.client_id}, ${k.role}, zones ${k.zones ? k.zones.join(',') : 'all'})\nAPI key (shown once): ${k.key}`);
    }),
  );
clientKeys
  .command('list [clientId]')
  .description('list the keys of a feed client, or of every client (prefixes only)')
  .action(withContext(async (ctx, clientId: string | undefined) => console.table(await listClientKeys(ctx.db, clientId))));
clientKeys
  .command('revoke')
  .argument('<keyId>', 'key id', uuid)
  .description('revoke a key (refused everywhere within FEED_CREDENTIAL_REFRESH_MS, 30 s); revoking its client stops it too')
  .action(withContext(async (ctx, keyId: string) => console.log(`revoked ${(await revokeClientKey(ctx.db, ctx.clock, keyId)).id}`)));

const signingKeys = program
  .command('signing-keys')
  .description('the Ed25519 keys that sign every feed answer (RFC 9421), published at /.well-known/jwks.json (docs/feed-signatures.md)');
signingKeys
  .command('rotate')
  .description('the next key (already in the JWKS) starts signing, the active one retires for the overlap, a new next key is made')
  .option('--overlap-days <days>', 'how long the retiring key stays in the JWKS', String(DEFAULT_OVERLAP_DAYS))
  .action(withContext(async (ctx, opts: { overlapDays: string }) => console.log(await rotateFeedSigningKeys(ctx, Number(opts.overlapDays)))));
signingKeys
  .command('list')
  .description('every key with its state (next, active, retiring, retired) and whether the JWKS publishes it')
  .action(withContext(async (ctx) => console.table(await listFeedSigningKeys(ctx))));

const zone = program.command('zone').description('operational zones');
zone
  .command('import <files...>')
  .description(
    'import or update zones with their areas, prices, vehicle types and operating_since from GeoJSON FeatureCollections: ' +
      'a file holds one, a JSON array of them, or one per line (NDJSON); every zone of every file in one transaction (see docs/operations.md)',
  )
  .action(
    withContext(async (ctx, files: string[]) => {
      const docs: ZoneDocument[] = [];
      for (const file of files) {
        const read = readZoneDocuments(readText(file), file);
        if ('problem' in read) throw new ZoneImportError([read.problem]);
        docs.push(...read);
      }
      const r = await importZones(ctx.db, ctx.clock, docs);
      console.log(formatZones(r));
      warn(r.warnings);
    }),
  );
zone
  .command('prices <zoneId> [prices...]')
  .description(
    "show a zone's prices, or set some: <vehicle type>=<start price>,<price per minute> in minor units of the zone's currency, VAT included " +
      '(scooter=100,25); other types keep theirs. Refused when it would leave vehicles of the zone without a price',
  )
  .option('--remove <types>', 'comma-separated vehicle type ids whose price the zone drops', (v: string) =>
    v
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .action(
    withContext(async (ctx, zoneId: string, prices: string[], opts: { remove?: string[] }) => {
      const remove = opts.remove ?? [];
      let warnings: string[] = [];
      if (prices.length || remove.length) warnings = (await setPrices(ctx.db, ctx.clock, zoneId, prices.map(priceArg), remove)).warnings;
      const p = await listPrices(ctx.db, zoneId);
      console.log(
        p.prices.length
          ? [
              `zone ${zoneId} (minor units of ${p.currency}, VAT ${Math.round((p.vatRate ?? 0) * 10000) / 100} % included):`,
              ...p.prices.map(
                (r) => `  ${r.vehicle_type_id.padEnd(12)} start ${String(r.start_price).padStart(6)}  per minute ${String(r.price_per_minute).padStart(6)}`,
              ),
            ].join('\n')
          : `zone ${zoneId} has no prices`,
      );
      warn(warnings);
    }),
  );

const vehicle = program.command('vehicle').description('vehicles');
vehicle
  .command('set-status <idOrCode> <status>')
  .description('set a vehicle status: ready | unavailable (a vehicle on a ride cannot be changed)')
  .action(
    withContext(async (ctx, idOrCode: string, status: string) => {
      if (!['ready', 'unavailable'].includes(status)) throw new AdminError('status must be ready or unavailable');
      const row = await ctx.db.maybeOne(sql('AdminSetVehicleStatus'), [idOrCode, status]);
      if (!row) {
        const exists = await ctx.db.maybeOne(sql('AdminFindVehicle'), [idOrCode]);
        throw new AdminError(exists ? `vehicle ${exists.code} is ${exists.status}; end its rental first` : `no vehicle ${idOrCode}`);
      }
      console.log(`vehicle ${row.code} (${row.id}) is now ${row.status}`);
    }),
  );

vehicle
  .command('types')
  .description("list the vehicle types (shared by every zone; a zone file's vehicle_types declares them), with their vehicles and priced zones")
  .action(withContext(async (ctx) => console.table(await ctx.db.many(sql('AdminListVehicleTypes')))));

program
  .command('demo-vehicle')
  .argument('<code>', 'the vehicle code (four letters or digits, as on its handlebar) or id')
  .argument('<behaviour>', 'refuse: it refuses every command (a jammed lock); silent: it never answers; ok: it answers again')
  .description("tell one of make run's MQTT demo vehicles (ops/sim/mqtt-fleet.ts) to refuse its commands or stay silent, to show the error rows")
  .action(
    withContext(async (ctx, code: string, behaviour: string) => {
      if (!['refuse', 'silent', 'ok'].includes(behaviour)) throw new AdminError(`behaviour must be refuse, silent or ok, got "${behaviour}"`);
      const v = await ctx.db.maybeOne(sql('AdminFindVehicle'), [code]);
      if (!v) throw new AdminError(`no vehicle with code or id ${code}`);
      const { setDemoBehaviour } = await import('../ops/sim/mqtt-fleet.js');
      const all = setDemoBehaviour(ctx.config.demoVehiclesFile, v.code, behaviour as 'refuse' | 'silent' | 'ok');
      console.log(`vehicle ${v.code} (${v.id}): ${behaviour}; the demo vehicles told to misbehave: ${Object.keys(all).join(', ') || 'none'}`);
    }),
  );

const brokerNote = (b: string) => (b === 'updated' ? 'the broker took it' : 'no broker configured (MQTT_URL): a broker takes it at its next ops devices sync');
const issued = (c: IssuedCredentials) =>
  console.log(
    `${c.kind} ${c.username} (generation ${c.generation}); ${brokerNote(c.broker)}\nMQTT user name: ${c.username}\npassword (shown once): ${c.password}`,
  );
const devices = program
  .command('devices')
  .description(
    "the vehicle broker's identities: each vehicle's credentials, and vendor bridges' (docs/vehicle-identity.md); with MQTT_URL the running broker changes in the same step",
  );
devices
  .command('create <vehicleOrBridge>')
  .description(
    'credentials for a vehicle (its id or code; its MQTT user name is its id) or a vendor bridge (bridge-<name>, which speaks for any vehicle); the password is shown once',
  )
  .option('--label <text>', 'a note', '')
  .action(withContext(async (ctx, target: string, opts: { label: string }) => issued(await createDevice(ctx, target, opts.label))));
devices
  .command('rotate <username>')
  .description('a new password; the old one stops working at once and the broker disconnects the identity; shown once')
  .action(withContext(async (ctx, username: string) => issued(await rotateDevice(ctx, username))));
devices
  .command('revoke <username>')
  .description('revoke the credentials: the identity cannot connect any more, and the broker disconnects it')
  .action(withContext(async (ctx, username: string) => console.log(`revoked ${(await revokeDevice(ctx, username)).username}`)));
devices
  .command('list')
  .description('the identities (no hash), active ones unless --all')
  .option('--all', 'revoked ones too', false)
  .action(withContext(async (ctx, opts: { all: boolean }) => console.table(await listDevices(ctx, opts.all))));
devices
  .command('sync')
  .description(
    'bring a broker up to date with the database: --file writes its dynamic-security file (the broker reads it when it starts: scripts/mqtt.sh sync); ' +
      'without, the running broker (MQTT_URL) drops what the database revoked, and the identities it lacks are named (exit 1)',
  )
  .option('--file <path>', "the broker's dynamic-security file (.data/mqtt/dynamic-security.json for the embedded one)")
  .action(
    withContext(async (ctx, opts: { file?: string }) => {
      if (opts.file) {
        const r = await syncFile(ctx, opts.file);
        console.log(`wrote ${r.identities} identities into ${opts.file}: the broker reads it when it starts`);
        return;
      }
      const r = await syncBroker(ctx);
      console.log(`deleted from the broker: ${r.deleted.length ? r.deleted.join(', ') : 'none'}`);
      if (r.missing.length || r.stale.length)
        throw new AdminError(
          `the running broker lacks ${r.missing.length} identities (${r.missing.slice(0, 5).join(', ')}${r.missing.length > 5 ? ', …' : ''}) and holds ${r.stale.length} with an older password ` +
            `(${r.stale.slice(0, 5).join(', ')}${r.stale.length > 5 ? ', …' : ''}): its control API takes clear passwords only, so write its file (ops devices sync --file) and restart it ` +
            '(scripts/mqtt.sh sync for the embedded broker), or rotate them',
        );
      console.log('the broker holds every active identity with its current password');
    }),
  );

const policy = program.command('policy').description("a zone's city MDS Policy and Geography source, and the compliance view (docs/city-policy.md)");
policy
  .command('add <zoneId>')
  .description('register (or replace) the source of a zone; the publisher reads it every minute from then on')
  .requiredOption('--policy-url <url>', "the city's /policies endpoint or policies.json")
  .requiredOption('--geography-url <url>', "the city's /geographies endpoint or geographies.json")
  .option('--auth <type>', 'none, bearer or oauth', 'none')
  .option('--secret-file <path>', 'a file holding the bearer token or the OAuth client secret (or set POLICY_SOURCE_SECRET)')
  .option('--token-url <url>', 'oauth: the token endpoint (client credentials)')
  .option('--client-id <id>', 'oauth: the client id')
  .option('--scope <scope>', 'oauth: the scope to ask for')
  .action(
    withContext(
      async (
        ctx,
        zoneId: string,
        o: { policyUrl: string; geographyUrl: string; auth: string; secretFile?: string; tokenUrl?: string; clientId?: string; scope?: string },
      ) => {
        try {
          const r = await savePolicySource(
            ctx.db,
            ctx.config.signingSecret,
            {
              zone: zoneId,
              policyUrl: o.policyUrl,
              geographyUrl: o.geographyUrl,
              auth: o.auth as PolicyAuthType,
              secret: policySecret(o.secretFile),
              tokenUrl: o.tokenUrl,
              clientId: o.clientId,
              scope: o.scope,
            },
            ctx.clock.now(),
          );
          console.log(
            `${r.inserted ? 'registered' : 'replaced'} the city Policy source of zone ${zoneId}: read within a minute (or now: ops policy read ${zoneId})`,
          );
        } catch (err) {
          if (err instanceof PolicySourceError) throw new AdminError(err.message);
          throw err;
        }
      },
    ),
  );
policy
  .command('remove <zoneId>')
  .description("remove the zone's source: its city rules and the city's areas go with it")
  .action(
    withContext(
      async (ctx, zoneId: string) => {
        if (!(await removePolicySource(ctx.db, zoneId))) throw new AdminError(`zone ${zoneId} has no city Policy source`);
        await cityRulesRound(ctx);
        console.log(`removed the city Policy source of zone ${zoneId} and its rules`);
      },
      { vehicles: true },
    ),
  );
policy
  .command('read [zoneId]')
  .description('read the sources now (one zone, or every zone), apply the rules and send the speed commands; exit 1 when a read failed')
  .action(
    withContext(
      async (ctx, zoneId?: string) => {
        const reads = await readCityPolicies(ctx, { zone: zoneId, force: true });
        if (!reads.length) throw new AdminError(zoneId ? `zone ${zoneId} has no city Policy source` : 'no zone has a city Policy source');
        await cityRulesRound(ctx);
        for (const r of reads) console.log(`${r.zone}: ${r.outcome}${r.rules !== undefined ? `, ${r.rules} rules` : ''}${r.reason ? `: ${r.reason}` : ''}`);
        if (reads.some((r) => r.outcome === 'invalid' || r.outcome === 'unreachable')) process.exitCode = 1;
      },
      { vehicles: true },
    ),
  );
policy
  .command('status [zoneId]')
  .description(
    'the compliance view: per zone its last read, every rule with its state, the vehicles commanded and unacknowledged, alert figures against their limits',
  )
  .action(
    withContext(async (ctx, zoneId?: string) => {
      console.log(formatCompliance(await complianceView(ctx.db, zoneId ?? null, ctx.clock.now()), ctx.clock.now()));
    }),
  );

const incidents = program
  .command('incidents')
  .description('MDS 2.1 incidents served to cities (GET …/mds/{zone}/incidents; TOMP ACCIDENT and BROKEN_DOWN tickets add theirs)');
const degrees = (v: string) => {
  if (!/^-?\d{1,3}(\.\d+)?$/.test(v)) throw new InvalidArgumentError('must be decimal degrees (WGS 84)');
  return Number(v);
};
interface IncidentAddOptions {
  zone: string;
  vehicle: string;
  type: string;
  time: string;
  lat?: number;
  lng?: number;
  trip?: string;
  description?: string;
  severity?: string;
  reportId?: string;
  reportType?: string;
  preliminary?: boolean;
}
incidents
  .command('add')
  .description(
    'record an incident of a vehicle; with --lat/--lng the vehicle gets a telemetry point there at --time that names the incident, ' +
      'else the incident names its last known position then (MDS 2.1: an incident’s time and place are those of its telemetry point)',
  )
  .requiredOption('--zone <zoneId>', 'the zone (the vehicle must be in it)')
  .requiredOption('--vehicle <idOrCode>', 'the vehicle: its id or printed code')
  .requiredOption('--type <type>', `one of ${INCIDENT_TYPES_21.join(', ')}`)
  .requiredOption('--time <iso>', 'when it happened (ISO 8601, e.g. 2026-11-21T09:30:00Z)')
  .option('--lat <deg>', 'where: latitude', degrees)
  .option('--lng <deg>', 'where: longitude', degrees)
  .option('--trip <tripId>', 'the trip it happened on (default: the rental of the vehicle running at --time)')
  .option('--description <text>', 'what happened (served to cities)')
  .option('--severity <text>', 'how severe (free text)')
  .option('--report-id <id>', 'an external report: police report, service request…')
  .option('--report-type <text>', 'the kind of that report (police, 311 call…)')
  .option('--preliminary', 'more details or validation to come')
  .action(
    withContext(async (ctx, opts: IncidentAddOptions) => {
      const r = await addIncident(ctx.db, ctx.clock.now(), { ...opts, time: new Date(opts.time) });
      const point = r.telemetryTs ? `named by its telemetry point at ${r.telemetryTs.toISOString()}` : 'no telemetry point within 30 minutes names it';
      console.log(`incident ${r.incidentId} of device ${r.deviceId}${r.tripId ? ` on trip ${r.tripId}` : ''}: ${point}`);
    }),
  );
incidents
  .command('update')
  .argument('<incidentId>', 'incident id', uuid)
  .description('change an incident (its last_updated moves, so cities polling the last-updated window see it again)')
  .option('--description <text>', 'what happened')
  .option('--severity <text>', 'how severe')
  .option('--preliminary', 'more details to come')
  .option('--final', 'no more updates expected (preliminary false)')
  .action(
    withContext(async (ctx, incidentId: string, opts: { description?: string; severity?: string; preliminary?: boolean; final?: boolean }) => {
      if (opts.preliminary && opts.final) throw new AdminError('--preliminary or --final, not both');
      await updateIncident(ctx.db, incidentId, { ...opts, preliminary: opts.final ? false : opts.preliminary });
      console.log(`updated ${incidentId}`);
    }),
  );
incidents
  .command('list')
  .description('the newest incidents (TOMP tickets’ and ops’)')
  .option('--zone <zoneId>', 'only this zone')
  .option('--limit <n>', 'at most this many', int, 50)
  .action(withContext(async (ctx, opts: { zone?: string; limit: number }) => console.table(await listIncidents(ctx.db, opts.zone, opts.limit))));

const rental = program.command('rental').description('rentals');
rental
  .command('end')
  .argument('<rentalId>', 'rental id', uuid)
  .description('end a running rental internally (ENDED_INTERNALLY), e.g. when the user forgot')
  .action(
    withContext(
      async (ctx, rentalId: string) => {
        const { endRental } = await import('../lib/domain/rentals/engine.js');
        const r = await endRental(ctx, { rentalId, endState: 'ENDED_INTERNALLY' });
        console.log(`rental ${r.id} is ${r.state}`);
      },
      { vehicles: true },
    ),
  );

program.parseAsync(process.argv).catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
