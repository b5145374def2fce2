/**
 * Writing MDS vehicle events (status changes). Every state change of a vehicle goes through
 * `recordEvent`, which checks it against the MDS 2.0 state machine under the vehicle's row lock.
 */
import { Db, type Queryable } from '../../core/db.js';
import { sql } from '../../core/sql/typed.js';
import { InvalidTransitionError, isValidTransition, isMdsState, TRIP_EVENT_TYPES, type MdsState } from './state-machine.js';

export { InvalidTransitionError };

export interface EventInput {
  deviceId: string;
  zoneId: string;
  eventTypes: string[];
  vehicleState: MdsState;
  ts: Date;
  location: { lat: number; lng: number };
  batteryPercent: number | null;
  tripIds?: string[];
  /** When the event reached us; defaults to the database's now(). */
  recordedAt?: Date;
  /**
   * The vehicle's current `mds_state`, when the caller already read it under the vehicle's row lock
   * in this transaction (the rental engine does): saves the lock-and-read round trip.
   */
  lockedState?: string;
}

class VehicleNotFoundError extends Error {
  constructor(readonly deviceId: string) {
    super(`vehicle ${deviceId} not found`);
    this.name = 'VehicleNotFoundError';
  }
}

/**
 * Locks the vehicle, checks `vehicles.mds_state --eventTypes--> vehicleState`, inserts the event and
 * sets the new state. Pass a transaction when the event is part of a larger change; given the pool
 * it opens its own transaction so that the lock means something. Returns the event id.
 * Throws InvalidTransitionError (illegal transition, or a trip event without trip ids) and
 * VehicleNotFoundError.
 */
export async function recordEvent(q: Queryable, e: EventInput): Promise<string> {
  if (q instanceof Db) return q.tx((tx) => recordEvent(tx, e));
  let from = e.lockedState;
  if (from === undefined) {
    const vehicle = await q.maybeOne(sql('FleetLockVehicle'), [e.deviceId]);
    if (!vehicle) throw new VehicleNotFoundError(e.deviceId);
    from = vehicle.mds_state;
  }
  if (!isMdsState(from) || !isValidTransition(from, e.eventTypes, e.vehicleState)) {
    throw new InvalidTransitionError(from as MdsState, e.eventTypes, e.vehicleState);
  }
  // MDS 2.0: trip events must carry at least one trip id.
  if (e.eventTypes.some((t) => TRIP_EVENT_TYPES.has(t)) && !(e.tripIds && e.tripIds.length > 0)) {
    throw new InvalidTransitionError(from, e.eventTypes, e.vehicleState);
  }
  const row = await q.one(sql('FleetInsertEventSetState'), [
    e.deviceId,
    e.zoneId,
    e.eventTypes,
    e.vehicleState,
    e.ts,
    e.location.lng,
    e.location.lat,
    e.batteryPercent,
    e.tripIds && e.tripIds.length > 0 ? e.tripIds : null,
    e.recordedAt ?? null,
  ]);
  return row.event_id;
}
