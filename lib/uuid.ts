/**
 * The one UUID text pattern (any version, either case) for ids that reach the database as uuid:
 * checking it first turns a malformed id into the caller's error instead of a SQL cast failure.
 * Version-4-only checks (ids we generate) stay with the rental engine (lib/rentals/errors.ts).
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}
