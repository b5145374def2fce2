/**
 * City rules benchmark (issue 40, docs/city-policy.md): from a city changing its Policy document to
 * the last vehicle acknowledging the new speed limit, with the fleet answering over MQTT.
 *
 * The operator: BENCH_POLICY_ZONES (100) zones × BENCH_POLICY_VEHICLES (1,000) vehicles, 5 % riding,
 * every zone with a city source on a Policy server the bench starts (one slow zone over the whole zone,
 * the official document shapes). The platform: a publisher (publisher/index.ts, with its clocks: the
 * `city-policy` read every minute by pg-boss's schedule, the `city-speed` round every 10 s) whose vehicle
 * gateway is the MQTT gateway (lib/domain/vehicles/mqtt-gateway.ts) on the real Mosquitto of the tests;
 * the vehicles are the demo's MQTT fleet (ops/sim/mqtt-fleet.ts: one bridge connection speaking for
 * every vehicle, each answer after a 150–600 ms "cellular" delay). Every round the city lowers or raises
 * the limit of every zone at a moment unrelated to the read schedule; per zone the figure is the time
 * from that change to the acknowledgement of its last riding vehicle (vehicle_speed_commands.acked_at).
 * Goal: p99 < 70 s (one read interval plus the commands), BENCH_POLICY_ROUNDS (3) rounds.
 *
 * `node --import tsx bench/policy.bench.ts` runs it directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { systemClock } from '../lib/core/clock.js';
import { testConfig } from '../lib/core/config.js';
import { Db } from '../lib/core/db.js';
import { createLogger } from '../lib/core/log.js';
import { openStore } from '../lib/core/store/index.js';
import type { AppContext } from '../lib/domain/context.js';
import { MqttGateway } from '../lib/domain/vehicles/mqtt-gateway.js';
import { savePolicySource } from '../lib/domain/policy/sources.js';
import { MqttFleet } from '../ops/sim/mqtt-fleet.js';
import { startPublisher } from '../publisher/index.js';
import { cloneDatabase } from '../test/support/db.js';
import { startBroker } from '../test/support/mqtt.js';
import { insertZone } from '../test/support/partner-fixtures.js';
import { runIfMain } from './main.js';
import type { BenchResult } from './types.js';
import { percentile } from './breadth-probes.js';
import { signedFileRouteVsNginx } from './feeds.bench.js';

const ZONES = Number(process.env.BENCH_POLICY_ZONES ?? 100);
const VEHICLES = Number(process.env.BENCH_POLICY_VEHICLES ?? 1000);
const RIDING = 0.05;
const ROUNDS = Number(process.env.BENCH_POLICY_ROUNDS ?? 3);
const GOAL_S = 70;
/** the limits the city alternates between (mph: 16 and 12 km/h, both under the zones' 20) */
const LIMITS_MPH = [10, 8];

const round1 = (v: number) => Math.round(v * 10) / 10;

/** one zone's documents: a slow zone over the zone's whole square */
function documents(zoneId: string, lat: number, lng: number, mph: number, version: number) {
  const d = 0.05;
  const geographyId = createHash('md5')
    .update(`geo/${zoneId}`)
    .digest('hex')
    .replace(/^(.{8})(.{4}).(.{3}).(.{3})(.{12})$/, '$1-$2-4$3-8$4-$5');
  const policyId = createHash('md5')
    .update(`policy/${zoneId}`)
    .digest('hex')
    .replace(/^(.{8})(.{4}).(.{3}).(.{3})(.{12})$/, '$1-$2-4$3-8$4-$5');
  const ruleId = createHash('md5')
    .update(`rule/${zoneId}`)
    .digest('hex')
    .replace(/^(.{8})(.{4}).(.{3}).(.{3})(.{12})$/, '$1-$2-4$3-8$4-$5');
  const ring = [
    [lng - d, lat - d],
    [lng + d, lat - d],
    [lng + d, lat + d],
    [lng - d, lat + d],
    [lng - d, lat - d],
  ];
  return {
    policies: {
      version: '2.0.0',
      last_updated: 1733000000000 + version,
      policies: [
        {
          name: `Speed limit ${zoneId}`,
          mode_id: 'micromobility',
          policy_id: policyId,
          description: 'city-wide slow riding',
          start_date: 1733011200000,
          published_date: 1733000000000,
          rules: [
            { name: 'Slow riding', rule_id: ruleId, rule_type: 'speed', rule_units: 'mph', geographies: [geographyId], states: { on_trip: [] }, maximum: mph },
          ],
        },
      ],
    },
    geographies: {
      version: '2.0.0',
      last_updated: 1733000000000,
      geographies: [
        {
          name: `All of ${zoneId}`,
          geography_id: geographyId,
          published_date: 1733000000000,
          geography_json: {
            type: 'FeatureCollection',
            features: [{ type: 'Feature', properties: {}, geometry: { type: 'MultiPolygon', coordinates: [[ring]] } }],
          },
        },
      ],
    },
  };
}

export async function run(): Promise<BenchResult> {
  let result: BenchResult | undefined;
  const database = await cloneDatabase();
  const storeDir = mkdtempSync(join(tmpdir(), 'bench-policy-'));
  const broker = await startBroker();
  const config = testConfig({ DATABASE_URL: database.url, STORE_URL: `file://${storeDir}`, LOG_LEVEL: 'warn' });
  const log = createLogger('warn');
  const db = new Db(config.databaseUrl, log, { max: 20 });
  const gateway = await MqttGateway.connect({ url: broker.url, ...broker.platform, gatewayId: 'bench-policy', timeoutMs: config.gateway.timeoutMs, log });
  const ctx: AppContext = { config, db, store: await openStore(config), log, clock: systemClock, gateway };
  const served = new Map<string, { policies: string; geographies: string }>();
  const server = createServer((req, res) => {
    const [, zone, doc] = (req.url ?? '').split('/');
    const body = served.get(zone)?.[doc as 'policies' | 'geographies'];
    if (!body) return void res.writeHead(404).end();
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const cityUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let fleet: MqttFleet | undefined;
  let publisher: Awaited<ReturnType<typeof startPublisher>> | undefined;
  try {
    const zones: Array<{ id: string; lat: number; lng: number }> = [];
    for (let z = 0; z < ZONES; z++) {
      const zone = await insertZone(db, { lat: 40 + (z % 10) * 0.5, lng: -3 + Math.floor(z / 10) * 0.5 });
      zones.push(zone);
    }
    // the fleet in one statement per zone: random points in the zone, 5 % riding
    let code = 0;
    const codes = new Map<string, string>();
    for (const zone of zones) {
      const batch = Array.from({ length: VEHICLES }, () => (++code).toString(36).toUpperCase().padStart(4, '0'));
      const rows = await db.query<{ id: string; code: string }>(
        `INSERT INTO vehicles (code, zone_id, vehicle_type_id, status, mds_state, battery_percent, location, license_plate, license_plate_id)
         SELECT c, $2, 'pt-scooter', CASE WHEN random() < $5 THEN 'riding' ELSE 'ready' END, 'available', 80,
                ST_SetSRID(ST_MakePoint($4 + (random() - 0.5) * 0.04, $3 + (random() - 0.5) * 0.04), 4326), 'plate-' || c, 'plate-' || c
           FROM unnest($1::text[]) AS c
         RETURNING id, code`,
        [batch, zone.id, zone.lat, zone.lng, RIDING],
      );
      for (const r of rows.rows) codes.set(r.id, r.code);
    }
    await db.query(`UPDATE vehicles SET mds_state = 'on_trip' WHERE status = 'riding'`);
    await db.query('ANALYZE');
    const { riding } = await db.one<{ riding: number }>(`SELECT count(*)::int AS riding FROM vehicles WHERE status = 'riding'`);
    await broker.addBridge('bridge-bench', 'bench-fleet-pw');
    fleet = await MqttFleet.connect({
      url: broker.url,
      username: 'bridge-bench',
      password: 'bench-fleet-pw',
      log,
      codes,
      behaviourFile: join(storeDir, 'none.json'),
    });

    const publish = (version: number) => {
      const mph = LIMITS_MPH[version % LIMITS_MPH.length];
      for (const z of zones) {
        const d = documents(z.id, z.lat, z.lng, mph, version);
        served.set(z.id, { policies: JSON.stringify(d.policies), geographies: JSON.stringify(d.geographies) });
      }
      return Math.floor(mph * 1.609344);
    };
    publish(0);
    for (const z of zones)
      await savePolicySource(
        db,
        config.signingSecret,
        { zone: z.id, policyUrl: `${cityUrl}/${z.id}/policies`, geographyUrl: `${cityUrl}/${z.id}/geographies`, auth: 'none' },
        new Date(),
      );
    publisher = await startPublisher(ctx, { cron: true, pollingIntervalSeconds: 1 });

    /** per zone, seconds from `t0` until every riding vehicle of it acknowledged `kph`; undefined while not */
    /** the read rounds seen while settling (max read_at), seconds from t0: a missed minute shows */
    let readsSeen = new Set<number>();
    const settle = async (t0: Date, kph: number, timeoutS: number) => {
      const done = new Map<string, number>();
      readsSeen = new Set<number>();
      const deadline = Date.now() + timeoutS * 1000;
      while (done.size < zones.length && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 500));
        const rows = await db.many<{ zone_id: string; pending: number; last: Date | null }>(
          `SELECT v.zone_id, count(*) FILTER (WHERE c.acked_kph IS DISTINCT FROM $1 OR c.acked_at < $2)::int AS pending, max(c.acked_at) AS last
             FROM vehicles v LEFT JOIN vehicle_speed_commands c ON c.vehicle_id = v.id
            WHERE v.status = 'riding' GROUP BY v.zone_id`,
          [kph, t0],
        );
        const readAt = (await db.one<{ at: Date | null }>('SELECT max(read_at) AS at FROM city_policy_sources')).at;
        if (readAt) readsSeen.add(round1((readAt.getTime() - t0.getTime()) / 1000));
        for (const r of rows) if (r.pending === 0 && r.last && !done.has(r.zone_id)) done.set(r.zone_id, (r.last.getTime() - t0.getTime()) / 1000);
      }
      return done;
    };

    // the first read takes the rules in; wait until the fleet is at the first limit
    const first = await settle(new Date(0), Math.floor(LIMITS_MPH[0] * 1.609344), 150);
    if (first.size < zones.length) throw new Error(`only ${first.size} of ${zones.length} zones settled on the first limit`);
    const latencies: number[] = [];
    /** per zone and round: from the read that took the change in to the last acknowledgement */
    const afterRead: number[] = [];
    const roundNotes: string[] = [];
    const commandRounds: number[] = [];
    let lastAck = 0;
    for (let r = 1; r <= ROUNDS; r++) {
      // a moment unrelated to the read schedule
      await new Promise((res) => setTimeout(res, 5000 + Math.random() * 30_000));
      const t0 = new Date();
      const kph = publish(r);
      const done = await settle(t0, kph, 150);
      const values = [...done.values()];
      if (done.size < zones.length) throw new Error(`round ${r}: ${zones.length - done.size} zones never settled`);
      latencies.push(...values);
      const reads = await db.one<{ first: Date; last: Date }>('SELECT min(good_at) AS first, max(good_at) AS last FROM city_policy_sources');
      roundNotes.push(
        `round ${r}: change at :${String(t0.getUTCSeconds()).padStart(2, '0')}, read ${round1((reads.first.getTime() - t0.getTime()) / 1000)}–${round1((reads.last.getTime() - t0.getTime()) / 1000)} s after it, last acknowledgement ${round1(Math.max(...values))} s after it; reads seen at ${[...readsSeen].join(', ')} s`,
      );
      for (const g of await db.many<{ zone_id: string; good_at: Date }>('SELECT zone_id, good_at FROM city_policy_sources')) {
        const s = done.get(g.zone_id);
        if (s !== undefined) afterRead.push(s - (g.good_at.getTime() - t0.getTime()) / 1000);
      }
      lastAck = Math.max(lastAck, ...values);
      commandRounds.push(Math.max(...values) - Math.min(...values));
    }
    const p50 = percentile(latencies, 50) ?? NaN;
    const p99 = percentile(latencies, 99) ?? NaN;
    const failures = await db.one<{ n: number }>('SELECT coalesce(sum(failures), 0)::int AS n FROM vehicle_speed_commands');
    result = {
      name: 'policy',
      metrics: {
        zones: ZONES,
        vehicles: ZONES * VEHICLES,
        riding_vehicles: riding,
        rounds: ROUNDS,
        change_to_last_ack_p50_s: round1(p50),
        change_to_last_ack_p99_s: round1(p99),
        change_to_last_ack_max_s: round1(lastAck),
        read_to_last_ack_p50_s: round1(percentile(afterRead, 50) ?? NaN),
        read_to_last_ack_p99_s: round1(percentile(afterRead, 99) ?? NaN),
        first_to_last_zone_spread_s_median: round1(percentile(commandRounds, 50) ?? NaN),
        unacknowledged_attempts: failures.n,
      },
      goals: [{ metric: 'change_to_last_ack_p99_s', goal: `< ${GOAL_S} s`, met: p99 < GOAL_S }],
      notes: [
        `${ZONES} zones × ${VEHICLES} vehicles, ${riding} riding, every riding vehicle inside its zone's slow zone: each change is ${riding} set_speed commands over MQTT`,
        'per zone: from the city changing its document to the acknowledgement of its last riding vehicle; the read runs every minute, so a change waits 0–60 s for it; read_to_last_ack: from the read that took the change in (good_at) to the last acknowledgement',
        'the fleet: one MQTT bridge connection answering every vehicle after 150–600 ms (ops/sim/mqtt-fleet.ts)',
        ...roundNotes,
      ],
    };
  } finally {
    await publisher?.stop().catch(() => undefined);
    await fleet?.close().catch(() => undefined);
    await gateway.close().catch(() => undefined);
    server.close();
    await db.close();
    await broker.close();
    await database.drop().catch(() => undefined);
    rmSync(storeDir, { recursive: true, force: true });
  }
  if (!result) throw new Error('no result');
  // the feed route with its signatures (RFC 9421) against nginx, measured alone after the fleet is
  // stopped: the same measurement as BENCH=feeds (bench/feeds.bench.ts)
  const feeds = await signedFileRouteVsNginx();
  result.metrics.signed_file_route_vs_nginx = feeds.ratio === null ? null : Math.round(feeds.ratio * 100) / 100;
  result.goals.push({
    metric: 'signed_file_route_vs_nginx',
    goal: '≥ 0.8 (answers verified as signed)',
    met: feeds.ratio === null ? null : feeds.ratio >= 0.8 && feeds.signedVerified,
  });
  result.notes.push(
    `signed file route: ${feeds.apiRps ?? '–'} req/s, nginx ${feeds.nginxRps ?? '–'} req/s; ${feeds.signedVerified ? 'every measured answer verified as signed' : 'signatures NOT verified'}`,
  );
  return result;
}

runIfMain(import.meta.url, run);
