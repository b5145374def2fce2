/**
 * Value schemas every family shares: the UUID texts and the feeds' time-hour. They sit below
 * everything else (schemas/ imports nothing of the project's), so the checks in lib/ are built from
 * them rather than the other way round (lib/core/uuid.ts, lib/feeds/hours.ts).
 */

/**
 * Any UUID in lower case, as we write them (the MDS records' schema). No `format`: the pattern says
 * it all, and the publisher validates every record with an ajv instance that loads no formats.
 */
export const UUID_SCHEMA = { type: 'string', maxLength: 36, pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } as const;

/** A UUID version 4 in lower case, as we write the ids we generate (the partner records' schema). */
export const UUID_V4_LOWER_SCHEMA = {
  type: 'string',
  format: 'uuid',
  maxLength: 36,
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
} as const;

/**
 * The time-hour of the hourly feeds, `YYYY-MM-DDTHH` (the documents and the kit); lib/feeds/hours.ts
 * parseHour also checks that the date is real.
 */
export const TIME_HOUR_SCHEMA = { type: 'string', minLength: 13, maxLength: 13, pattern: '^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2})$' } as const;
