/**
 * Device identities for the ops CLI (`ops devices …`, docs/vehicle-identity.md): a vehicle's or a
 * vendor bridge's broker credentials, created, rotated and revoked in Postgres (the source of truth:
 * only hashes) and on the running broker in the same step, and a sync that brings a broker up to
 * date with the database. A password is returned once, when created or rotated.
 *
 * The broker is changed inside the database transaction, before its commit: a broker that refuses
 * leaves the database as it was. A commit that fails after the broker took the change leaves the
 * broker ahead of the database, which the next sync undoes.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { AppContext } from '../../lib/domain/context.js';
import type { Queryable } from '../../lib/core/db.js';
import { sql } from '../../lib/core/sql/typed.js';
import { BrokerControl, BrokerControlError, type DynsecResponse } from '../../lib/domain/vehicles/broker-control.js';
import {
  createCommands,
  deleteCommands,
  deviceKindOf,
  generateDevicePassword,
  generationOf,
  hashDevicePassword,
  rotateCommands,
  withDevices,
  type DeviceIdentity,
  type DeviceKind,
} from '../../lib/domain/vehicles/credentials.js';
import { AdminError } from './credentials.js';

/** What happened on the broker: changed, or nothing because none is configured (MQTT_URL). */
export type BrokerOutcome = 'updated' | 'no broker configured';

export interface IssuedCredentials {
  username: string;
  kind: DeviceKind;
  generation: number;
  password: string;
  broker: BrokerOutcome;
}

async function onBroker(ctx: AppContext, fn: (control: BrokerControl) => Promise<void>): Promise<BrokerOutcome> {
  if (!ctx.config.mqtt) return 'no broker configured';
  const control = await BrokerControl.connect(ctx.config.mqtt).catch((err: unknown) => {
    throw new AdminError(`nothing changed: the broker at ${ctx.config.mqtt?.url} is unreachable (${(err as Error).message})`);
  });
  try {
    await fn(control);
  } catch (err) {
    // the database's transaction rolls back: the operator sees the broker's own words, no stack
    if (err instanceof BrokerControlError) throw new AdminError(`nothing changed: ${err.message}`);
    throw err;
  } finally {
    await control.close();
  }
  return 'updated';
}

const failed = (responses: DynsecResponse[], command: string, error: RegExp) => responses.some((r) => r.command === command && error.test(r.error ?? ''));

/** Creates the identity on the broker, or gives the one it holds the new password. */
async function put(control: BrokerControl, id: DeviceIdentity, password: string): Promise<void> {
  const made = await control.run(createCommands(id, password), { tolerate: /already exists/i });
  if (failed(made, 'createClient', /already exists/i)) await control.run(rotateCommands(id, password));
}

async function findVehicle(q: Queryable, idOrCode: string): Promise<string> {
  const v = await q.maybeOne(sql('DeviceFindVehicle'), [idOrCode]);
  if (!v) throw new AdminError(`no vehicle ${idOrCode}`);
  return v.id;
}

/**
 * New credentials for a vehicle (by id or code) or a bridge (`bridge-<name>`); refused while the
 * identity has active ones (rotate them instead).
 */
export async function createDevice(ctx: AppContext, target: string, label = ''): Promise<IssuedCredentials> {
  const kind: DeviceKind = target.startsWith('bridge-') ? 'bridge' : 'vehicle';
  if (kind === 'bridge' && deviceKindOf(target) !== 'bridge')
    throw new AdminError(`a bridge's name is bridge- and 1–63 of a–z 0–9 -, starting with a letter or digit: ${target}`);
  const password = generateDevicePassword();
  const hash = await hashDevicePassword(password);
  return ctx.db.tx(async (tx) => {
    const vehicleId = kind === 'vehicle' ? await findVehicle(tx, target) : null;
    const username = vehicleId ?? target;
    const row = await tx.maybeOne(sql('DeviceCreate'), [username, kind, vehicleId, hash, label, ctx.clock.now()]);
    if (!row) throw new AdminError(`${username} has credentials already: ops devices rotate ${username} issues new ones`);
    const id = { username, kind, generation: row.generation };
    const broker = await onBroker(ctx, (control) => put(control, id, password));
    return { ...id, password, broker };
  });
}

/** A new password: the old one stops working at once, and the broker disconnects the identity. */
export async function rotateDevice(ctx: AppContext, username: string): Promise<IssuedCredentials> {
  const password = generateDevicePassword();
  const hash = await hashDevicePassword(password);
  return ctx.db.tx(async (tx) => {
    const row = await tx.maybeOne(sql('DeviceRotate'), [username.toLowerCase(), hash, ctx.clock.now()]);
    if (!row) throw new AdminError(`no active credentials for ${username}`);
    const id = { username: row.username, kind: row.kind, generation: row.generation };
    const broker = await onBroker(ctx, async (control) => {
      const changed = await control.run(rotateCommands(id, password), { tolerate: /not found/i });
      if (failed(changed, 'modifyClient', /not found/i)) await put(control, id, password);
    });
    return { ...id, password, broker };
  });
}

/** Revokes the identity: it cannot connect any more, and the broker disconnects it. */
export async function revokeDevice(ctx: AppContext, username: string): Promise<{ username: string; broker: BrokerOutcome }> {
  return ctx.db.tx(async (tx) => {
    const row = await tx.maybeOne(sql('DeviceRevoke'), [username.toLowerCase(), ctx.clock.now()]);
    if (!row) throw new AdminError(`no active credentials for ${username}`);
    const broker = await onBroker(ctx, (control) => control.run(deleteCommands(row.username, row.kind), { tolerate: /not found/i }).then(() => undefined));
    return { username: row.username, broker };
  });
}

export async function listDevices(ctx: AppContext, all: boolean) {
  return ctx.db.many(sql('DeviceList'), [all]);
}

async function activeIdentities(ctx: AppContext) {
  const rows = await ctx.db.many(sql('DeviceActiveHashes'));
  return rows.map((r) => ({ username: r.username, kind: r.kind, generation: r.generation, passwordHash: r.password_hash }));
}

/**
 * Writes the database's identities into a dynamic-security file (the broker's, before it starts:
 * the plugin reads its file only then). The file's other entries (the platform, the bridge role,
 * the default access) stay; it is replaced in one rename, so a broker never reads half of it.
 */
export async function syncFile(ctx: AppContext, file: string): Promise<{ identities: number }> {
  let current: Parameters<typeof withDevices>[0];
  try {
    current = JSON.parse(readFileSync(file, 'utf8')) as typeof current;
  } catch (err) {
    throw new AdminError(`${file} is not a dynamic-security file (scripts/mqtt.sh init writes one): ${(err as Error).message}`);
  }
  const identities = await activeIdentities(ctx);
  writeFileSync(`${file}.sync`, JSON.stringify(withDevices(current, identities), null, 1), { mode: 0o600 });
  renameSync(`${file}.sync`, file);
  return { identities: identities.length };
}

export interface BrokerSync {
  /** identities the broker held that the database has revoked or never issued: deleted */
  deleted: string[];
  /** active identities the broker lacks, or holds with an older password */
  missing: string[];
  stale: string[];
}

/** The broker's clients, a page at a time (the plugin answers a page per command). */
async function brokerClients(control: BrokerControl): Promise<Array<{ username: string; textname?: string }>> {
  const clients: Array<{ username: string; textname?: string }> = [];
  for (let offset = 0; ; offset += 10_000) {
    const [page] = await control.run([{ command: 'listClients', verbose: true, count: 10_000, offset }]);
    const got = (page.data?.clients ?? []) as Array<{ username: string; textname?: string }>;
    clients.push(...got);
    if (got.length < 10_000) return clients;
  }
}

/**
 * Brings a running broker up to date with the database as far as its control API can: it deletes
 * what the database does not hold (revocations the broker missed) and names the identities it
 * lacks or holds with an older password. Those it cannot add: the API takes a clear password, which
 * exists only when issued, so they come with the file (syncFile) at the broker's next start, or
 * with a rotation.
 */
export async function syncBroker(ctx: AppContext): Promise<BrokerSync> {
  if (!ctx.config.mqtt) throw new AdminError('no broker configured: set MQTT_URL (and MQTT_PASSWORD or MQTT_PASSWORD_FILE), or sync a file with --file');
  const wanted = new Map((await activeIdentities(ctx)).map((i) => [i.username, i]));
  const result: BrokerSync = { deleted: [], missing: [], stale: [] };
  await onBroker(ctx, async (control) => {
    const held = new Map((await brokerClients(control)).map((c) => [c.username, c]));
    for (const username of held.keys()) {
      const kind = deviceKindOf(username);
      if (!kind || wanted.has(username)) continue;
      await control.run(deleteCommands(username, kind), { tolerate: /not found/i });
      result.deleted.push(username);
    }
    for (const [username, id] of wanted) {
      const c = held.get(username);
      if (!c) result.missing.push(username);
      else if ((generationOf(c.textname) ?? 0) < id.generation) result.stale.push(username);
    }
  });
  return result;
}
