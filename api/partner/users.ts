/** Users: register, read, update, GDPR erasure (partner-rental-api.md §4, error table §7). */
import type { Router, RouterMiddleware as Mw } from '@koa/router';
import type { AppContext } from '../../lib/context.js';
import { q } from '../../lib/db.js';
import { isOutage } from '../../lib/http/outage.js';
import { RentalError, requireUuid } from '../../lib/rentals/errors.js';
import { RegisterUserBody, UpdateUserBody } from '../../schemas/partner/requests.js';
import { principalOf } from './auth.js';
import { readJson } from './body.js';
import { presentUser } from './responses.js';

// deliberately loose (local@domain.tld, no spaces): the partner owns the address, we only refuse typos
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/;

function checkEmail(email: string | undefined): string {
  const e = email?.trim() ?? '';
  if (e === '') throw new RentalError('EmptyUserEmailID');
  if (!EMAIL.test(e)) throw new RentalError('ErrInvalidUserEmailID');
  return e;
}

export function userRoutes(router: Router, app: AppContext, auth: Mw): void {
  router.post('/v1/user/register', auth, async (ctx) => {
    const body = await readJson<RegisterUserBody>(ctx, RegisterUserBody, app.config.maxBodyBytes);
    const externalId = body.externalId?.trim() ?? '';
    if (externalId === '') throw new RentalError('ErrEmptyUserExternalID');
    const email = checkEmail(body.email);
    let row;
    try {
      row = await app.db.one(q('PartnerUserInsert'), [principalOf(ctx).partnerId, email, externalId, app.clock.now()]);
    } catch (err) {
      if (isOutage(err)) throw err;
      throw new RentalError('ErrUserRegistrationFailed', { cause: err });
    }
    ctx.body = { data: presentUser(row) };
  });

  const getUser: Mw = async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidUserId');
    const row = await app.db.maybeOne(q('PartnerUserGet'), [id, principalOf(ctx).partnerId]);
    if (!row) throw new RentalError('ErrUserNotFound');
    ctx.body = { data: presentUser(row) };
  };
  router.get('/v1/user/id/:id', auth, getUser);
  router.get('/v1/users/:id', auth, getUser);

  const updateUser: Mw = async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidUserId');
    const body = await readJson<UpdateUserBody>(ctx, UpdateUserBody, app.config.maxBodyBytes);
    const email = body.email === undefined ? null : checkEmail(body.email);
    const row = await app.db.maybeOne(q('PartnerUserUpdate'), [id, principalOf(ctx).partnerId, email, app.clock.now()]);
    if (!row) throw new RentalError('ErrUserNotFound');
    ctx.body = { data: presentUser(row) };
  };
  router.patch('/v1/user/:id', auth, updateUser);
  router.patch('/v1/users/:id', auth, updateUser);

  const deleteUser: Mw = async (ctx) => {
    const id = requireUuid(ctx.params.id, 'InvalidUserId');
    const partnerId = principalOf(ctx).partnerId;
    const outcome = await app.db.tx(async (tx) => {
      if (!(await tx.maybeOne(q('PartnerUserLockForErase'), [id, partnerId]))) return 'missing' as const;
      return (await tx.maybeOne(q('PartnerUserErase'), [id, app.clock.now()])) ? ('erased' as const) : ('running' as const);
    });
    if (outcome === 'missing') throw new RentalError('ErrUserNotFound');
    if (outcome === 'running') throw new RentalError('UserHasActiveRental');
    ctx.status = 204;
  };
  router.delete('/v1/user/:id', auth, deleteUser);
  router.delete('/v1/users/:id', auth, deleteUser);
}
