/**
 * MDS 2.1 incidents (migration 000330): which TOMP support tickets are incidents and of which MDS
 * type, decided here once (docs/feeds-access.md "Incidents" publishes the same table), and the write
 * of a ticket's incident in the ticket's own transaction (api/tomp/bookings.ts). Operator staff add
 * theirs with `ops incidents add` (ops/admin/incidents.ts).
 */
import type { Queryable } from '../core/db.js';
import { sql } from '../core/sql/typed.js';
import type { IncidentType } from '../../schemas/mds/v21.js';

/**
 * TOMP 1.6.1 support types that are MDS 2.1 incidents. The other types (NOT_CLEAN, UNABLE_TO_OPEN,
 * API_TECHNICAL…) are service complaints about a vehicle or the API, not events of the vehicle on
 * the street, and stay support tickets only.
 *
 * - ACCIDENT → `crash`: the 2.1 enum's word for an accident.
 * - BROKEN_DOWN → `unplanned_stop`: a vehicle that broke down stopped where nobody planned it to,
 *   which is what 2.1's unplanned_stop names; none of the other types fits (a breakdown is not a
 *   tip-over, a near miss or vandalism, and `harsh_stopping` is a braking manoeuvre). A breakdown
 *   caused by vandalism is re-typed by nothing here: TOMP does not say so, and we do not guess.
 */
export const TOMP_INCIDENT_TYPES: Readonly<Partial<Record<string, IncidentType>>> = Object.freeze({
  ACCIDENT: 'crash',
  BROKEN_DOWN: 'unplanned_stop',
});

/** The MDS 2.1 type of a TOMP support type, or undefined when such a ticket is no incident. */
function incidentTypeOfTicket(supportType: string): IncidentType | undefined {
  return Object.hasOwn(TOMP_INCIDENT_TYPES, supportType) ? TOMP_INCIDENT_TYPES[supportType] : undefined;
}

/**
 * Writes the incident of support ticket `ticketId` when its type is one (TOMP_INCIDENT_TYPES); run
 * it in the transaction that inserted the ticket, so a ticket and its incident exist together or not
 * at all. Returns the incident id, or undefined for a ticket that is no incident.
 */
export async function recordTicketIncident(db: Queryable, ticketId: string, supportType: string): Promise<string | undefined> {
  const type = incidentTypeOfTicket(supportType);
  if (type === undefined) return undefined;
  return (await db.one(sql('IncidentFromTicket'), [ticketId, type])).incident_id;
}
