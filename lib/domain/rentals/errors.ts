/**
 * The error family of the partner rental API and the rental engine: one class, one catalogue.
 * The catalogue is the requirement's error table (partner-rental-api.md §7) plus the codes we had to
 * decide where the table is silent (docs/partner-api.md lists them). The engine throws these; the
 * partner API renders them as JSON:API error objects (api/partner/errors.ts); the TOMP API maps the
 * codes to its own format.
 */

import { isUuidV4 } from '../../core/uuid.js';

export const ERRORS = {
  // register / update user
  InvalidRequestBody: { status: 400, detail: 'invalid body' },
  ErrEmptyUserExternalID: { status: 400, detail: 'empty external id' },
  EmptyUserEmailID: { status: 400, detail: 'empty e-mail' },
  ErrInvalidUserEmailID: { status: 400, detail: 'invalid e-mail format' },
  ErrUserRegistrationFailed: { status: 500, detail: 'unable to register' },
  // get / update / delete user
  InvalidUserId: { status: 400, detail: 'invalid user id' },
  ErrUserNotFound: { status: 404, detail: 'user not found' },
  UserHasActiveRental: { status: 409, detail: 'user has a running rental and cannot be deleted' },
  // start rental
  InvalidVehicleId: { status: 400, detail: 'invalid vehicle id' },
  UserNotFound: { status: 400, detail: 'user does not exist' },
  RentalAlreadyExists: { status: 400, detail: 'user already has a rental' },
  VehicleNotFound: { status: 400, detail: 'vehicle not found' },
  UserLicenceVerificationRequired: { status: 400, detail: 'user must validate driving licence' },
  UserTooFarFromVehicle: { status: 405, detail: 'user too far from vehicle' },
  ZoneIsSleeping: { status: 405, detail: 'rental not allowed during sleep hours' },
  VehicleNotAvailable: { status: 405, detail: 'vehicle unavailable' },
  FailedToUpdateVehicle: { status: 500, detail: 'error communicating with vehicle' },
  FailedToUnlockVehicle: { status: 500, detail: 'error unlocking vehicle' },
  FailedToStartRental: { status: 500, detail: 'unexpected error' },
  // end rental and rental reads
  InvalidRentalID: { status: 400, detail: 'invalid rental id' },
  RentalIDDoesNotExist: { status: 404, detail: 'rental id does not exist' },
  RentalAlreadyEnded: { status: 400, detail: 'rental already ended' },
  FailedToEndRentalNoParking: { status: 405, detail: 'not a parking area, cannot end' },
  FailedToEndRental: { status: 500, detail: 'unable to end rental' },
  InvalidInput: { status: 400, detail: 'invalid input' },
  // a live key of another API (TOMP, insurer, ops): not an unknown key (docs/partner-api.md)
  Forbidden: { status: 403, detail: 'this key does not give access to the partner rental API' },
  ActiveRentalNotFound: { status: 404, detail: 'no active rental' },
  // vehicles, pricing, zones
  BadVehicleCode: { status: 400, detail: 'vehicle code incorrect' },
  InvalidVehicleID: { status: 400, detail: 'vehicle id incorrect' },
  EmptyZoneID: { status: 400, detail: 'zone id empty' },
  ZoneNotFound: { status: 404, detail: 'zone not found' },
  // parking photo and receipt (statuses decided by us, see docs/partner-api.md)
  InvalidParkingPhoto: { status: 400, detail: 'invalid parking photo' },
  ValidateParkingPhotoFailed: { status: 422, detail: 'parking photo failed validation' },
  ErrRentalIsNotEnded: { status: 409, detail: 'rental is not ended' },
  ParkingPhotoUploadWindowExpired: { status: 410, detail: 'parking photo upload window expired' },
  ParkingPhotoAlreadyDecided: { status: 409, detail: 'a parking decision was already made for this rental' },
  ErrInvalidURLSignature: { status: 403, detail: 'invalid url signature' },
  // transport-level
  Unauthorized: { status: 401, detail: 'missing or invalid api key' },
  RateLimitExceeded: { status: 429, detail: 'rate limit exceeded' },
  NotFound: { status: 404, detail: 'no such endpoint' },
  MethodNotAllowed: { status: 405, detail: 'method not allowed on this endpoint' },
  RequestTooLarge: { status: 413, detail: 'request body too large' },
  // Idempotency-Key (api/kit/idempotency.ts; decided by us, docs/partner-api.md)
  InvalidIdempotencyKey: { status: 400, detail: 'invalid Idempotency-Key' },
  IdempotencyKeyInUse: { status: 409, detail: 'a request with this Idempotency-Key is still in progress; retry after Retry-After' },
  IdempotencyKeyReused: { status: 422, detail: 'this Idempotency-Key was used for another request' },
  ServiceUnavailable: { status: 503, detail: 'service temporarily unavailable' },
  InternalServerError: { status: 500, detail: 'internal server error' },
  // engine-internal (never reaches a partner): the auto-end sweep found the vehicle moving again
  RentalNotIdle: { status: 409, detail: 'vehicle moved recently' },
} as const satisfies Record<string, { status: number; detail: string }>;

export type RentalErrorCode = keyof typeof ERRORS;

/** The detail of the error table's second ZoneIsSleeping row: the zone rules forbid a start where the vehicle stands. */
export const ZONE_NOT_PERMITTING = 'zone not permitting rentals';

export class RentalError extends Error {
  readonly status: number;
  readonly detail: string;
  /** extra response headers (Retry-After, Allow) */
  readonly headers: Record<string, string>;
  /** extra facts for the client (JSON:API `meta`), e.g. the recorded photo decision */
  readonly meta: Record<string, unknown> | undefined;
  /**
   * top-level members of the response beside `errors`: an answer that carries a result as well as
   * an error code (the photo upload's `decision` on a bad-photo refusal)
   */
  readonly members: Record<string, unknown> | undefined;

  constructor(
    readonly code: RentalErrorCode,
    opts: {
      status?: number;
      detail?: string;
      headers?: Record<string, string>;
      meta?: Record<string, unknown>;
      members?: Record<string, unknown>;
      cause?: unknown;
    } = {},
  ) {
    const def = ERRORS[code];
    super(opts.detail ?? def.detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'RentalError';
    this.status = opts.status ?? def.status;
    this.detail = opts.detail ?? def.detail;
    this.headers = opts.headers ?? {};
    this.meta = opts.meta;
    this.members = opts.members;
  }
}

export const isRentalError = (e: unknown): e is RentalError => e instanceof RentalError;

/** The id lower-cased when it is a UUID v4; otherwise throws the given code. */
export function requireUuid(s: unknown, code: RentalErrorCode): string {
  if (!isUuidV4(s)) throw new RentalError(code);
  return s.toLowerCase();
}
