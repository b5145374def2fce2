/** Users: register, read, update, GDPR erasure (partner-rental-api.md §4, error table §7). */
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { isOutage } from '../kit/outage.js';
import type { Input } from '../kit/endpoints.js';
import { RentalError } from '../../lib/domain/rentals/errors.js';
import { RegisterUserBody, UpdateUserBody } from '../../schemas/partner/requests.js';
import { dataOf, UserRecord } from '../../schemas/partner/responses.js';
import type Koa from 'koa';
import { principalOf } from './auth.js';
import { endpoint, idParam, type PartnerEndpoint } from './endpoint.js';
import { presentUser } from './responses.js';

// deliberately loose (local@domain.tld, no spaces): the partner owns the address, we only refuse typos
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/;

function checkEmail(email: string | undefined): string {
  const e = email?.trim() ?? '';
  if (e === '') throw new RentalError('EmptyUserEmailID');
  if (!EMAIL.test(e)) throw new RentalError('ErrInvalidUserEmailID');
  return e;
}

const userId = { id: idParam('user id (UUID v4)', 'InvalidUserId', '3f1c2a4e-8d2b-4c1e-9f7a-1b2c3d4e5f60') };
const oneUser = (description: string) => ({ 200: { description, schema: dataOf(UserRecord, false) } });

async function getUser(app: AppContext, ctx: Koa.Context, { params }: Input<undefined>): Promise<void> {
  const row = await app.db.maybeOne(sql('PartnerUserGet'), [params.id, principalOf(ctx).partnerId]);
  if (!row) throw new RentalError('ErrUserNotFound');
  ctx.body = { data: presentUser(row) };
}

async function updateUser(app: AppContext, ctx: Koa.Context, { params, body }: Input<UpdateUserBody>): Promise<void> {
  const email = body.email === undefined ? null : checkEmail(body.email);
  const row = await app.db.maybeOne(sql('PartnerUserUpdate'), [params.id, principalOf(ctx).partnerId, email, app.clock.now()]);
  if (!row) throw new RentalError('ErrUserNotFound');
  ctx.body = { data: presentUser(row) };
}

async function deleteUser(app: AppContext, ctx: Koa.Context, { params }: Input<undefined>): Promise<void> {
  const partnerId = principalOf(ctx).partnerId;
  const outcome = await app.db.tx(async (tx) => {
    if (!(await tx.maybeOne(sql('PartnerUserLockForErase'), [params.id, partnerId]))) return 'missing' as const;
    return (await tx.maybeOne(sql('PartnerUserErase'), [params.id, app.clock.now()])) ? ('erased' as const) : ('running' as const);
  });
  if (outcome === 'missing') throw new RentalError('ErrUserNotFound');
  if (outcome === 'running') throw new RentalError('UserHasActiveRental');
  ctx.status = 204;
}

/** Read, update and erase, at the requirement's paths or (plural) at the alias some of its samples use. */
function userEndpoints(plural: boolean): PartnerEndpoint[] {
  const suffix = plural ? 'Plural' : '';
  const alias = plural ? ' (alias of the singular path used in some of the requirement’s samples)' : '';
  const path = (singular: string) => (plural ? '/v1/users/{id}' : singular);
  return [
    endpoint({
      operationId: `getUser${suffix}`,
      method: 'get',
      path: path('/v1/user/id/{id}'),
      summary: `Get a user${alias}`,
      description: 'The user as registered by this partner (the key’s); a user of another partner, or an erased one, is 404 ErrUserNotFound.',
      tag: 'Users',
      auth: 'apiKey',
      params: userId,
      responses: oneUser('the user'),
      errors: [{ 404: ['ErrUserNotFound'] }],
      handle: getUser,
    }),
    endpoint<UpdateUserBody>({
      operationId: `updateUser${suffix}`,
      method: 'patch',
      path: path('/v1/user/{id}'),
      summary: `Update a user${alias}`,
      description: 'Only the fields sent change. Unknown fields are refused (InvalidRequestBody).',
      tag: 'Users',
      auth: 'apiKey',
      params: userId,
      body: { schema: UpdateUserBody, required: true, example: { email: 'new.address@example.com' } },
      responses: oneUser('the updated user'),
      errors: [{ 400: ['EmptyUserEmailID', 'ErrInvalidUserEmailID'], 404: ['ErrUserNotFound'] }],
      handle: updateUser,
    }),
    endpoint({
      operationId: `deleteUser${suffix}`,
      method: 'delete',
      path: path('/v1/user/{id}'),
      summary: `Erase a user (GDPR)${alias}`,
      description:
        'Removes the personal data of the user (e-mail and external id are erased, rentals stay for accounting and the feeds). Not possible while a rental runs (409).',
      tag: 'Users',
      auth: 'apiKey',
      params: userId,
      responses: { 204: { description: 'erased; no body' } },
      errors: [{ 404: ['ErrUserNotFound'], 409: ['UserHasActiveRental'] }],
      handle: deleteUser,
    }),
  ];
}

export const USER_ENDPOINTS: PartnerEndpoint[] = [
  endpoint<RegisterUserBody>({
    operationId: 'registerUser',
    idempotent: true,
    method: 'post',
    path: '/v1/user/register',
    summary: 'Register a user',
    description: 'A user must be registered before a rental can start. No uniqueness constraint on e-mail or externalId.',
    tag: 'Users',
    auth: 'apiKey',
    body: {
      schema: RegisterUserBody,
      required: true,
      // the schema lets a field be absent so that its absence answers its own code, not InvalidRequestBody
      description: 'Both fields are required: a missing or empty `externalId` is ErrEmptyUserExternalID, a missing or empty `email` EmptyUserEmailID.',
      example: { email: 'rider@example.com', externalId: 'partner-user-42' },
    },
    responses: oneUser('the new user'),
    errors: [{ 400: ['ErrEmptyUserExternalID', 'EmptyUserEmailID', 'ErrInvalidUserEmailID'], 500: ['ErrUserRegistrationFailed'] }],
    handle: async (app, ctx, { body }) => {
      const externalId = body.externalId?.trim() ?? '';
      if (externalId === '') throw new RentalError('ErrEmptyUserExternalID');
      const email = checkEmail(body.email);
      let row;
      try {
        row = await app.db.one(sql('PartnerUserInsert'), [principalOf(ctx).partnerId, email, externalId, app.clock.now()]);
      } catch (err) {
        if (isOutage(err)) throw err;
        throw new RentalError('ErrUserRegistrationFailed', { cause: err });
      }
      ctx.body = { data: presentUser(row) };
    },
  }),
  ...userEndpoints(false),
  ...userEndpoints(true),
];
