/**
 * The MDS events a vehicle's own reports imply, decided in one place: what the vehicle was before
 * its batch (the row the batch locked) against what it is after.
 *
 * - `battery_low` (available → non_operational, partner status unavailable): an available vehicle,
 *   ready for partners and not on a ride, below its zone's minimum battery. Level-triggered: a
 *   vehicle that stands below the minimum is out of service, whoever noticed first.
 * - `maintenance` (available → non_operational): the same vehicle reporting a fault.
 * - `battery_charged` (non_operational → available, ready): a vehicle out of service for its battery
 *   (its last event battery_low) whose battery rose past the minimum plus CHARGED_MARGIN in this
 *   batch, with no fault. Edge-triggered: only the change the vehicle reported brings it back, never
 *   a vehicle the operator holds back (the live simulator's, or a person's).
 * - `maintenance` (non_operational → available): a vehicle out of service for a fault (its last
 *   event maintenance) whose faults cleared in this batch, its battery at the minimum or above.
 *
 * The transition itself is checked by recordEvent against the MDS state machine, under the row lock
 * the batch holds.
 */
import type { MdsState } from '../lib/domain/fleet/state-machine.js';

/** Percentage points above the zone's minimum a battery must reach to count as charged again. */
const CHARGED_MARGIN = 5;

export interface Before {
  battery_percent: number;
  faults: string[];
  mds_state: string;
  status: string;
  min_battery_percent: number;
}

/**
 * Whether a vehicle's batch may imply an event (then IngestImpliedEventCandidates reads it again,
 * after the batch's writes): an available vehicle, ready for partners, that reported a battery below
 * its zone's minimum or a fault; a vehicle out of service that reported anything. Most batches have
 * none, and skip the query. `batteries` and `faults` are what the batch reported of the vehicle.
 */
export function mayImplyEvent(before: Before, batteries: readonly number[], faulty: boolean): boolean {
  if (before.mds_state === 'available' && before.status === 'ready')
    return faulty || before.faults.length > 0 || batteries.some((b) => b < before.min_battery_percent);
  return before.mds_state === 'non_operational' && before.status === 'unavailable';
}

export interface After {
  mds_state: string;
  battery_percent: number;
  faults: string[];
  min_battery_percent: number;
  last_event_types: string[] | null;
}

export interface Implied {
  eventType: 'battery_low' | 'battery_charged' | 'maintenance';
  vehicleState: MdsState;
  status: 'ready' | 'unavailable';
}

export function impliedEvent(before: Before, after: After): Implied | undefined {
  const faulty = after.faults.length > 0;
  if (after.mds_state === 'available') {
    if (faulty) return { eventType: 'maintenance', vehicleState: 'non_operational', status: 'unavailable' };
    if (after.battery_percent < after.min_battery_percent) return { eventType: 'battery_low', vehicleState: 'non_operational', status: 'unavailable' };
    return undefined;
  }
  if (after.mds_state !== 'non_operational' || after.last_event_types?.length !== 1 || faulty) return undefined;
  const last = after.last_event_types[0];
  const charged = after.min_battery_percent + CHARGED_MARGIN;
  if (last === 'battery_low' && before.battery_percent < charged && after.battery_percent >= charged)
    return { eventType: 'battery_charged', vehicleState: 'available', status: 'ready' };
  if (last === 'maintenance' && before.faults.length > 0 && after.battery_percent >= after.min_battery_percent)
    return { eventType: 'maintenance', vehicleState: 'available', status: 'ready' };
  return undefined;
}
