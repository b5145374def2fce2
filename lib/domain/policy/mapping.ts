/**
 * A city's MDS Policy rules in the platform's terms: the one decision of what each rule becomes
 * (docs/city-policy.md has the table) and of when it is in force. The reader (publisher/policy/read.ts)
 * maps every rule of the last good documents into `city_rules`; the clock (publisher/policy/apply.ts)
 * asks `inForce` and keeps the city's areas in `areas` while their rules are.
 *
 *   speed, a maximum                         → slow-zone with that limit (mph rounded down in km/h)
 *   count, maximum 0, vehicles on a trip     → no-riding
 *   count, maximum 0, rides ending / parked  → no-parking
 *   count, another cap (a minimum, a maximum) → fleet-cap alert with its figures
 *   time, on parked vehicles                 → parking-time alert with its limit
 *   anything else                            → shown and ignored, with the reason
 *
 * Order of operations (MDS Policy): a vehicle matched by an earlier rule of a policy is not evaluated
 * by its later ones, so an area rule covers its geographies less those of the earlier rules of its
 * policy that match the same vehicles (`earlierGeographies`, subtracted in PostGIS).
 */
import type { Geography, Policy, PolicyRule } from '../../../schemas/mds/policy.js';
import { mdsVehicleType, type VEHICLE_STATES_20 } from '../../../schemas/mds/common.js';
import { POLICY_DAYS } from '../../../schemas/mds/policy.js';
import { TZDate } from '@date-fns/tz';

export const AREA_MAPPINGS = ['slow-zone', 'no-parking', 'no-riding'] as const;
export type RuleMapping = (typeof AREA_MAPPINGS)[number] | 'fleet-cap' | 'parking-time' | 'ignored';

export interface VehicleTypeRow {
  id: string;
  form_factor: string;
  propulsion_type: string;
}

export interface MappedRule {
  policyId: string;
  ruleId: string;
  policyName: string;
  ruleName: string;
  ruleType: string;
  position: number;
  mapping: RuleMapping;
  note: string;
  maxSpeedKph: number | null;
  minimum: number | null;
  maximum: number | null;
  ruleUnits: string | null;
  states: Record<string, string[]>;
  /** our vehicle type ids the rule applies to; [] every one */
  vehicleTypes: string[];
  startsAt: Date;
  endsAt: Date | null;
  /** 0 = Sunday … 6 = Saturday; null every day */
  days: number[] | null;
  startTime: string;
  endTime: string;
  /** the polygon geometries (GeoJSON text) of the rule's geographies; [] for a rule without an area */
  geometries: string[];
  /** those of the earlier rules of its policy that match the same vehicles */
  earlierGeographies: string[];
}

export interface MappingInput {
  policies: readonly Policy[];
  geographies: readonly Geography[];
  /** the policies file's own end_date (flat files), which ends every policy in it */
  fileEndDate?: number;
  providerId: string;
  vehicleTypes: readonly VehicleTypeRow[];
}

const PARKED: ReadonlyArray<(typeof VEHICLE_STATES_20)[number]> = ['available', 'non_operational', 'reserved'];
const MPH_KPH = 1.609344;

/**
 * The problems that make a pair of documents unusable as a whole (the reader refuses them and keeps
 * the last good ones): a rule naming a geography the geographies document does not hold, the same
 * policy or geography id twice (the official Geography examples give no-ride-zone and
 * municipal-boundary one id: a rule naming it could mean either). Schema validity is checked before (schemas/mds/policy.ts).
 */
export function documentProblems(policies: readonly Policy[], geographies: readonly Geography[]): string[] {
  const problems: string[] = [];
  const geos = new Set<string>();
  for (const g of geographies) {
    if (geos.has(g.geography_id)) problems.push(`geography ${g.geography_id} appears twice`);
    geos.add(g.geography_id);
  }
  const seen = new Set<string>();
  for (const p of policies) {
    if (seen.has(p.policy_id)) problems.push(`policy ${p.policy_id} appears twice`);
    seen.add(p.policy_id);
    for (const r of p.rules) {
      for (const g of r.geographies)
        if (!geos.has(g)) problems.push(`policy ${p.policy_id} rule ${r.rule_id} names geography ${g}, which the geographies document does not hold`);
    }
  }
  return problems;
}

/** Every rule of the documents, mapped. */
export function mapPolicies(input: MappingInput): MappedRule[] {
  const geoById = new Map(input.geographies.map((g) => [g.geography_id, g]));
  // a policy ends where one that replaces it (prev_policies) starts
  const supersededAt = new Map<string, number>();
  for (const p of input.policies) {
    for (const prev of p.prev_policies ?? []) supersededAt.set(prev, Math.min(supersededAt.get(prev) ?? Infinity, p.start_date));
  }
  const out: MappedRule[] = [];
  for (const policy of input.policies) {
    const policyEnd = Math.min(policy.end_date ?? Infinity, supersededAt.get(policy.policy_id) ?? Infinity, input.fileEndDate ?? Infinity);
    const policyIgnored =
      policy.mode_id !== 'micromobility'
        ? `the policy is for mode ${policy.mode_id}, not micromobility`
        : policy.provider_ids?.length && !policy.provider_ids.includes(input.providerId)
          ? 'the policy names other providers only (provider_ids)'
          : undefined;
    policy.rules.forEach((rule, position) => {
      const geos = rule.geographies.map((id) => geoById.get(id)).filter((g): g is Geography => g !== undefined);
      let startsAt = policy.start_date;
      let endsAt = policyEnd;
      for (const g of geos) {
        if (g.effective_date !== undefined) startsAt = Math.max(startsAt, g.effective_date);
        if (g.retire_date !== undefined) endsAt = Math.min(endsAt, g.retire_date);
      }
      const vehicleTypes = vehicleTypesOf(rule, input.vehicleTypes);
      const decided = decide(rule, policyIgnored, vehicleTypes);
      const geometries = decided.mapping === 'ignored' ? [] : geos.flatMap(polygonsOf);
      const areaWithoutPolygons = AREA_MAPPINGS.includes(decided.mapping as never) && geometries.length === 0;
      const earlier = policy.rules.slice(0, position).filter((e) => matchesSame(e, rule));
      out.push({
        policyId: policy.policy_id,
        ruleId: rule.rule_id,
        policyName: policy.name,
        ruleName: rule.name,
        ruleType: rule.rule_type,
        position,
        ...(areaWithoutPolygons ? { mapping: 'ignored', note: 'its geographies hold no polygon (points or lines only)', maxSpeedKph: null } : decided),
        minimum: rule.minimum ?? null,
        maximum: rule.maximum ?? null,
        ruleUnits: rule.rule_units ?? null,
        states: Object.fromEntries(Object.entries(rule.states ?? {}).map(([k, v]) => [k, [...(v ?? [])]])),
        vehicleTypes: vehicleTypes ?? [],
        startsAt: new Date(startsAt),
        endsAt: Number.isFinite(endsAt) ? new Date(endsAt) : null,
        days: rule.days?.length ? rule.days.map((d) => POLICY_DAYS.indexOf(d)).sort() : null,
        startTime: rule.start_time ?? '00:00:00',
        endTime: rule.end_time ?? '23:59:59',
        geometries: areaWithoutPolygons ? [] : geometries,
        earlierGeographies: AREA_MAPPINGS.includes(decided.mapping as never)
          ? earlier.flatMap((e) =>
              e.geographies
                .map((id) => geoById.get(id))
                .filter((g): g is Geography => g !== undefined)
                .flatMap(polygonsOf),
            )
          : [],
      });
    });
  }
  return out;
}

type Decision = { mapping: RuleMapping; note: string; maxSpeedKph: number | null };

function decide(rule: PolicyRule, policyIgnored: string | undefined, vehicleTypes: string[] | undefined | null): Decision {
  const ignored = (note: string): Decision => ({ mapping: 'ignored', note, maxSpeedKph: null });
  if (policyIgnored) return ignored(policyIgnored);
  if (vehicleTypes === null) return ignored('its vehicle_types and propulsion_types name none of our vehicle types');
  const states = rule.states ?? {};
  const keys = Object.keys(states) as Array<(typeof VEHICLE_STATES_20)[number]>;
  const all = keys.length === 0;
  const events = (s: string) => (states as Record<string, readonly string[] | undefined>)[s] ?? [];
  // a state listed with no events means every event of it (MDS Policy: an empty list is "all")
  const onTrip = all || (keys.includes('on_trip') && (events('on_trip').length === 0 || events('on_trip').some((e) => e !== 'trip_end')));
  const ending =
    all ||
    PARKED.some((s) => keys.includes(s) && (events(s).length === 0 || events(s).includes('trip_end'))) ||
    (keys.includes('on_trip') && events('on_trip').includes('trip_end'));
  const parked = all || PARKED.some((s) => keys.includes(s));
  const max = rule.maximum ?? null;
  const min = rule.minimum ?? null;
  const fees = rule.rate_amount ? ' (its rate is not charged by the platform: fees are settled with the city)' : '';
  switch (rule.rule_type) {
    case 'speed': {
      if (max === null || max <= 0) return ignored('a speed rule without a positive maximum sets no limit');
      const kph = rule.rule_units === 'mph' ? Math.floor(max * MPH_KPH) : max;
      if (kph <= 0) return ignored('its limit is below 1 km/h');
      return {
        mapping: 'slow-zone',
        note: `slow zone: at most ${kph} km/h${rule.rule_units === 'mph' ? ` (${max} mph)` : ''}, sent to the vehicles riding in it${fees}`,
        maxSpeedKph: kph,
      };
    }
    case 'count': {
      if (max === 0 && onTrip)
        return { mapping: 'no-riding', note: `no riding: no vehicle on a trip may be here; a ride cannot start or end here${fees}`, maxSpeedKph: null };
      if (max === 0 && ending) return { mapping: 'no-parking', note: `no parking: a rental cannot end here${fees}`, maxSpeedKph: null };
      if (max === null && (min === null || min === 0)) return ignored('a count rule without a minimum or a maximum constrains nothing');
      return {
        mapping: 'fleet-cap',
        note: `fleet cap: ${[min ? `at least ${min}` : '', max !== null ? `at most ${max}` : ''].filter(Boolean).join(' and ')} vehicles in ${keys.length ? keys.join(', ') : 'any state'}; an alert in the compliance view, deployments are the operations team's${fees}`,
        maxSpeedKph: null,
      };
    }
    case 'time': {
      if (!parked) return ignored('a time rule on vehicles that are not parked (on a trip): not a parking-time limit the platform can act on');
      if (max === null) return ignored('a time rule without a maximum sets no limit');
      return {
        mapping: 'parking-time',
        note: `parking time: at most ${max} ${rule.rule_units ?? ''} in ${keys.length ? keys.filter((k) => PARKED.includes(k)).join(', ') : 'any parked state'}; an alert in the compliance view${fees}`,
        maxSpeedKph: null,
      };
    }
    case 'user':
      return ignored('information for riders (a user rule): nothing the platform or the vehicles can enforce');
    default:
      return ignored(`rule type ${(rule as { rule_type: string }).rule_type} is not one the platform knows`);
  }
}

/** Our vehicle type ids a rule names: undefined every one, null none of ours. */
function vehicleTypesOf(rule: PolicyRule, types: readonly VehicleTypeRow[]): string[] | undefined | null {
  const byType = rule.vehicle_types?.length ? new Set<string>(rule.vehicle_types) : undefined;
  const byPropulsion = rule.propulsion_types?.length ? new Set<string>(rule.propulsion_types) : undefined;
  if (!byType && !byPropulsion) return undefined;
  const ids = types
    .filter((t) => {
      return (!byType || byType.has(mdsVehicleType(t.form_factor))) && (!byPropulsion || byPropulsion.has(t.propulsion_type));
    })
    .map((t) => t.id);
  if (ids.length === 0) return null;
  return ids.length === types.length ? undefined : ids;
}

/** Could one vehicle match both rules (a state and a vehicle type in common)? */
function matchesSame(a: PolicyRule, b: PolicyRule): boolean {
  const sa = Object.keys(a.states ?? {});
  const sb = Object.keys(b.states ?? {});
  const states = sa.length === 0 || sb.length === 0 || sa.some((s) => sb.includes(s));
  const ta = a.vehicle_types ?? [];
  const tb = b.vehicle_types ?? [];
  const types = ta.length === 0 || tb.length === 0 || ta.some((t) => (tb as readonly string[]).includes(t));
  return states && types;
}

function polygonsOf(g: Geography): string[] {
  return g.geography_json.features
    .map((f) => f.geometry as { type: string; coordinates: unknown })
    .filter((geom) => geom.type === 'Polygon' || geom.type === 'MultiPolygon')
    .map((geom) => JSON.stringify({ type: geom.type, coordinates: geom.coordinates }));
}

const secondsOf = (hhmmss: string) => {
  const [h, m, s] = hhmmss.split(':').map(Number);
  return h * 3600 + m * 60 + s;
};

/**
 * Is the rule in force at `now` in the zone's time zone: inside [startsAt, endsAt), on one of its
 * days, from start_time to end_time (both included: the default 23:59:59 ends at midnight). An end
 * before the start runs over midnight, and the hours after midnight belong to the day it started.
 */
export function inForce(rule: Pick<MappedRule, 'startsAt' | 'endsAt' | 'days' | 'startTime' | 'endTime'>, now: Date, timeZone: string): boolean {
  if (now < rule.startsAt || (rule.endsAt && now >= rule.endsAt)) return false;
  // the zone's wall clock, as the GBFS sleep windows read it (lib/feeds/gbfs/time.ts)
  const local = new TZDate(now.getTime(), timeZone);
  const day = local.getDay();
  const seconds = local.getHours() * 3600 + local.getMinutes() * 60 + local.getSeconds();
  const onDay = (d: number) => rule.days === null || rule.days.includes((d + 7) % 7);
  const s = secondsOf(rule.startTime);
  const e = secondsOf(rule.endTime) + 1;
  if (s < e) return onDay(day) && seconds >= s && seconds < e;
  return (seconds >= s && onDay(day)) || (seconds < e && onDay(day - 1));
}
