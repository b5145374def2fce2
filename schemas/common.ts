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

/**
 * A local wall-clock time of a zone's sleep window, the one grammar the zone file, the rental engine,
 * GBFS and the simulator read (lib/domain/zones.ts localTimeMinutes): `H:MM` or `HH:MM` with hours
 * 0–23, or `24:00`, the midnight that ends a day.
 */
export const LOCAL_TIME_SCHEMA = { type: 'string', pattern: '^(([01]?[0-9]|2[0-3]):[0-5][0-9]|24:00)$' } as const;

/**
 * A sleep window of a zone, in its time zone: from `start` up to (not including) `end`; an end before
 * its start runs over midnight, and a start equal to its end is an empty window.
 */
export const SLEEP_WINDOW_SCHEMA = {
  type: 'object',
  required: ['start', 'end'],
  additionalProperties: false,
  properties: { start: LOCAL_TIME_SCHEMA, end: LOCAL_TIME_SCHEMA },
} as const;
