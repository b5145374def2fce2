/**
 * Building blocks of our GBFS file schemas. These are stricter than the official ones
 * (specs/gbfs): exactly our field lists (additionalProperties false), so a builder that drifts from
 * the requirement tables fails before a file is stored. The tests check the files against the
 * official schemas as well.
 */
const language = { type: 'string', pattern: '^[a-z]{2,3}(-[A-Z]{2})?$' } as const;

export const localized = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['text', 'language'],
    properties: { text: { type: 'string' }, language },
  },
} as const;

export const localizedUri = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['text', 'language'],
    properties: { text: { type: 'string', format: 'uri' }, language },
  },
} as const;

export const uri = { type: 'string', format: 'uri' } as const;
export const lat = { type: 'number', minimum: -90, maximum: 90 } as const;
export const lon = { type: 'number', minimum: -180, maximum: 180 } as const;
export const posix = { type: 'integer', minimum: 1450155600 } as const;
/** RFC 3339 in UTC (`Z`), no fractional seconds: the requirement's "ISO 8601 UTC string in the v3 responses" */
export const rfc3339 = { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$' } as const;

export const multiPolygon = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'coordinates'],
  properties: {
    type: { const: 'MultiPolygon' },
    coordinates: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'array',
        minItems: 1,
        items: { type: 'array', minItems: 4, items: { type: 'array', minItems: 2, maxItems: 3, items: { type: 'number' } } },
      },
    },
  },
} as const;

export const rentalUris = {
  type: 'object',
  additionalProperties: false,
  required: ['android', 'ios', 'web'],
  properties: { android: uri, ios: uri, web: uri },
} as const;

export const rentalApps = {
  type: 'object',
  additionalProperties: false,
  required: ['android', 'ios'],
  properties: {
    android: { type: 'object', additionalProperties: false, required: ['store_uri', 'discovery_uri'], properties: { store_uri: uri, discovery_uri: uri } },
    ios: { type: 'object', additionalProperties: false, required: ['store_uri', 'discovery_uri'], properties: { store_uri: uri, discovery_uri: uri } },
  },
} as const;

export const perMinPricing = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['start', 'rate', 'interval'],
    properties: { start: { type: 'integer', minimum: 0 }, rate: { type: 'number' }, interval: { type: 'integer', minimum: 1 } },
  },
} as const;

export function feedList<N extends readonly string[]>(names: N) {
  return {
    type: 'array',
    minItems: 1,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'url'],
      properties: { name: { enum: names }, url: uri },
    },
  } as const;
}

/** The GBFS envelope around a file's `data` schema. */
export function envelope<V extends '2.2' | '3.0', D extends object>(version: V, data: D) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['last_updated', 'ttl', 'version', 'data'],
    properties: {
      last_updated: version === '2.2' ? posix : rfc3339,
      ttl: { type: 'integer', minimum: 0, maximum: 3600 },
      version: { const: version },
      data,
    },
  } as const;
}

/** `{ type: object, required: [key], properties: { key: array of item } }` */
export function container<K extends string, I extends object>(key: K, item: I) {
  return {
    type: 'object',
    additionalProperties: false,
    required: [key],
    properties: { [key]: { type: 'array', items: item } } as { [P in K]: { type: 'array'; items: I } },
  } as const;
}
