/**
 * The MDS 2.0 micromobility vehicle state machine.
 *
 * Two official sources, both encoded as data below:
 * - the "Vehicle State Events" transition table of MDS 2.0 `modes/micromobility.md`
 *   (from-states × event_type → to-state), and
 * - `models/modes/micromobility/event.yaml` of mds-openapi v2.0 (the event types an event may carry
 *   for a given resulting `vehicle_state`; `items.enum`, so EVERY listed type must be allowed).
 *
 * An event is legal when its event types, applied in order from the prior state, walk the table
 * (intermediate states discarded, per the spec prose) AND every type is allowed into the final
 * state by event.yaml. The second rule is stricter than the prose (`[trip_end, battery_low]` is
 * rejected) because records we emit must validate against the official schema.
 */

export type MdsState = 'removed' | 'available' | 'non_operational' | 'reserved' | 'on_trip' | 'non_contactable' | 'missing' | 'elsewhere';

export const MDS_STATES: readonly MdsState[] = ['removed', 'available', 'non_operational', 'reserved', 'on_trip', 'non_contactable', 'missing', 'elsewhere'];

export const MDS_EVENT_TYPES = [
  'agency_drop_off',
  'agency_pick_up',
  'battery_charged',
  'battery_low',
  'changed_geographies',
  'comms_lost',
  'comms_restored',
  'compliance_pick_up',
  'decommissioned',
  'located',
  'maintenance',
  'maintenance_pick_up',
  'not_located',
  'off_hours',
  'on_hours',
  'provider_drop_off',
  'rebalance_pick_up',
  'reservation_cancel',
  'reservation_start',
  'system_resume',
  'system_suspend',
  'trip_cancel',
  'trip_end',
  'trip_enter_jurisdiction',
  'trip_leave_jurisdiction',
  'trip_start',
  'unspecified',
] as const;
export type MdsEventType = (typeof MDS_EVENT_TYPES)[number];

/** Event types that require `trip_ids` (MDS 2.0 micromobility "Trip ID Requirements"). */
export const TRIP_EVENT_TYPES: ReadonlySet<string> = new Set(['trip_start', 'trip_end', 'trip_cancel', 'trip_enter_jurisdiction', 'trip_leave_jurisdiction']);

export interface Transition {
  readonly from: readonly MdsState[];
  readonly event: MdsEventType;
  readonly to: MdsState;
}

const ANY_CONTACTABLE: readonly MdsState[] = ['available', 'elsewhere', 'non_operational', 'on_trip', 'removed', 'reserved'];
const RESTORABLE: readonly MdsState[] = ['available', 'elsewhere', 'non_operational', 'on_trip', 'removed', 'reserved'];

/** The MDS 2.0 micromobility transition table, one row per (from-states, event_type, to). */
export const TRANSITIONS: readonly Transition[] = [
  { from: ['available'], event: 'battery_low', to: 'non_operational' },
  { from: ['available'], event: 'maintenance', to: 'non_operational' },
  { from: ['available'], event: 'off_hours', to: 'non_operational' },
  { from: ['available'], event: 'reservation_start', to: 'reserved' },
  { from: ['available'], event: 'system_suspend', to: 'non_operational' },
  { from: ANY_CONTACTABLE, event: 'comms_lost', to: 'non_contactable' },
  { from: ANY_CONTACTABLE, event: 'unspecified', to: 'non_contactable' },
  { from: ['available', 'non_contactable', 'missing'], event: 'unspecified', to: 'non_operational' },
  { from: ['available', 'non_operational', 'elsewhere'], event: 'compliance_pick_up', to: 'removed' },
  { from: ['available', 'non_operational', 'elsewhere'], event: 'maintenance_pick_up', to: 'removed' },
  { from: ['available', 'non_operational', 'elsewhere'], event: 'rebalance_pick_up', to: 'removed' },
  { from: ['available', 'non_operational', 'elsewhere', 'non_contactable', 'missing'], event: 'agency_pick_up', to: 'removed' },
  { from: ['available', 'non_operational', 'elsewhere', 'non_contactable', 'missing'], event: 'decommissioned', to: 'removed' },
  { from: ['available', 'reserved'], event: 'trip_start', to: 'on_trip' },
  { from: ['elsewhere'], event: 'trip_enter_jurisdiction', to: 'on_trip' },
  ...RESTORABLE.map((to): Transition => ({ from: ['missing'], event: 'located', to })),
  ...RESTORABLE.map((to): Transition => ({ from: ['non_contactable'], event: 'comms_restored', to })),
  { from: ['non_contactable'], event: 'not_located', to: 'missing' },
  { from: ['non_contactable'], event: 'unspecified', to: 'missing' },
  { from: ['non_contactable', 'missing'], event: 'unspecified', to: 'elsewhere' },
  { from: ['non_contactable', 'missing'], event: 'unspecified', to: 'on_trip' },
  { from: ['non_contactable', 'missing'], event: 'unspecified', to: 'reserved' },
  { from: ['non_contactable', 'missing', 'non_operational', 'available', 'elsewhere'], event: 'unspecified', to: 'removed' },
  { from: ['non_operational'], event: 'battery_charged', to: 'available' },
  { from: ['non_operational'], event: 'maintenance', to: 'available' },
  { from: ['non_operational'], event: 'on_hours', to: 'available' },
  { from: ['non_operational'], event: 'system_resume', to: 'available' },
  { from: ['non_operational', 'non_contactable', 'missing'], event: 'unspecified', to: 'available' },
  { from: ['on_trip'], event: 'changed_geographies', to: 'on_trip' },
  { from: ['on_trip'], event: 'trip_cancel', to: 'available' },
  { from: ['on_trip'], event: 'trip_end', to: 'available' },
  { from: ['on_trip'], event: 'trip_leave_jurisdiction', to: 'elsewhere' },
  { from: ['removed', 'non_contactable', 'missing'], event: 'agency_drop_off', to: 'available' },
  { from: ['removed', 'non_contactable', 'missing'], event: 'provider_drop_off', to: 'available' },
  { from: ['reserved'], event: 'reservation_cancel', to: 'available' },
];

/** mds-openapi v2.0 micromobility event.yaml: the event types allowed in an event with this vehicle_state. */
export const EVENT_TYPES_BY_STATE: Readonly<Record<MdsState, ReadonlySet<string>>> = {
  removed: new Set([
    'agency_pick_up',
    'comms_restored',
    'compliance_pick_up',
    'decommissioned',
    'located',
    'maintenance_pick_up',
    'rebalance_pick_up',
    'unspecified',
  ]),
  available: new Set([
    'agency_drop_off',
    'battery_charged',
    'comms_restored',
    'located',
    'maintenance',
    'on_hours',
    'provider_drop_off',
    'reservation_cancel',
    'system_resume',
    'trip_cancel',
    'trip_end',
    'unspecified',
  ]),
  non_operational: new Set(['battery_low', 'comms_restored', 'located', 'maintenance', 'off_hours', 'system_suspend', 'unspecified']),
  reserved: new Set(['comms_restored', 'located', 'reservation_start', 'unspecified']),
  on_trip: new Set(['changed_geographies', 'comms_restored', 'located', 'trip_enter_jurisdiction', 'trip_start', 'unspecified']),
  non_contactable: new Set(['comms_lost', 'unspecified']),
  missing: new Set(['not_located', 'unspecified']),
  elsewhere: new Set(['comms_restored', 'located', 'trip_leave_jurisdiction', 'unspecified']),
};

// (from, event) → possible targets, in table order (the first is the default for nextState).
const INDEX = new Map<string, MdsState[]>();
for (const t of TRANSITIONS) {
  for (const f of t.from) {
    const k = `${f}|${t.event}`;
    const list = INDEX.get(k) ?? [];
    if (!list.includes(t.to)) list.push(t.to);
    INDEX.set(k, list);
  }
}
// `comms_restored` / `located` usually bring a vehicle back to service: make `available` the default.
for (const [k, list] of INDEX) {
  if (list.length > 1 && list.includes('available')) INDEX.set(k, ['available', ...list.filter((s) => s !== 'available')]);
}

export function isMdsState(s: string): s is MdsState {
  return (MDS_STATES as readonly string[]).includes(s);
}

/** Every state a single event type can take a vehicle to from `from` (empty = illegal). */
export function targets(from: MdsState, eventType: string): readonly MdsState[] {
  return INDEX.get(`${from}|${eventType}`) ?? [];
}

/** The states reachable from `from` through `eventTypes` applied in order. */
function reachable(from: MdsState, eventTypes: readonly string[]): Set<MdsState> {
  let current = new Set<MdsState>([from]);
  for (const type of eventTypes) {
    const next = new Set<MdsState>();
    for (const s of current) for (const t of targets(s, type)) next.add(t);
    current = next;
    if (current.size === 0) break;
  }
  return current;
}

/**
 * Whether an event carrying `eventTypes` may move a vehicle from `from` to `to`. Needed for the
 * event types whose target is ambiguous (`comms_restored`, `located`, `unspecified`).
 */
export function isValidTransition(from: MdsState, eventTypes: readonly string[], to: MdsState): boolean {
  if (eventTypes.length === 0) return false;
  const allowed = EVENT_TYPES_BY_STATE[to];
  if (!allowed || !eventTypes.every((e) => allowed.has(e))) return false;
  return reachable(from, eventTypes).has(to);
}

/**
 * The state after `eventTypes` from `from`, or undefined when illegal. For ambiguous event types
 * the default target is returned (`available` where possible, else the first table row); callers
 * that know the resulting state should use `isValidTransition`.
 */
export function nextState(from: MdsState, eventTypes: readonly string[]): MdsState | undefined {
  if (eventTypes.length === 0) return undefined;
  let state: MdsState = from;
  for (const type of eventTypes) {
    const t = targets(state, type);
    if (t.length === 0) return undefined;
    state = t[0]!;
  }
  return isValidTransition(from, eventTypes, state) ? state : undefined;
}

export class InvalidTransitionError extends Error {
  constructor(
    readonly from: MdsState,
    readonly eventTypes: readonly string[],
    readonly to: MdsState | undefined,
  ) {
    super(`invalid MDS transition ${from} --[${eventTypes.join(',')}]--> ${to ?? '?'}`);
    this.name = 'InvalidTransitionError';
  }
}
