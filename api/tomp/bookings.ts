/**
 * Booking and trip execution: POST /bookings/one-stop, GET /bookings/{id}, POST /bookings/{id}/events
 * (COMMIT/CANCEL of a pending booking), GET /legs/{id}, POST /legs/{id}/events (START_FINISHING,
 * FINISH), POST /support and /support/.
 */
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { TompError } from '../../lib/domain/tomp/errors.js';
import { applyLegEvent, createOneStopBooking, getBooking, getBookingByLeg, readBooking, viewBooking, viewLeg, type Caller } from './booking-flow.js';
import { operateBooking } from '../../lib/domain/tomp/holds.js';
import { rfc3339Utc } from '../../lib/core/clock.js';
import { BookingOperation, BOOKING_OPERATIONS, LegEvent, LEG_EVENTS, OneStopBookingRequest, SupportRequest } from '../../schemas/tomp/requests.js';
import { principalOf } from './auth.js';
import { preferredLanguage } from './http.js';
import type { Input } from '../kit/endpoints.js';
import { isUuid } from '../../lib/core/uuid.js';
import { recordTicketIncident } from '../../lib/domain/incidents.js';

const callerOf = (ctx: Koa.Context): Caller => {
  const p = principalOf(ctx);
  return { partnerId: p.partnerId, zones: p.zones, tompPostponedCommit: p.tompPostponedCommit };
};

export async function oneStop(app: AppContext, ctx: Koa.Context, { body }: Input<OneStopBookingRequest>): Promise<void> {
  const language = preferredLanguage(ctx.get('accept-language'));
  const result = await createOneStopBooking(app, callerOf(ctx), {
    assetId: body.useAssets[0],
    from: body.from.coordinates,
    externalId: body.customer.externalId,
    licences: body.customer.licenses,
    radius: body.radius,
    language,
  });
  ctx.status = 201;
  ctx.set('Content-Language', result.language);
  ctx.set('Expires', result.expiresAt.toUTCString());
  ctx.set('Location', `${app.config.publicBaseUrl}/edge/tomp/bookings/${result.booking.id}`);
  ctx.body = result.booking;
}

export async function bookingRead(app: AppContext, ctx: Koa.Context, { params }: Input<undefined>): Promise<void> {
  const row = await getBooking(app, callerOf(ctx), params.id);
  ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language'), row.language));
  ctx.body = viewBooking(app, row);
}

export async function bookingEvents(app: AppContext, ctx: Koa.Context, { params, body }: Input<BookingOperation>): Promise<void> {
  const id = params.id;
  const caller = callerOf(ctx);
  if (!(BOOKING_OPERATIONS as readonly string[]).includes(body.operation)) {
    throw new TompError(400, `operation ${body.operation} is not supported; use ${BOOKING_OPERATIONS.join(' or ')}`);
  }
  // unknown ids are 404 before anything else
  if (!(await readBooking(app, caller, id))) throw new TompError(404, 'booking not found');
  await operateBooking(app, caller.partnerId, id.toLowerCase(), body.operation as 'COMMIT' | 'CANCEL');
  const row = await getBooking(app, caller, id);
  ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language'), row.language));
  ctx.set('Expires', row.expires_at.toUTCString());
  ctx.body = viewBooking(app, row);
}

export async function legRead(app: AppContext, ctx: Koa.Context, { params }: Input<undefined>): Promise<void> {
  const row = await getBookingByLeg(app, callerOf(ctx), params.id);
  ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language'), row.language));
  ctx.body = viewLeg(app, row);
}

export async function legEvents(app: AppContext, ctx: Koa.Context, { params, body }: Input<LegEvent>): Promise<void> {
  const id = params.id;
  const caller = callerOf(ctx);
  // 404 for an unknown leg wins over the event check
  await getBookingByLeg(app, caller, id);
  if (!(LEG_EVENTS as readonly string[]).includes(body.event)) {
    throw new TompError(400, `event ${body.event} is not supported; use ${LEG_EVENTS.join(' or ')}`);
  }
  const leg = await applyLegEvent(app, caller, id, body.event as 'START_FINISHING' | 'FINISH', body.userLocation?.coordinates);
  ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language')));
  ctx.body = leg;
}

export async function support(app: AppContext, ctx: Koa.Context, { body }: Input<SupportRequest>): Promise<void> {
  const caller = callerOf(ctx);
  const booking = isUuid(body.id) ? await app.db.maybeOne(sql('TompBookingId'), [body.id.toLowerCase(), caller.partnerId]) : undefined;
  if (!booking) throw new TompError(404, 'booking not found');
  const time = new Date(body.time);
  // the date-time format admits leap seconds (23:59:60) and offsets that leave the 4-digit years,
  // which JS dates and RFC 3339 output cannot carry
  if (Number.isNaN(time.getTime()) || time.getUTCFullYear() < 1 || time.getUTCFullYear() > 9999) {
    throw new TompError(400, 'invalid request body: time is not a representable date-time');
  }
  // an ACCIDENT or BROKEN_DOWN ticket is also an MDS 2.1 incident (lib/domain/incidents.ts), written with it
  const ticket = await app.db.tx(async (tx) => {
    const row = await tx.one(sql('TompInsertSupportTicket'), [
      booking.id,
      caller.partnerId,
      body.supportType,
      time,
      body.contactInformationEndUser,
      body.comment,
      app.clock.now(),
    ]);
    await recordTicketIncident(tx, row.id, body.supportType);
    return row;
  });
  ctx.status = 200;
  ctx.set('Content-Language', preferredLanguage(ctx.get('accept-language')));
  ctx.body = {
    id: booking.id,
    supportType: body.supportType,
    time: rfc3339Utc(time),
    contactInformationEndUser: body.contactInformationEndUser,
    comment: body.comment,
    status: ticket.status,
  };
}
