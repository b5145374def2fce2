/**
 * Device identities of the vehicle broker, declared once (docs/vehicle-identity.md): the password
 * hash the database keeps, and what Mosquitto's dynamic-security plugin holds for each identity
 * (its client, its role and the role's ACLs), both as a control command of the running broker and as
 * an entry of the plugin's file. ops/admin/devices.ts and test/support/mqtt.ts provision brokers
 * through these functions only, so the ACL the tests prove is the one operators deploy.
 *
 * Mosquitto 2.0's plugin matches ACL topics literally (`%u` arrived in 2.1, for publish ACLs only),
 * so each vehicle has a role of its own naming its topics: `vehicle/{id}`. One role shared by every
 * vehicle would hold a sorted list of its clients, which the plugin builds by sorted insertion: its
 * file loads in quadratic time (100,000 vehicles: more than a minute), one role each in 1.4 s.
 */
import { pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { isUuid } from '../../core/uuid.js';
import { commandTopic, replyTopic, stateTopic, telemetryTopic } from './protocol.js';

const pbkdf2Async = promisify(pbkdf2);

/**
 * Mosquitto's own hash: PBKDF2-HMAC-SHA512, a 12-byte salt, a 64-byte key, 101 rounds (its
 * default). The passwords are 256 random bits, so rounds would add nothing against guessing; what
 * they cost is the broker's CPU at every CONNECT (about 60 µs each, 15 s for 250,000 vehicles
 * reconnecting at once), and so they stay at the broker's default.
 */
const ITERATIONS = 101;
const SALT_BYTES = 12;
const KEY_BYTES = 64;
const HASH = /^\$7\$(\d{1,7})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

export type DeviceKind = 'vehicle' | 'bridge';

/** A bridge's user name: `bridge-` and a short name (never a UUID, which is a vehicle's). */
const BRIDGE_NAME = /^bridge-[a-z0-9][a-z0-9-]{0,62}$/;

/** The kind of identity a user name names, or undefined when it can be neither. */
export function deviceKindOf(username: string): DeviceKind | undefined {
  if (isUuid(username) && username === username.toLowerCase()) return 'vehicle';
  if (BRIDGE_NAME.test(username)) return 'bridge';
  return undefined;
}

/** A new device password: 256 random bits, base64url (43 characters). */
export function generateDevicePassword(): string {
  return randomBytes(32).toString('base64url');
}

/** `$7$101$<salt b64>$<key b64>`: mosquitto_passwd's line format, and what the table stores. */
export async function hashDevicePassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await pbkdf2Async(password, salt, ITERATIONS, KEY_BYTES, 'sha512');
  return `$7$${ITERATIONS}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** The parts of a stored hash, as the dynamic-security file holds them. */
function hashParts(stored: string): { iterations: number; salt: string; password: string } {
  const m = HASH.exec(stored);
  if (!m || Buffer.from(m[2], 'base64').length !== SALT_BYTES || Buffer.from(m[3], 'base64').length !== KEY_BYTES)
    throw new Error('not a Mosquitto PBKDF2-SHA512 hash ($7$…) with a 12-byte salt');
  return { iterations: Number(m[1]), salt: m[2], password: m[3] };
}

interface Acl {
  acltype: 'publishClientSend' | 'publishClientReceive' | 'subscribeLiteral' | 'subscribePattern';
  topic: string;
  allow: boolean;
}

/**
 * A vehicle publishes its own reports and replies, subscribes to its own commands (a literal
 * subscription: the plugin denies any other filter, `$share/…` included, at SUBSCRIBE) and receives
 * them. Each check walks at most these three publish ACLs.
 */
function vehicleAcls(vehicleId: string): Acl[] {
  return [
    { acltype: 'publishClientSend', topic: telemetryTopic(vehicleId), allow: true },
    { acltype: 'publishClientSend', topic: stateTopic(vehicleId), allow: true },
    { acltype: 'publishClientSend', topic: replyTopic(vehicleId, '+'), allow: true },
    { acltype: 'subscribeLiteral', topic: commandTopic(vehicleId), allow: true },
    { acltype: 'publishClientReceive', topic: commandTopic(vehicleId), allow: true },
  ];
}

/**
 * The role every bridge shares (scripts/mqtt.sh writes it into a new broker's file): it speaks for
 * any vehicle with the same three wildcard ACLs, so its check costs what a vehicle's does however
 * many vehicles it carries. Never a list of its vehicles' topics: the plugin walks a role's publish
 * ACLs one by one, 750,000 of them for 250,000 vehicles at every message.
 */
const BRIDGE_ROLE = 'bridge';

const roleOf = (kind: DeviceKind, username: string) => (kind === 'vehicle' ? `vehicle/${username}` : BRIDGE_ROLE);

/** What the broker's copy of an identity says of it: the generation of its password. */
const textnameOf = (generation: number) => `generation ${generation}`;

/** The generation a broker's client carries, or undefined for a client no sync wrote. */
export function generationOf(textname: unknown): number | undefined {
  const m = typeof textname === 'string' ? /^generation (\d+)$/.exec(textname) : null;
  return m ? Number(m[1]) : undefined;
}

export interface DeviceIdentity {
  username: string;
  kind: DeviceKind;
  generation: number;
}

/** A command of the plugin's control API ($CONTROL/dynamic-security/v1). */
export type DynsecCommand = { command: string } & Record<string, unknown>;

/** Creates the identity on a running broker (a vehicle's role first: the client names it). */
export function createCommands(id: DeviceIdentity, password: string): DynsecCommand[] {
  const role = roleOf(id.kind, id.username);
  return [
    ...(id.kind === 'vehicle' ? [{ command: 'createRole', rolename: role, acls: vehicleAcls(id.username) }] : []),
    { command: 'createClient', username: id.username, password, textname: textnameOf(id.generation), roles: [{ rolename: role }] },
  ];
}

/** A new password: the broker disconnects the client, whose old password stops working at once. */
export function rotateCommands(id: DeviceIdentity, password: string): DynsecCommand[] {
  return [{ command: 'modifyClient', username: id.username, password, textname: textnameOf(id.generation) }];
}

/** Deletes the identity: the broker disconnects it. */
export function deleteCommands(username: string, kind: DeviceKind): DynsecCommand[] {
  return [{ command: 'deleteClient', username }, ...(kind === 'vehicle' ? [{ command: 'deleteRole', rolename: roleOf(kind, username) }] : [])];
}

interface DynsecFile {
  clients?: Array<{ username: string } & Record<string, unknown>>;
  roles?: Array<{ rolename: string } & Record<string, unknown>>;
  [key: string]: unknown;
}

/**
 * The plugin's file with the device identities replaced by `identities` (the database's active
 * rows, with their hashes): everything else in it (the platform's identity, the bridge role, the
 * default access) stays as it was.
 */
export function withDevices(file: DynsecFile, identities: Array<DeviceIdentity & { passwordHash: string }>): DynsecFile {
  const isDevice = (name: string) => deviceKindOf(name) !== undefined;
  const clients = (file.clients ?? []).filter((c) => !isDevice(c.username));
  const roles = (file.roles ?? []).filter((r) => !r.rolename.startsWith('vehicle/'));
  for (const id of identities) {
    const role = roleOf(id.kind, id.username);
    if (id.kind === 'vehicle') roles.push({ rolename: role, acls: vehicleAcls(id.username) });
    clients.push({ username: id.username, textname: textnameOf(id.generation), ...hashParts(id.passwordHash), roles: [{ rolename: role }] });
  }
  return { ...file, clients, roles };
}
