/**
 * The demo's city: `make run` on the demo database serves, on loopback, an MDS Policy and Geography
 * API for each demo zone (`/demo-city/{zone}/policies`, `/demo-city/{zone}/geographies`) and registers
 * it as the zone's city source, so the demo shows the city rules end to end (docs/city-policy.md):
 * the publisher reads it every minute, the slow zone around the zone's centre is in the partner
 * API's areas, TOMP's `areas=city` regions and the GBFS geofencing files, riding vehicles inside it
 * get `set_speed` over MQTT, and the console's City rules tab shows the compliance view. Like the
 * fleet simulator it is the demo's, never a platform component: a real zone's source is the city's
 * own, registered with `ops policy add`, and a source someone registered is never replaced.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import type { AppContext } from '../../lib/domain/context.js';
import { savePolicySource } from '../../lib/domain/policy/sources.js';
import { DEMO_ZONES } from './../seed/data.js';

/** The demo city's documents of a zone: a 12 km/h slow zone within 400 m of its centre, a fleet cap, a helmet message. */
function documents(zone: string, centre: unknown, published: number) {
  const id = (what: string) => {
    const h = createHash('sha256').update(`demo-city/${zone}/${what}`).digest('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  const area = id('centre');
  return {
    policies: {
      version: '2.0.0',
      last_updated: published,
      policies: [
        {
          name: 'Demo city rules',
          mode_id: 'micromobility',
          policy_id: id('policy'),
          description: 'Slow riding in the centre, a fleet cap and a helmet message (the demo city of make run)',
          start_date: published,
          published_date: published,
          rules: [
            {
              name: 'Slow riding in the centre',
              rule_id: id('slow'),
              rule_type: 'speed',
              rule_units: 'kph',
              geographies: [area],
              states: { on_trip: [] },
              maximum: 12,
              messages: { en: 'At most 12 km/h in the centre' },
            },
            {
              name: 'Fleet cap in the centre',
              rule_id: id('cap'),
              rule_type: 'count',
              rule_units: 'devices',
              geographies: [area],
              states: { available: [] },
              maximum: 40,
            },
            { name: 'Helmets', rule_id: id('helmet'), rule_type: 'user', geographies: [area], states: {}, messages: { en: 'Wear a helmet' } },
          ],
        },
      ],
    },
    geographies: {
      version: '2.0.0',
      last_updated: published,
      geographies: [
        {
          name: `Centre of ${zone}`,
          geography_id: area,
          geography_type: 'policy_zone',
          published_date: published,
          geography_json: { type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: centre }] },
        },
      ],
    },
  };
}

export interface DemoCity {
  url: string;
  /** the zones whose source this start registered (the others have one of their own) */
  registered: string[];
  close(): Promise<void>;
}

/** Starts the demo city on a free loopback port and registers it for the demo zones without a source of their own. */
export async function startDemoCity(ctx: AppContext): Promise<DemoCity> {
  const served = new Map<string, string>();
  const published = Date.UTC(2026, 0, 1);
  for (const z of DEMO_ZONES) {
    const row = await ctx.db.maybeOne<{ g: unknown }>(
      `SELECT ST_AsGeoJSON(ST_Buffer(ST_PointOnSurface(boundary)::geography, 400)::geometry, 7)::json AS g FROM zones WHERE id = $1`,
      [z.id],
    );
    if (!row) continue;
    const d = documents(z.id, row.g, published);
    served.set(`/demo-city/${z.id}/policies`, JSON.stringify(d.policies));
    served.set(`/demo-city/${z.id}/geographies`, JSON.stringify(d.geographies));
  }
  const server: Server = createServer((req, res) => {
    const body = served.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (!body) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not_found"}');
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': 'application/vnd.mds+json;version=2.0', etag }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/demo-city`;
  const registered: string[] = [];
  for (const z of DEMO_ZONES) {
    if (!served.has(`/demo-city/${z.id}/policies`)) continue;
    // a source of the zone's own (not an earlier start's demo city, whose port was another) stays
    const held = await ctx.db.maybeOne<{ policy_url: string }>('SELECT policy_url FROM city_policy_sources WHERE zone_id = $1', [z.id]);
    if (held && !/^http:\/\/127\.0\.0\.1:\d+\/demo-city\//.test(held.policy_url)) continue;
    await savePolicySource(
      ctx.db,
      ctx.config.signingSecret,
      { zone: z.id, policyUrl: `${url}/${z.id}/policies`, geographyUrl: `${url}/${z.id}/geographies`, auth: 'none' },
      ctx.clock.now(),
    );
    registered.push(z.id);
  }
  return { url, registered, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
