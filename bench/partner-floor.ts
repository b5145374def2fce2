/**
 * The floor of the partner API benchmark (bench/partner-api.bench.ts): a bare `node:http` server
 * with one `pg` pool doing only the work a partner request cannot avoid, so that the API's figures
 * can be read as ratios to what this machine can do at best in the same run.
 *
 * It answers the bench's four requests with the very statements the API sends (the named queries
 * of sql/queries, prepared by name like lib/core/db.ts does) and the same indexes:
 * - GET /v1/vehicles?zoneID=: PartnerAvailableVehicles;
 * - GET /v1/pricing/vehicle/:id: PartnerVehicleById;
 * - POST /v1/rental/start: the engine's two transactions around the unlock
 *   (lib/domain/rentals/engine.ts): BEGIN, RentalExpireClaims, RentalUserForStart,
 *   RentalLockVehicleForStart, RentalClaim, COMMIT; then BEGIN, RentalLockClaim, RentalConfirm,
 *   RentalGet, FleetInsertEventSetState, COMMIT;
 * - POST /v1/rental/:id/end: BEGIN, RentalLockForEnd, ZoneRulesAt, COMMIT (the check before the
 *   lock); then BEGIN, RentalLockForEnd, RentalEnd, FleetInsertEventSetState, RentalGet, COMMIT.
 * The key is checked against the api_keys table once per key and then held in a Map (the API
 * caches verified keys too). What the floor leaves out is what the API adds on top: routing,
 * validation, the rate limiter, logging, metrics, the error format, the response shapes and
 * the vehicle gateway (simulated, in-process, in the API).
 *
 * `node --import tsx bench/partner-floor.ts <databaseUrl>` prints `listening <port>`.
 */
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { sql, type QueryName } from '../lib/core/sql/typed.js';
import { hashApiKey } from '../lib/domain/credentials/secrets.js';
import { computeCost } from '../lib/domain/pricing.js';

type Row = Record<string, any>;

function prepared(name: QueryName, values: unknown[]): pg.QueryConfig {
  const named = sql(name);
  return { name: named.name, text: named.text, values };
}

export async function serveFloor(databaseUrl: string): Promise<http.Server> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 20 });
  const partners = new Map<string, string>();

  async function partnerOf(key: string | undefined): Promise<string | undefined> {
    if (!key) return undefined;
    const known = partners.get(key);
    if (known) return known;
    const { rows } = await pool.query(`SELECT partner_id FROM api_keys WHERE key_hash = $1 AND scope = 'partner' AND revoked_at IS NULL`, [hashApiKey(key)]);
    if (rows[0]) partners.set(key, rows[0].partner_id as string);
    return rows[0]?.partner_id as string | undefined;
  }

  async function tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  async function start(partnerId: string, body: Row): Promise<Row | undefined> {
    const claim = await tx(async (c) => {
      const now = new Date();
      await c.query(prepared('RentalExpireClaims', [body.vehicleId, body.userId, now]));
      const user = (await c.query(prepared('RentalUserForStart', [body.userId, partnerId]))).rows[0];
      const v = (await c.query(prepared('RentalLockVehicleForStart', [body.vehicleId, null, null, now, partnerId, body.userId]))).rows[0];
      if (!user || user.running || !v || !v.start_allowed || v.status !== 'ready' || v.has_running_rental) return undefined;
      const claimExpiresAt = new Date(now.getTime() + 60_000);
      return (
        await c.query(
          prepared('RentalClaim', [
            partnerId,
            body.userId,
            body.vehicleId,
            'partner',
            false,
            false,
            null,
            'solo',
            v.currency,
            v.vat_rate,
            v.start_price,
            v.price_per_minute,
            now,
            null,
            null,
            claimExpiresAt,
          ]),
        )
      ).rows[0] as Row;
    });
    if (!claim) return undefined;
    return tx(async (c) => {
      const now = new Date();
      const v = (await c.query(prepared('RentalLockClaim', [claim.id, now]))).rows[0];
      if (!v || !v.user_active || !v.vehicle_ok) return undefined;
      await c.query(prepared('RentalConfirm', [claim.id, now]));
      const rental = (await c.query(prepared('RentalGet', [claim.id, null]))).rows[0];
      await c.query(
        prepared('FleetInsertEventSetState', [v.vehicle_id, v.zone_id, ['trip_start'], 'on_trip', now, v.lng, v.lat, v.battery_percent, [claim.trip_id], null]),
      );
      return rental;
    });
  }

  async function end(partnerId: string, rentalId: string): Promise<Row | undefined> {
    const now = new Date();
    const allowed = await tx(async (c) => {
      const r = (await c.query(prepared('RentalLockForEnd', [rentalId, partnerId]))).rows[0];
      if (!r || r.state !== 'RUNNING') return false;
      const parking = (await c.query(prepared('ZoneRulesAt', [r.zone_id, r.lng, r.lat, r.vehicle_type_id]))).rows[0];
      return Boolean(parking?.ride_end_allowed);
    });
    if (!allowed) return undefined;
    return tx(async (c) => {
      const r = (await c.query(prepared('RentalLockForEnd', [rentalId, partnerId]))).rows[0];
      if (!r || r.state !== 'RUNNING') return undefined;
      const durationMs = now.getTime() - (r.started_at as Date).getTime();
      const cost = computeCost({
        startPrice: r.start_price ?? 0,
        pricePerMinute: r.price_per_minute ?? 0,
        vatRate: Number(r.vat_rate),
        durationSeconds: durationMs / 1000,
        distanceMeters: r.distance_m,
        endedAt: now,
        charge: true,
      });
      await c.query(
        prepared('RentalEnd', [
          r.id,
          'ENDED',
          now,
          null,
          null,
          cost.durationMin,
          r.distance_m,
          cost.subtotal,
          cost.total,
          cost.vat,
          `receipts/${r.id}.pdf`,
          r.vehicle_type_id,
          r.trip_type,
          Math.ceil(durationMs / 1000),
        ]),
      );
      await c.query(
        prepared('FleetInsertEventSetState', [r.vehicle_id, r.zone_id, ['trip_end'], 'available', now, r.lng, r.lat, r.battery_percent, [r.trip_id], null]),
      );
      return (await c.query(prepared('RentalGet', [r.id, null]))).rows[0];
    });
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://floor');
        const answer = (status: number, body: unknown) => {
          const text = JSON.stringify(body);
          res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
          res.end(text);
        };
        try {
          const partnerId = await partnerOf(req.headers['x-auth-token'] as string | undefined);
          if (!partnerId) return answer(401, { error: 'Unauthorized' });
          const path = url.pathname;
          if (req.method === 'GET' && path === '/v1/vehicles') {
            const { rows } = await pool.query(prepared('PartnerAvailableVehicles', [url.searchParams.get('zoneID'), new Date(), null]));
            return answer(200, { data: rows });
          }
          if (req.method === 'GET' && path.startsWith('/v1/pricing/vehicle/')) {
            const { rows } = await pool.query(prepared('PartnerVehicleById', [path.slice('/v1/pricing/vehicle/'.length), null]));
            return rows[0] ? answer(200, { data: rows[0] }) : answer(404, { error: 'VehicleNotFound' });
          }
          if (req.method === 'POST' && path === '/v1/rental/start') {
            const rental = await start(partnerId, JSON.parse(Buffer.concat(chunks).toString('utf8')) as Row);
            return rental ? answer(200, { data: [rental] }) : answer(400, { error: 'VehicleNotAvailable' });
          }
          const m = /^\/v1\/rental\/([0-9a-f-]{36})\/end$/.exec(path);
          if (req.method === 'POST' && m) {
            const rental = await end(partnerId, m[1]);
            return rental ? answer(200, { data: [rental] }) : answer(400, { error: 'RentalAlreadyEnded' });
          }
          return answer(404, { error: 'NotFound' });
        } catch (err) {
          return answer(500, { error: (err as Error).message });
        }
      })();
    });
  });
  server.on('close', () => void pool.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  serveFloor(process.argv[2]).then(
    (server) => {
      process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
      process.on('SIGTERM', () => process.exit(0));
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
