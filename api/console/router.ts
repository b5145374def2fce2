/**
 * The operator console's API (/console/api/*) on the main host: read by the console page and
 * usable by any HTTP client of the operator's staff. Every route needs an API key of scope `ops`
 * (`npm run ops -- keys create --scope ops`), sent like the other API keys (X-Access-Token or
 * X-Auth-Token) or as `Authorization: Bearer <key>`; errors are the feeds' error body
 * (api/feeds/errors.ts), so one parser reads both. The figures come from the function the CLI
 * uses (lib/publication/status.ts publicationStatus), never from a second copy of their SQL; a
 * republish is queued for the publishers (lib/publication/queue.ts) and answered at once with what
 * was queued, never published inside the request.
 */
import { isZoneId, ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import Router from '@koa/router';
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { apiKeyGate, apiOfScope, bearerKey, principalOf } from '../kit/api-key-gate.js';
import { sql } from '../../lib/core/sql/typed.js';
import { parseHour } from '../../lib/feeds/hours.js';
import { UnknownFeedError } from '../../lib/feeds/publications.js';
import { publicationQueue, queueRepublish, type RepublishQueued } from '../../lib/publication/queue.js';
import { OpsError, publicationStatus } from '../../lib/publication/status.js';
import { BodyRefused, closeIfBodyUnread, readJsonBody } from '../kit/body.js';
import { FeedError, badParam, feedErrors } from '../feeds/errors.js';
import { healthFigures } from './health.js';
import { requestLogOf } from '../kit/request-log.js';
import { STATUS_TTL } from '../../lib/feeds/gbfs/files.js';
import type { Logger } from '../../lib/core/log.js';
import { complianceView, PolicySourceError, removePolicySource, savePolicySource, type PolicyAuthType } from '../../lib/domain/policy/sources.js';
import { queuePolicyRead } from '../../lib/publication/policy-queue.js';
import { createFeedKey, listFeedKeys, revokeFeedKey } from '../../lib/feeds/keys.js';
import { isUuid } from '../../lib/core/uuid.js';

const CHALLENGE = 'Bearer realm="console"';

/**
 * The audit lines (who republished what) at `info` on a logger of their own, whatever LOG_LEVEL
 * hides: `make run` logs at warn, and an audit trail that does not show is none. `silent` (the
 * tests) silences them too. Each line carries `"audit": "console"` to filter on.
 */
function audit(log: Logger): Logger {
  const level = log.level === 'silent' ? 'silent' : log.isLevelEnabled('info') ? log.level : 'info';
  return log.child({ audit: 'console' }, { level });
}

function consoleUnauthorized(description: string): FeedError {
  return new FeedError(401, 'invalid_token', description, [description], { 'WWW-Authenticate': CHALLENGE });
}

/** The ops key: X-Access-Token, X-Auth-Token, or a bearer token (operator staff: no rate limit). */
function opsAuth(app: AppContext): Koa.Middleware {
  return apiKeyGate(app, {
    scope: 'ops',
    family: 'console',
    keyOf: (koa) => koa.get('X-Access-Token') || koa.get('X-Auth-Token') || bearerKey(koa),
    errors: {
      missing: () => consoleUnauthorized('an ops key is required (X-Access-Token, X-Auth-Token or Authorization: Bearer)'),
      refused: () => consoleUnauthorized('unknown, expired or revoked ops key'),
      otherApi: (scope) => new FeedError(403, 'insufficient_scope', `this key is not an ops key; it is a key of ${apiOfScope[scope]}`, []),
    },
  });
}

const hourQuery = (raw: unknown, name: string): Date | undefined => {
  if (raw === undefined || raw === '') return undefined;
  const h = typeof raw === 'string' ? parseHour(raw) : undefined;
  if (!h) throw badParam(`${name} must be a UTC hour YYYY-MM-DDTHH`);
  return h;
};

/** A console request's JSON body, its refusals in the feeds' error body (413 too large, 400 not JSON). */
async function consoleBody(app: AppContext, koa: Koa.Context): Promise<unknown> {
  return readJsonBody(koa, app.config.maxBodyBytes).catch((err) => {
    if (err instanceof BodyRefused) {
      closeIfBodyUnread(koa);
      throw new FeedError(err.reason === 'too_large' ? 413 : 400, 'bad_param', err.message);
    }
    if (err instanceof SyntaxError) throw badParam('the body is not valid JSON');
    throw err;
  });
}

export function consoleRoutes(app: AppContext): Koa.Middleware {
  const router = new Router({ prefix: '/console/api' });
  router.use(feedErrors(), opsAuth(app));

  // the same table as `make publish-status`, per zone
  router.get('/publishing', async (koa) => {
    const zone = typeof koa.query.zone === 'string' && koa.query.zone ? koa.query.zone : 'all';
    try {
      const s = await publicationStatus(app, {
        zones: zone === 'all' ? 'all' : [zone],
        from: hourQuery(koa.query.from, 'from'),
        to: hourQuery(koa.query.to, 'to'),
      });
      koa.set('Cache-Control', 'no-store');
      koa.body = { feeds: s.feeds, rows: s.rows, totals: s.totals, failures: s.failures };
    } catch (err) {
      if (err instanceof OpsError) throw badParam(err.message);
      throw err;
    }
  });

  // republish chosen (feed, hour) cells of one zone, as `make republish` does for a window: queued
  // for the publishers (one forced job per hour) and answered at once, 202 with what was queued
  // (RepublishQueuedSchema); the publishing table shows the result. The log lines name the key and
  // partner that asked.
  router.post('/republish', async (koa) => {
    const body = (await consoleBody(app, koa)) as { zone?: unknown; cells?: unknown } | undefined;
    const cells: unknown[] | undefined = Array.isArray(body?.cells) ? body.cells : undefined;
    if (typeof body?.zone !== 'string' || !cells || !cells.length || cells.length > 500)
      throw badParam('body must be {"zone": id, "cells": [{"feed": id, "hour": "YYYY-MM-DDTHH"}, …]} with 1–500 cells');
    const parsed = cells.map((c, i) => {
      const cell = c as { feed?: unknown; hour?: unknown } | null | undefined;
      const hour = typeof cell?.hour === 'string' ? parseHour(cell.hour) : undefined;
      const feed = cell?.feed;
      if (!hour || typeof feed !== 'string') throw badParam(`cells[${i}] must be {"feed": id, "hour": "YYYY-MM-DDTHH"}`);
      return { feed, hour };
    });
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info(
      { keyId: principal.keyId, partner: principal.partnerName, zone: body.zone, cells: cells.length },
      'console republish requested',
    );
    let queued: RepublishQueued;
    try {
      queued = await queueRepublish(app, await publicationQueue(app), body.zone, parsed);
    } catch (err) {
      if (err instanceof OpsError || err instanceof UnknownFeedError) throw badParam(err.message);
      throw err;
    }
    audit(requestLogOf(koa) ?? app.log).info(
      {
        keyId: principal.keyId,
        partner: principal.partnerName,
        zone: body.zone,
        jobs: queued.jobs.length,
        files: queued.jobs.reduce((n, j) => n + j.feeds.length, 0),
        skipped: queued.skipped.length,
      },
      'console republish queued',
    );
    koa.set('Cache-Control', 'no-store');
    koa.status = 202;
    koa.body = queued;
  });

  // a zone's map and its vehicles; the page refreshes it every `ttl` seconds, the GBFS status ttl
  router.get('/fleet', async (koa) => {
    const zone = typeof koa.query.zone === 'string' ? koa.query.zone : '';
    if (!isZoneId(zone)) throw badParam(`zone must be a zone id (${ZONE_ID_SCHEMA.pattern})`);
    const map = await app.db.maybeOne(sql('ConsoleZoneMap'), [zone]);
    if (!map) throw new FeedError(404, 'not_found', `unknown zone ${zone}`);
    const vehicles = await app.db.many(sql('ConsoleZoneVehicles'), [zone]);
    koa.set('Cache-Control', 'no-store');
    koa.body = { zone: map.id, name: map.name, ttl: STATUS_TTL, boundary: map.boundary, areas: { type: 'FeatureCollection', features: map.areas }, vehicles };
  });

  // from the registry /metrics exports: the two never disagree
  router.get('/health', async (koa) => {
    koa.set('Cache-Control', 'no-store');
    koa.body = await healthFigures();
  });

  // partners, keys, feed clients and their keys with scope, zones and last use; never a hash or a secret
  router.get('/credentials', async (koa) => {
    const [partners, keys, clients, feedKeys] = await Promise.all([
      app.db.many(sql('ConsolePartners')),
      app.db.many(sql('AdminListApiKeys'), [null]),
      app.db.many(sql('AdminListFeedClients')),
      listFeedKeys(app.db),
    ]);
    koa.set('Cache-Control', 'no-store');
    koa.body = { partners, keys, feed_clients: clients, feed_keys: feedKeys };
  });

  // a feed client's API keys (X-Access-Token on every feed host, lib/feeds/keys.ts): created with
  // the key in the answer, once (only its hash is kept), and revoked; both audited
  const clientParam = (koa: Koa.Context): string => {
    const id = (koa.params as Record<string, string>).clientId;
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(id)) throw badParam('invalid client id');
    return id;
  };
  router.post('/feed-clients/:clientId/keys', async (koa) => {
    const clientId = clientParam(koa);
    const body = (await consoleBody(app, koa)) as { label?: unknown } | undefined;
    const label = body?.label ?? '';
    if (typeof label !== 'string' || label.length > 200) throw badParam('label must be a string of at most 200 characters');
    const client = await app.db.maybeOne(sql('FeedClientById'), [clientId]);
    if (!client || client.revoked_at) throw new FeedError(404, 'not_found', `no active feed client ${clientId}`);
    const made = await createFeedKey(app.db, clientId, label);
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info(
      { keyId: principal.keyId, partner: principal.partnerName, client: clientId, feedKey: made.id },
      'console feed key created',
    );
    koa.set('Cache-Control', 'no-store');
    koa.status = 201;
    koa.body = { id: made.id, client_id: clientId, key: made.key, key_prefix: made.prefix, label };
  });
  router.delete('/feed-clients/:clientId/keys/:keyId', async (koa) => {
    const clientId = clientParam(koa);
    const keyId = koa.params.keyId;
    if (!isUuid(keyId)) throw badParam('invalid key id', 'the key id is a UUID');
    closeIfBodyUnread(koa);
    const revoked = await revokeFeedKey(app.db, keyId.toLowerCase(), app.clock.now(), clientId);
    if (!revoked) throw new FeedError(404, 'not_found', `no active key ${keyId} of feed client ${clientId}`);
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info(
      { keyId: principal.keyId, partner: principal.partnerName, client: clientId, feedKey: revoked.id },
      'console feed key revoked',
    );
    koa.set('Cache-Control', 'no-store');
    koa.body = { id: revoked.id, client_id: revoked.client_id, revoked: true };
  });

  // the compliance view of the city's rules (the same as `ops policy status`), one zone or every zone
  router.get('/policy', async (koa) => {
    const zone = typeof koa.query.zone === 'string' && koa.query.zone ? koa.query.zone : null;
    if (zone !== null && !isZoneId(zone)) throw badParam(`zone must be a zone id (${ZONE_ID_SCHEMA.pattern})`);
    koa.set('Cache-Control', 'no-store');
    koa.body = await complianceView(app.db, zone, app.clock.now());
  });

  // register or replace a zone's city Policy source (lib/domain/policy/sources.ts, as `ops policy add`);
  // the secret is sealed at rest and never answered back
  router.put('/policy/:zone', async (koa) => {
    const zone = koa.params.zone;
    if (!isZoneId(zone)) throw badParam(`zone must be a zone id (${ZONE_ID_SCHEMA.pattern})`);
    const body = (await consoleBody(app, koa)) as Record<string, unknown> | undefined;
    const text = (k: string) => {
      const v = body?.[k];
      if (v !== undefined && v !== null && typeof v !== 'string') throw badParam(`${k} must be a string`);
      return v ?? undefined;
    };
    let saved: { inserted: boolean };
    try {
      saved = await savePolicySource(
        app.db,
        app.config.signingSecret,
        {
          zone,
          policyUrl: text('policy_url') ?? '',
          geographyUrl: text('geography_url') ?? '',
          auth: (text('auth') ?? 'none') as PolicyAuthType,
          secret: text('secret'),
          tokenUrl: text('token_url'),
          clientId: text('client_id'),
          scope: text('scope'),
        },
        app.clock.now(),
      );
    } catch (err) {
      if (err instanceof PolicySourceError) throw err.field === 'zone' ? new FeedError(404, 'not_found', err.message) : badParam(err.message);
      throw err;
    }
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info({ keyId: principal.keyId, partner: principal.partnerName, zone }, 'console city policy source saved');
    koa.set('Cache-Control', 'no-store');
    koa.status = saved.inserted ? 201 : 200;
    koa.body = { zone, saved: saved.inserted ? 'created' : 'replaced' };
  });

  // read a zone's source now (as `ops policy read`): queued for the publishers, which read it, apply
  // its rules and send the speed commands (lib/publication/policy-queue.ts); 202 at once, the view shows
  // the read when it is done
  router.post('/policy/:zone/read', async (koa) => {
    const zone = koa.params.zone;
    if (!isZoneId(zone)) throw badParam(`zone must be a zone id (${ZONE_ID_SCHEMA.pattern})`);
    if (!(await app.db.maybeOne(sql('PolicySourceExists'), [zone]))) throw new FeedError(404, 'not_found', `zone ${zone} has no city Policy source`);
    const job = await queuePolicyRead(app, zone);
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info({ keyId: principal.keyId, partner: principal.partnerName, zone, job }, 'console city policy read queued');
    koa.set('Cache-Control', 'no-store');
    koa.status = 202;
    // null: a read of this zone was already waiting, which this one joins
    koa.body = { zone, queued: job !== null };
  });

  // remove a zone's source: its rules and the city's areas at once; the vehicles get their normal
  // limits back at the publisher's next round
  router.delete('/policy/:zone', async (koa) => {
    const zone = koa.params.zone;
    if (!(await removePolicySource(app.db, zone))) throw new FeedError(404, 'not_found', `zone ${zone} has no city Policy source`);
    const principal = principalOf(koa);
    audit(requestLogOf(koa) ?? app.log).info({ keyId: principal.keyId, partner: principal.partnerName, zone }, 'console city policy source removed');
    koa.status = 204;
  });

  router.all('/{*rest}', () => {
    throw new FeedError(404, 'not_found', 'no such console route');
  });
  return router.routes() as unknown as Koa.Middleware;
}
