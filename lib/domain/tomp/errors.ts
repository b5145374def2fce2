/**
 * The one error type of the TOMP family. Rendered as the TOMP error object `{status, detail}` plus
 * `title` (the HTTP reason or a short summary) and `type` (our machine-readable code, e.g. the rental
 * engine's ErrorCode) where useful. TOMP's integer `errorcode` is not used: its wiki table is not part
 * of our contract and inventing numbers would mislead partners.
 */
import { GatewayError } from '../gateway.js';
import { isRentalError, ZONE_NOT_PERMITTING, type RentalError } from '../rentals/errors.js';

export type TompStatus = 400 | 401 | 403 | 404 | 405 | 406 | 409 | 413 | 415 | 422 | 428 | 429 | 500 | 503;

const TITLES: Record<TompStatus, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class TompError extends Error {
  readonly expose = true;
  constructor(
    readonly status: TompStatus,
    readonly detail: string,
    readonly opts: { type?: string; retryAfterSeconds?: number; allow?: string } = {},
  ) {
    super(detail);
    this.name = 'TompError';
  }

  get title(): string {
    return TITLES[this.status];
  }

  toBody(): { status: number; title: string; detail: string; type?: string } {
    return { status: this.status, title: this.title, detail: this.detail, ...(this.opts.type ? { type: this.opts.type } : {}) };
  }
}

/** Seconds a caller should wait before retrying after a vehicle-lock (gateway) failure. */
const GATEWAY_RETRY_AFTER_SECONDS = 5;

/** Why a booking cannot be made, in words for the MaaS provider (406 detail). */
const START_REASONS: Partial<Record<string, string>> = {
  VehicleNotFound: 'unknown asset',
  VehicleNotAvailable: 'the vehicle is not available (taken, reserved or out of service)',
  RentalAlreadyExists: 'the vehicle or the customer already has a running trip',
  ZoneIsSleeping: 'the zone is sleeping: no trips can start now',
  UserTooFarFromVehicle: 'the departure location is too far from the vehicle',
  UserLicenceVerificationRequired: "the customer's driving licence must be verified in this zone",
  UserNotFound: 'unknown customer',
};

/**
 * Whether a vehicle command failed for now only: the vehicle did not answer (no connectivity, a
 * timeout) or refused with `temporary` (a jammed lock, the requirement's example of a 503). A
 * refusal the vehicle does not call temporary will not go away with a retry.
 */
function vehicleFaultIsTemporary(e: RentalError): boolean {
  return e.cause instanceof GatewayError && (e.cause.reason === 'unreachable' || e.cause.temporary);
}

/**
 * The rental engine's errors (lib/domain/rentals/errors.ts) in TOMP terms. Starting: every "cannot be
 * booked" reason is 406, a vehicle that refuses the unlock for good included; a vehicle that does not
 * answer, or refuses for now (a jammed lock), is a 503 with Retry-After. Ending: the parking rules
 * are a 409 (the leg stays IN_USE; move the vehicle and retry), a lock that failed for now a 503 with
 * Retry-After, a lock the vehicle refuses for good a 500 (the leg stays IN_USE: a case for
 * POST /support UNABLE_TO_CLOSE), an already ended rental a 409.
 */
function fromRentalError(e: RentalError, phase: 'start' | 'end'): TompError {
  if (e.code === 'ServiceUnavailable') return new TompError(503, 'temporarily unavailable; retry later', { type: e.code, retryAfterSeconds: 5 });
  if (phase === 'start') {
    const reason =
      e.code === 'ZoneIsSleeping' && e.detail === ZONE_NOT_PERMITTING ? 'the zone does not permit rentals where the vehicle stands' : START_REASONS[e.code];
    if (reason) return new TompError(406, e.code === 'RentalAlreadyExists' && e.detail ? `${reason} (${e.detail})` : reason, { type: e.code });
    if (e.code === 'FailedToUnlockVehicle' || e.code === 'FailedToUpdateVehicle') {
      if (!vehicleFaultIsTemporary(e)) return new TompError(406, 'the vehicle refused to unlock; book another one', { type: e.code });
      return new TompError(503, 'the vehicle cannot unlock right now; retry later', { type: e.code, retryAfterSeconds: GATEWAY_RETRY_AFTER_SECONDS });
    }
    return new TompError(e.status >= 500 ? 500 : 406, e.status >= 500 ? 'the booking could not be made' : e.detail, { type: e.code });
  }
  switch (e.code) {
    case 'FailedToEndRentalNoParking':
      return new TompError(409, 'the vehicle is not in a place where the trip may end (no-parking area, no-riding area or outside a parking spot)', {
        type: e.code,
      });
    case 'FailedToEndRental':
      if (e.cause instanceof GatewayError && !vehicleFaultIsTemporary(e)) {
        return new TompError(500, 'the vehicle refused to lock; the leg is still in use', { type: e.code });
      }
      return new TompError(503, 'the vehicle did not lock; retry after the given time', { type: e.code, retryAfterSeconds: GATEWAY_RETRY_AFTER_SECONDS });
    case 'RentalAlreadyEnded':
      return new TompError(409, 'the leg is already finished', { type: e.code });
    case 'RentalIDDoesNotExist':
      return new TompError(404, 'leg not found', { type: e.code });
    default:
      return new TompError(e.status >= 500 ? 500 : 409, e.status >= 500 ? 'the leg could not be finished' : e.detail, { type: e.code });
  }
}

/**
 * Engine failures in TOMP terms; anything else is passed on: a database outage to the one rule of
 * api/kit/outage.ts (api/tomp/http.ts renders it: 503 ServiceUnavailable with Retry-After), the rest
 * to the renderer's 500.
 */
export function mapEngineError(err: unknown, phase: 'start' | 'end'): unknown {
  return isRentalError(err) ? fromRentalError(err, phase) : err;
}
