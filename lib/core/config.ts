/**
 * Configuration, parsed once from the environment into a frozen, typed object. A missing or malformed
 * value fails at start with a message that names the variable, never later in a request.
 * Pass the object in; do not import it as a global.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { availableParallelism, hostname } from 'node:os';
import { isUuid } from './uuid.js';

/** The limits of the API's admission control (api/kit/admission.ts), parsed here with the rest. */
export interface AdmissionLimits {
  /** requests running at once (API_MAX_IN_FLIGHT) */
  maxInFlight: number;
  /** the longest a request of a burst may wait for a slot (API_QUEUE_DEADLINE_MS) */
  deadlineMs: number;
  /** while overloaded, the longest predicted wait still admitted (API_QUEUE_OVERLOAD_WAIT_MS) */
  overloadWaitMs: number;
  /** how long a standing queue or a late loop takes to bring the budget down to overloadWaitMs (API_QUEUE_BURST_MS) */
  burstMs: number;
  /** event-loop lag that counts as pressure (API_MAX_EVENT_LOOP_DELAY_MS; 0: the loop is not watched) */
  maxLagMs: number;
  /** waiters at most (API_MAX_QUEUE) */
  maxQueue: number;
}

export interface Config {
  readonly env: 'development' | 'test' | 'production';
  /** `staging` makes the built-in vehicle gateway behave like the requirement's staging host. */
  readonly mode: 'staging' | 'production';
  readonly databaseUrl: string;
  /**
   * A streaming replica of DATABASE_URL for reads that may lag the primary (lib/core/replica.ts); undefined:
   * every read goes to the primary.
   */
  readonly databaseReplicaUrl: string | undefined;
  /**
   * How long a read that must show every committed write (the vehicle list) waits for the replica to
   * replay up to the primary's position before it reads the primary instead (lib/core/replica.ts).
   */
  readonly databaseReplicaWaitMs: number;
  readonly databasePoolSize: number;
  readonly telemetryTripDelayMinutes: number;
  /** admission control of the partner API and TOMP (api/kit/admission.ts) */
  readonly admission: AdmissionLimits;
  readonly storeUrl: string;
  readonly s3Endpoint: string | undefined;
  readonly s3Region: string;
  readonly s3ForcePathStyle: boolean;
  readonly port: number;
  readonly legacyPort: number;
  readonly host: string;
  /**
   * Prometheus metrics: every process serves its own on a listener of its own (lib/core/metrics-listener.ts),
   * on METRICS_HOST (loopback by default), never on the public hosts: an API process on
   * METRICS_PORT, a publisher process on PUBLISHER_METRICS_PORT (`publisherPort`; by default the
   * port after METRICS_PORT, so `make run`'s two processes never collide). A port 0 is a free port
   * the OS picks (the process logs it; `make run` prints it). With METRICS_TOKEN set the API's main
   * host serves /metrics too, to `Authorization: Bearer <METRICS_TOKEN>` only.
   */
  readonly metrics: { readonly host: string; readonly port: number; readonly publisherPort: number; readonly token: string | undefined };
  readonly publicBaseUrl: string;
  readonly publicLegacyUrl: string;
  /** HMAC key for signed photo/receipt URLs and feed access tokens. */
  readonly signingSecret: string;
  readonly providerId: string;
  readonly providerName: string;
  readonly logLevel: string;
  readonly publishLatenessSeconds: number;
  /**
   * History catch-up (publisher/schedule.ts): hours older than the cron's look-back without a file
   * are queued at most this many (zone, hour) sets per tick, behind the current hours; 0 turns it off.
   */
  readonly publishCatchupHoursPerTick: number;
  readonly tokenTtlSeconds: number;
  /**
   * Token endpoints (api/feeds/token-guard.ts): failed authentications per minute before 429, per (client id, address) and per
   * address; the reverse proxies whose X-Forwarded-For entries are believed (0: the socket's peer); the bound of concurrent secret checks.
   */
  readonly tokenAuth: {
    readonly failuresPerClientAddress: number;
    readonly failuresPerAddress: number;
    readonly trustedProxyHops: number;
    readonly hashConcurrency: number;
    readonly hashQueue: number;
  };
  readonly rateLimitPerMinute: number;
  readonly maxBodyBytes: number;
  readonly maxPhotoBytes: number;
  readonly shutdownTimeoutMs: number;
  /** Server timeouts of every listener (lib/core/listen.ts): no client holds a connection past them. */
  readonly http: {
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
    readonly connectionsCheckingIntervalMs: number;
  };
  /** `make run` drives the demo fleet with the live simulator unless LIVE_SIMULATOR=false */
  readonly liveSimulator: boolean;
  /** Bytes of hot feed files (stored gzip) each API process keeps in memory; 0 disables the cache. */
  readonly feedCacheBytes: number;
  /** How long a zone's rendered vehicle list is answered from memory (ms); 0 computes every request. */
  readonly vehicleListCacheMs: number;
  /**
   * FEED_CREDENTIAL_REFRESH_MS: how old the feed routes' loaded client standings and feed keys may be
   * (lib/feeds/clients.ts, lib/feeds/keys.ts): a revocation takes effect within it in every process.
   */
  readonly feedCredentialRefreshMs: number;
  readonly gateway: { readonly failRate: number; readonly delayMs: number; readonly timeoutMs: number };
  /**
   * The vehicle broker (MQTT 5): with MQTT_URL set, commands go to real vehicles through
   * lib/domain/vehicles/mqtt-gateway.ts; without it the simulated gateway answers (lib/domain/runtime.ts).
   */
  readonly mqtt?: { readonly url: string; readonly username: string; readonly password: string };
  /**
   * The demo fleet's identity on the broker (DEMO_FLEET_MQTT_USERNAME, DEMO_FLEET_MQTT_PASSWORD or
   * DEMO_FLEET_MQTT_PASSWORD_FILE; scripts/mqtt.sh gives the embedded broker's): with it, `make run`'s
   * live simulator drives MQTT vehicles (ops/sim/mqtt-fleet.ts). With a broker but without it, the
   * broker's vehicles are real and the live simulator stays off.
   */
  readonly demoFleet?: { readonly username: string; readonly password: string };
  /** DEMO_VEHICLES_FILE: what the demo's vehicles are told to do (`ops demo-vehicle`), .data/demo-vehicles.json by default */
  readonly demoVehiclesFile: string;
  /** The vehicle ingest (bin/ingest.ts, ingest/): how it batches, what it refuses, who it is. */
  readonly ingest: {
    /**
     * INGEST_ID: this process's stable name among the ingest processes: its MQTT client id is
     * `ingest-{id}`, and its broker session (what it has not acknowledged yet) waits for a process of
     * the same name to come back. Default: the host name.
     */
    readonly id: string;
    /** INGEST_BATCH_MAX: reports written in one transaction at most */
    readonly batchMax: number;
    /** INGEST_BATCH_MS: how long the first report of a batch waits for more before the batch is written */
    readonly batchMs: number;
    /** INGEST_SESSION_EXPIRY_SECONDS: how long the broker keeps an ingest's session while it is gone */
    readonly sessionExpirySeconds: number;
    /** INGEST_MAX_AGE_HOURS: a report taken longer ago is refused (too_old) */
    readonly maxAgeHours: number;
    /** INGEST_MAX_AHEAD_MS: a report stamped further in the future (a vehicle's wrong clock) is refused */
    readonly maxAheadMs: number;
    /** INGEST_MAX_REPORTS_PER_MINUTE: one vehicle's reports beyond this rate (bursts of as many allowed) are refused (flood) */
    readonly maxReportsPerMinute: number;
    /** INGEST_METRICS_PORT: its Prometheus metrics on METRICS_HOST (default METRICS_PORT + 2) */
    readonly metricsPort: number;
  };
  /**
   * Statement timeout of long ops work (`make simulate`): its bulk COPY batches run far longer than
   * the request pools' 30 s.
   */
  readonly opsStatementTimeoutMs: number;
  /** UTC days of history partitions the publisher's maintenance job keeps created ahead of today. */
  readonly partitionsAheadDays: number;
  /**
   * Days of each kind of history kept in Postgres (publisher/jobs/history.ts). Older daily partitions
   * are dropped once every hour they hold is published and not dirty; the object store keeps the files.
   */
  readonly retention: { readonly telemetryDays: number; readonly eventsDays: number; readonly tripsDays: number };
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, def?: string): string {
  const v = env[name];
  if (v === undefined || v === '') {
    if (def === undefined) throw new ConfigError(`${name} is required`);
    return def;
  }
  return v;
}

function int(env: Env, name: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function num(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new ConfigError(`${name} must be a number in [${min}, ${max}], got "${raw}"`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const v = str(env, name, def);
  if (!(values as readonly string[]).includes(v)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${v}"`);
  return v as T;
}

function url(env: Env, name: string, def: string): string {
  const v = str(env, name, def).replace(/\/+$/, '');
  try {
    new URL(v);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${v}"`);
  }
  return v;
}

/**
 * The HMAC key of signed links and feed tokens. There is no default written in the repository:
 * SIGNING_SECRET, or SIGNING_SECRET_FILE (the embedded `make run` points it at `.data/signing-secret`,
 * which is filled with a random secret on first start, mode 0600, and reused on every restart).
 */
function signingSecretOf(env: Env): string {
  let secret = env.SIGNING_SECRET;
  if (secret === undefined || secret === '') {
    const file = env.SIGNING_SECRET_FILE;
    if (file === undefined || file === '')
      throw new ConfigError('SIGNING_SECRET is required (at least 32 characters), or SIGNING_SECRET_FILE naming a file that holds it');
    secret = secretFromFile(file);
  }
  if (secret.length < 32) throw new ConfigError('SIGNING_SECRET must be at least 32 characters');
  return secret;
}

function httpTimeouts(env: Env): Config['http'] {
  const headersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  // a 10 MB parking photo over a slow mobile link still fits in a minute
  const requestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  return Object.freeze({
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    connectionsCheckingIntervalMs: int(env, 'HTTP_CONNECTIONS_CHECK_MS', 1_000, 10, 60_000),
  });
}

/** An optional postgres:// URL: a typo fails at start, not at the first read routed to it. */
function postgresUrl(env: Env, name: string): string | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  let protocol: string;
  try {
    protocol = new URL(v).protocol;
  } catch {
    throw new ConfigError(`${name} must be a postgres:// URL`);
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') throw new ConfigError(`${name} must be a postgres:// URL, got a ${protocol} URL`);
  return v;
}

function metricsConfig(env: Env, envName: Config['env']): Config['metrics'] {
  // tests start many entry points side by side: a fixed default port would collide
  const port = int(env, 'METRICS_PORT', envName === 'test' ? 0 : 9464, 0, 65535);
  return Object.freeze({
    host: str(env, 'METRICS_HOST', '127.0.0.1'),
    port,
    // the next port: a publisher beside an API process (`make run`, or one machine running both) is
    // found at a known place without a second variable; a free port when METRICS_PORT is one (or the last)
    publisherPort: int(env, 'PUBLISHER_METRICS_PORT', port === 0 || port === 65535 ? 0 : port + 1, 0, 65535),
    token: metricsToken(env),
  });
}

function metricsToken(env: Env): string | undefined {
  const token = env.METRICS_TOKEN;
  if (token === undefined || token === '') return undefined;
  if (token.length < 16) throw new ConfigError('METRICS_TOKEN must be at least 16 characters');
  return token;
}

function secretFromFile(file: string): string {
  try {
    mkdirSync(dirname(file), { recursive: true });
    // `wx`: only the first start writes; a concurrent second start reads what the first wrote
    writeFileSync(file, randomBytes(32).toString('base64url') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new ConfigError(`SIGNING_SECRET_FILE=${file}: ${(err as Error).message}`);
  }
  try {
    // a file copied in by hand keeps the data directory's rule: only its owner reads it
    chmodSync(file, 0o600);
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(`SIGNING_SECRET_FILE=${file}: ${(err as Error).message}`);
  }
}

/**
 * MQTT_URL (mqtt:// or mqtts://, no credentials in it), MQTT_USERNAME (default `platform`) and the
 * password: MQTT_PASSWORD, or MQTT_PASSWORD_FILE naming a file that holds it (scripts/mqtt.sh keeps the
 * embedded broker's in .data/mqtt/platform-secret).
 */
function mqttOf(env: Env): Config['mqtt'] {
  const url = env.MQTT_URL;
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`MQTT_URL is not a URL: "${url}"`);
  }
  if (parsed.protocol !== 'mqtt:' && parsed.protocol !== 'mqtts:')
    throw new ConfigError(`MQTT_URL must start with mqtt:// or mqtts://, got "${parsed.protocol}"`);
  if (parsed.username || parsed.password)
    throw new ConfigError('MQTT_URL must not hold credentials: set MQTT_USERNAME and MQTT_PASSWORD or MQTT_PASSWORD_FILE');
  const password = secretOf(env, 'MQTT_PASSWORD');
  if (!password) throw new ConfigError('MQTT_URL is set: MQTT_PASSWORD or MQTT_PASSWORD_FILE is required');
  return Object.freeze({ url, username: str(env, 'MQTT_USERNAME', 'platform'), password });
}

/** A secret given as NAME or in the file NAME_FILE names (trimmed); undefined when neither is set. */
function secretOf(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value) return value;
  const file = env[`${name}_FILE`];
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new ConfigError(`${name}_FILE=${file}: ${(err as Error).message}`);
  }
}

function demoFleetOf(env: Env): Config['demoFleet'] {
  const username = env.DEMO_FLEET_MQTT_USERNAME;
  if (!username) return undefined;
  const password = secretOf(env, 'DEMO_FLEET_MQTT_PASSWORD');
  if (!password) throw new ConfigError('DEMO_FLEET_MQTT_USERNAME is set: DEMO_FLEET_MQTT_PASSWORD or DEMO_FLEET_MQTT_PASSWORD_FILE is required');
  return Object.freeze({ username, password });
}

function ingestOf(env: Env, metrics: Config['metrics']): Config['ingest'] {
  const id = str(
    env,
    'INGEST_ID',
    hostname()
      .replace(/[^A-Za-z0-9_-]/g, '_')
      .slice(0, 64) || 'ingest',
  );
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw new ConfigError(`INGEST_ID must be 1-64 letters, digits, - or _, got "${id}"`);
  return Object.freeze({
    id,
    batchMax: int(env, 'INGEST_BATCH_MAX', 500, 1, 10_000),
    batchMs: int(env, 'INGEST_BATCH_MS', 50, 0, 10_000),
    sessionExpirySeconds: int(env, 'INGEST_SESSION_EXPIRY_SECONDS', 3600, 0, 7 * 86_400),
    maxAgeHours: int(env, 'INGEST_MAX_AGE_HOURS', 72, 1, 24 * 365),
    maxAheadMs: int(env, 'INGEST_MAX_AHEAD_MS', 60_000, 0, 86_400_000),
    maxReportsPerMinute: int(env, 'INGEST_MAX_REPORTS_PER_MINUTE', 60, 1, 60_000),
    metricsPort: int(env, 'INGEST_METRICS_PORT', metrics.port === 0 || metrics.port > 65533 ? 0 : metrics.port + 2, 0, 65535),
  });
}

/** Parses the environment. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const envName = oneOf(env, 'NODE_ENV', ['development', 'test', 'production'] as const, 'development');
  const port = int(env, 'PORT', 8080, 0, 65535);
  const legacyPort = int(env, 'LEGACY_PORT', 8081, 0, 65535);
  const signingSecret = signingSecretOf(env);
  const metrics = metricsConfig(env, envName);
  const providerId = str(env, 'PROVIDER_ID', '7c1f8d1e-4b7a-4f3e-9a51-2f6f4a8c9b10');
  if (!isUuid(providerId)) throw new ConfigError('PROVIDER_ID must be a UUID');
  const storeUrl = str(env, 'STORE_URL', 'file://.data/store');
  if (!/^(file|s3):\/\//.test(storeUrl)) throw new ConfigError(`STORE_URL must start with file:// or s3://, got "${storeUrl}"`);
  return Object.freeze({
    env: envName,
    mode: oneOf(env, 'MODE', ['staging', 'production'] as const, 'production'),
    databaseUrl: str(env, 'DATABASE_URL'),
    databaseReplicaUrl: postgresUrl(env, 'DATABASE_REPLICA_URL'),
    // a streaming replica on the same network is a millisecond or two behind
    databaseReplicaWaitMs: int(env, 'DATABASE_REPLICA_WAIT_MS', 20, 0, 10_000),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 20, 1, 500),
    // MDS /telemetry privacy: a trip's own points are published this many minutes after it ended
    telemetryTripDelayMinutes: int(env, 'MDS_TELEMETRY_TRIP_DELAY_MINUTES', 0, 0, 7 * 24 * 60),
    // admission control of the partner API and TOMP (api/kit/admission.ts), the same in every
    // environment: bursts wait in a queue for up to the deadline; only a queue that stands longer
    // than the burst allowance (overload) shortens the wait admitted. In flight by default: 5 per
    // core, at most the pool: the requests' work is Postgres's, which in the default deployment
    // shares these cores, so past a few statements per core they would only queue inside it.
    admission: Object.freeze({
      maxInFlight: int(env, 'API_MAX_IN_FLIGHT', Math.min(int(env, 'DATABASE_POOL_SIZE', 20, 1, 500), 5 * availableParallelism()), 1, 10000),
      deadlineMs: int(env, 'API_QUEUE_DEADLINE_MS', 2000, 1, 60000),
      overloadWaitMs: int(env, 'API_QUEUE_OVERLOAD_WAIT_MS', 300, 0, 60000),
      burstMs: int(env, 'API_QUEUE_BURST_MS', 500, 0, 60000),
      maxLagMs: int(env, 'API_MAX_EVENT_LOOP_DELAY_MS', 200, 0, 60000),
      maxQueue: int(env, 'API_MAX_QUEUE', 20000, 0, 1000000),
    }),
    storeUrl,
    s3Endpoint: env.S3_ENDPOINT || undefined,
    s3Region: str(env, 'S3_REGION', 'us-east-1'),
    s3ForcePathStyle: str(env, 'S3_FORCE_PATH_STYLE', 'true') === 'true',
    port,
    legacyPort,
    host: str(env, 'HOST', '127.0.0.1'),
    metrics,
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL', `http://localhost:${port}`),
    publicLegacyUrl: url(env, 'PUBLIC_LEGACY_URL', `http://localhost:${legacyPort}`),
    signingSecret,
    providerId: providerId.toLowerCase(),
    providerName: str(env, 'PROVIDER_NAME', 'Demo Mobility'),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, envName === 'test' ? 'silent' : 'info'),
    publishLatenessSeconds: int(env, 'PUBLISH_LATENESS_SECONDS', 300, 0, 86400),
    publishCatchupHoursPerTick: int(env, 'PUBLISH_CATCHUP_HOURS_PER_TICK', 48, 0, 10000),
    tokenTtlSeconds: int(env, 'TOKEN_TTL_SECONDS', 900, 1, 86400),
    // the failure throttle is effectively off under NODE_ENV=test, where suites send thousands of bad
    // credentials from one address on purpose; the throttle's own test sets low limits
    tokenAuth: Object.freeze({
      // per (client id, address), never per client id alone: ids are not secret, and a count per id let
      // anyone lock a client out. The old name, TOKEN_AUTH_FAILURES_PER_CLIENT, is still read.
      failuresPerClientAddress: int(
        env,
        'TOKEN_AUTH_FAILURES_PER_CLIENT_ADDRESS',
        int(env, 'TOKEN_AUTH_FAILURES_PER_CLIENT', envName === 'test' ? 1_000_000 : 5, 1),
        1,
      ),
      failuresPerAddress: int(env, 'TOKEN_AUTH_FAILURES_PER_ADDRESS', envName === 'test' ? 1_000_000 : 30, 1),
      // reverse proxies in front of the API whose X-Forwarded-For entries are believed; 0: none
      trustedProxyHops: int(env, 'TOKEN_AUTH_TRUSTED_PROXY_HOPS', 0, 0, 10),
      // one secret check per core at most: a burst of first authentications is served in about
      // (clients × 50 ms) / cores, and a flood of bad secrets cannot take the libuv pool from the API
      hashConcurrency: int(env, 'TOKEN_HASH_CONCURRENCY', availableParallelism(), 1, 64),
      hashQueue: int(env, 'TOKEN_HASH_QUEUE', 1000, 0, 100_000),
    }),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 4000, 1),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 64 * 1024, 1024),
    maxPhotoBytes: int(env, 'MAX_PHOTO_BYTES', 10 * 1024 * 1024, 1024),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10000, 0),
    http: httpTimeouts(env),
    liveSimulator: oneOf(env, 'LIVE_SIMULATOR', ['true', 'false'] as const, 'true') === 'true',
    feedCacheBytes: int(env, 'FEED_CACHE_BYTES', 64 * 1024 * 1024, 0),
    // the partner API's most frequent read, polled by every partner app of a zone (api/partner/vehicle-list.ts);
    // off under NODE_ENV=test, whose suites change vehicles behind the API and read them back at once
    // the vehicle list's bound for what changes with time alone; writes invalidate it at once (api/partner/vehicle-list.ts)
    vehicleListCacheMs: int(env, 'VEHICLE_LIST_CACHE_MS', 1000, 0, 10_000),
    feedCredentialRefreshMs: int(env, 'FEED_CREDENTIAL_REFRESH_MS', 30_000, 100, 300_000),
    gateway: Object.freeze({
      failRate: num(env, 'GATEWAY_FAIL_RATE', 0, 0, 1),
      delayMs: int(env, 'GATEWAY_DELAY_MS', 0, 0),
      timeoutMs: int(env, 'GATEWAY_TIMEOUT_MS', 5000, 1),
    }),
    mqtt: mqttOf(env),
    ingest: ingestOf(env, metrics),
    demoFleet: demoFleetOf(env),
    demoVehiclesFile: str(env, 'DEMO_VEHICLES_FILE', '.data/demo-vehicles.json'),
    opsStatementTimeoutMs: int(env, 'OPS_STATEMENT_TIMEOUT_MS', 30 * 60_000, 1000, 24 * 3_600_000),
    partitionsAheadDays: int(env, 'PARTITIONS_AHEAD_DAYS', 7, 1, 366),
    // raw telemetry only feeds live state and ride distances; events and trips back the MDS windows
    // that regulators may query for weeks (events/historical, trips) before relying on the files
    retention: Object.freeze({
      telemetryDays: int(env, 'RETENTION_TELEMETRY_DAYS', 7, 1, 36500),
      eventsDays: int(env, 'RETENTION_EVENTS_DAYS', 90, 1, 36500),
      tripsDays: int(env, 'RETENTION_TRIPS_DAYS', 90, 1, 36500),
    }),
  });
}

/** A config for tests and tools: the environment plus overrides. */
export function testConfig(overrides: Env = {}): Config {
  // tests that never touch the database (store, mappers) need no DATABASE_URL
  return loadConfig({
    NODE_ENV: 'test',
    SIGNING_SECRET: randomBytes(24).toString('hex'),
    DATABASE_URL: 'postgres://unused.invalid/none',
    ...process.env,
    ...overrides,
  });
}

/**
 * For entry points: the config, or the process ends with exit code 2 and one line naming the bad
 * variable (no stack trace for an operator's typo). `extra` parses entry-point-specific variables
 * under the same rule.
 */
/**
 * How an entry point's start fails: a ConfigError is the operator's to fix (one line, exit 2, as
 * loadConfigOrExit), anything else is a crash (its stack, exit 1).
 */
export function exitOnStartError(err: unknown): never {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
}

export function loadConfigOrExit<T = undefined>(extra?: (env: Env) => T): { config: Config; extra: T } {
  try {
    return { config: loadConfig(), extra: (extra ? extra(process.env) : undefined) as T };
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
}
