/**
 * The one UUID text pattern (any version, either case) for ids that reach the database as uuid:
 * checking it first turns a malformed id into the caller's error instead of a SQL cast failure.
 * Version-4-only checks (ids we generate) are `isUuidV4` below; the rental engine's `requireUuid`
 * (lib/domain/rentals/errors.ts) turns a failed one into its error code.
 */
import { createHash } from 'node:crypto';
import { UUID_SCHEMA } from '../../schemas/common.js';

const UUID = new RegExp(UUID_SCHEMA.pattern, 'i');

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/**
 * A name-based UUID version 5 (RFC 9562 §5.5: SHA-1 of the namespace's 16 bytes and the name, with
 * the version and variant bits set): the same name in the same namespace gives the same id forever,
 * e.g. the MDS geography id of a zone (publisher/reports.ts). node:crypto has only v4, and the few
 * lines below spare a dependency on the uuid package.
 */
export function uuidV5(name: string, namespace: string): string {
  if (!isUuid(namespace)) throw new Error(`uuidV5: namespace ${namespace} is not a UUID`);
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A UUID version 4, either case, as a JSON Schema: the id parameters of the partner and TOMP APIs. */
export const UUID_V4_SCHEMA = {
  type: 'string',
  format: 'uuid',
  maxLength: 36,
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$',
} as const;

const UUID_V4 = new RegExp(UUID_V4_SCHEMA.pattern);

/** A UUID version 4 in either case: the ids we generate (rentals, users, vehicles, areas). */
export function isUuidV4(s: unknown): s is string {
  return typeof s === 'string' && UUID_V4.test(s);
}
