/**
 * Request bodies of the partner rental API (partner-rental-api.md §4). Unknown fields are refused
 * (InvalidRequestBody): a typo in a field name must not silently do nothing. Presence and emptiness
 * of register's fields are checked by the route so that they get their own codes; the schema says
 * they are required with `x-required`, which the OpenAPI document turns into `required`
 * (api/openapi/common.ts `oas`) and validation ignores.
 */
import type { FromSchema } from 'json-schema-to-ts';

const LocationSchema = {
  type: 'object',
  properties: {
    latitude: { type: 'number', minimum: -90, maximum: 90 },
    longitude: { type: 'number', minimum: -180, maximum: 180 },
  },
  required: ['latitude', 'longitude'],
  additionalProperties: false,
} as const;

export const RegisterUserBody = {
  type: 'object',
  properties: {
    email: { type: 'string', maxLength: 320 },
    externalId: { type: 'string', maxLength: 256 },
  },
  additionalProperties: false,
  // both required: a missing or empty one is ErrEmptyUserExternalID / EmptyUserEmailID (api/partner/users.ts)
  'x-required': ['email', 'externalId'],
} as const;
export type RegisterUserBody = FromSchema<typeof RegisterUserBody>;

export const UpdateUserBody = {
  type: 'object',
  properties: {
    email: { type: 'string', maxLength: 320 },
  },
  additionalProperties: false,
} as const;
export type UpdateUserBody = FromSchema<typeof UpdateUserBody>;

export const StartRentalBody = {
  type: 'object',
  properties: {
    userId: { type: 'string', maxLength: 64 },
    vehicleId: { type: 'string', maxLength: 64 },
    userStartLocation: LocationSchema,
    userLicenseValidated: { type: 'boolean' },
    beginnersMode: { type: 'boolean' },
  },
  required: ['userId', 'vehicleId'],
  additionalProperties: false,
} as const;
export type StartRentalBody = FromSchema<typeof StartRentalBody>;

export const EndRentalBody = {
  type: 'object',
  properties: {
    userEndLocation: LocationSchema,
  },
  additionalProperties: false,
} as const;
export type EndRentalBody = FromSchema<typeof EndRentalBody>;
