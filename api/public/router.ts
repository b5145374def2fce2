/**
 * Public, unauthenticated pages that the GBFS feeds link to: the rental deep links of a vehicle
 * (`rental_uris`, by its rotating GBFS id — never the device id), the app discovery links, and the
 * vehicle-type icons (`vehicle_assets.icon_url`). A rotated or unknown GBFS id is a plain 404: the
 * link of a vehicle that has since been ridden must not identify it.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import type { AppContext } from '../../lib/domain/context.js';
import { sql } from '../../lib/core/sql/typed.js';
import { isUuid } from '../../lib/core/uuid.js';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const ICONS: Record<string, string> = {
  scooter:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="14" cy="50" r="8" fill="none" stroke="#111" stroke-width="4"/><circle cx="50" cy="50" r="8" fill="none" stroke="#111" stroke-width="4"/><path d="M14 50h30l6-40h8" fill="none" stroke="#111" stroke-width="4" stroke-linecap="round"/></svg>',
  bicycle:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="14" cy="44" r="11" fill="none" stroke="#111" stroke-width="4"/><circle cx="50" cy="44" r="11" fill="none" stroke="#111" stroke-width="4"/><path d="M14 44l12-22h18l6 22M26 22l10 22h-22M40 14h8" fill="none" stroke="#111" stroke-width="4" stroke-linejoin="round"/></svg>',
};

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escape(title)}</title></head><body style="font-family:sans-serif;max-width:32rem;margin:2rem auto">${body}</body></html>`;
}

export function publicRoutes(ctx: AppContext): Koa.Middleware {
  const router = new Router();

  router.get(['/app/vehicles/:id', '/app/android/vehicles/:id', '/app/ios/vehicles/:id'], async (koa) => {
    const id = koa.params.id ?? '';
    const v = isUuid(id) ? await ctx.db.maybeOne(sql('PublicVehicleByGbfsId'), [id]) : undefined;
    koa.type = 'text/html; charset=utf-8';
    if (!v) {
      koa.status = 404;
      koa.body = page('Vehicle not found', '<h1>Vehicle not found</h1><p>This link is no longer valid. Open the app to find a vehicle nearby.</p>');
      return;
    }
    koa.set('Cache-Control', 'no-store');
    koa.body = page(
      `Rent a ${v.vehicle_type_name}`,
      `<h1>${escape(v.vehicle_type_name)}</h1><p>Battery ${v.battery_percent}% · ${escape(v.zone_name)}</p><p>Open the ${escape(ctx.config.providerName)} app or a partner app to rent this vehicle.</p>`,
    );
  });

  router.get(['/app/android/', '/app/ios/', '/app/'], (koa) => {
    koa.type = 'text/html; charset=utf-8';
    koa.body = page(
      ctx.config.providerName,
      `<h1>${escape(ctx.config.providerName)}</h1><p>Get the app from your platform's store to rent scooters and bicycles.</p>`,
    );
  });

  router.get('/assets/vehicle-types/:file', (koa) => {
    const m = /^([a-z0-9_-]{1,32})\.svg$/.exec(koa.params.file ?? '');
    const svg = m ? ICONS[m[1]] : undefined;
    if (!svg) {
      koa.status = 404;
      koa.body = { error: 'not found' };
      return;
    }
    koa.type = 'image/svg+xml';
    koa.set('Cache-Control', 'public, max-age=86400');
    koa.body = svg;
  });

  return router.routes() as Koa.Middleware;
}
