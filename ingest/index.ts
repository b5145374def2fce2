/**
 * The vehicle ingest: one MQTT 5 connection that shares the vehicles' telemetry and state topics
 * with every other ingest process (`$share/ingest/…`, lib/domain/vehicles/protocol.ts), so that N
 * processes split the stream, and writes what it receives in batches (ingest/write.ts).
 *
 * Nothing is lost between the broker and Postgres:
 * - a report is acknowledged (PUBACK) only after the transaction that stored it committed. Until
 *   then the broker holds it for this process's session: killed mid-batch, the process comes back
 *   under the same INGEST_ID, its session (clean start off, INGEST_SESSION_EXPIRY_SECONDS) is resumed
 *   and the broker delivers again what was not acknowledged. What was committed but not acknowledged
 *   comes again too, and the unique (vehicle, ts) of telemetry (migration 000280) stores it once;
 * - a batch whose transaction fails (Postgres restarting, a deadlock) is written again, after a
 *   pause that grows to 5 s, and the stream waits behind it: the broker stops sending when this
 *   process holds its receive maximum of unacknowledged reports, so memory stays bounded;
 * - a report the ingest refuses (ingest/reports.ts) is counted by reason, sampled into the log and
 *   acknowledged with its batch: it is dropped, never retried, and the stream goes on;
 * - a process that stops (SIGTERM) leaves the group cleanly: it unsubscribes, writes and
 *   acknowledges what the broker had already routed to it, then ends its session (stop()). A process
 *   that dies instead leaves its session to the broker: what is routed to it meanwhile waits there
 *   for its successor, for INGEST_SESSION_EXPIRY_SECONDS at most (docs/vehicles.md, "Running the
 *   ingest").
 *
 * MQTT.js acknowledges a QoS 1 message when `handleMessage` calls back, and takes the next message
 * only then: one message per commit. Instead, `handleMessage` calls back at once and the PUBACK
 * MQTT.js then sends is held here (the client's packet writer, wrapped at connect) and sent after
 * the commit, in the order the reports came (MQTT 5 §4.6 asks acknowledgements in order). A PUBACK
 * held for a connection that closed is dropped: its packet id belongs to that connection, and the
 * broker delivers the report again on the next.
 */
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient, type Packet } from 'mqtt';
import type { AppContext } from '../lib/domain/context.js';
import { metrics } from '../lib/core/metrics.js';
import { INGEST_FILTERS, QOS } from '../lib/domain/vehicles/protocol.js';
import { decodeReport, FloodGuard, REJECT_REASONS, type RejectReason } from './reports.js';
import { writeBatch, type BatchResult, type Received } from './write.js';

export interface IngestOptions {
  url: string;
  username: string;
  password: string;
  /** overrides config.ingest (tests) */
  id?: string;
  batchMax?: number;
  batchMs?: number;
}

export interface Ingest {
  /** Stops taking reports, writes and acknowledges what it holds, disconnects (the session stays). */
  stop(): Promise<void>;
  /** resolves once the broker granted the subscriptions */
  readonly ready: Promise<void>;
  /** what this process stored so far (tests, the bench) */
  readonly totals: { received: number; stored: number; duplicate: number; rejected: number; batches: number };
}

interface Held {
  received?: Received;
  /** the PUBACK to send after the commit; absent once its connection closed */
  ack?: { messageId: number; connection: number };
}

type PacketWriter = (packet: Packet, cb?: (err?: Error) => void, ...rest: unknown[]) => void;

/** Log at most one line per reject reason per this many ms (with the count it stands for). */
const REJECT_LOG_MS = 10_000;

export function startIngest(ctx: AppContext, opts: IngestOptions): Ingest {
  const cfg = ctx.config.ingest;
  const id = opts.id ?? cfg.id;
  const batchMax = opts.batchMax ?? cfg.batchMax;
  const batchMs = opts.batchMs ?? cfg.batchMs;
  const log = ctx.log.child({ component: 'ingest', ingest: id });
  const flood = new FloodGuard(cfg.maxReportsPerMinute);
  const totals = { received: 0, stored: 0, duplicate: 0, rejected: 0, batches: 0 };
  const rejectLog = new Map<RejectReason, { at: number; suppressed: number }>();
  // every reason's series from the start, so that a rate over them is 0 rather than absent
  for (const reason of REJECT_REASONS) metrics.ingestRejected.inc({ reason }, 0);

  const pending: Held[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let stopping = false;
  // set when a stop ran out of time (SHUTDOWN_TIMEOUT_MS): what is not written yet is left,
  // unacknowledged, to the broker's session for the next process of this INGEST_ID
  let abandoned = false;
  // every message that came, refused ones included: the drain of stop() waits until it stands still
  let arrived = 0;
  // one number per connection: a PUBACK is sent only on the connection its message came on
  let connection = 0;
  // the PUBACK MQTT.js is about to send for the message handleMessage just took (see below)
  let capture: Held | undefined;

  const options: IClientOptions = {
    protocolVersion: 5,
    clientId: `ingest-${id}`,
    username: opts.username,
    password: opts.password,
    clean: false,
    reconnectPeriod: 1000,
    connectTimeout: 10_000,
    properties: {
      sessionExpiryInterval: cfg.sessionExpirySeconds,
      // the reports this process may hold unacknowledged: two batches (one being written, one filling)
      receiveMaximum: Math.min(65_535, batchMax * 2),
    },
    // subscriptions live in the resumed session; a fresh one (expired, or the first) subscribes below
    resubscribe: false,
  };
  const client: MqttClient = mqtt.connect(opts.url, options);
  const writer = client as unknown as { _sendPacket: PacketWriter };
  if (typeof writer._sendPacket !== 'function') throw new Error('mqtt: the client has no packet writer to hold acknowledgements (MQTT.js changed?)');
  const send = writer._sendPacket.bind(client);
  writer._sendPacket = (packet, cb, ...rest) => {
    if (packet.cmd === 'puback' && capture) {
      capture.ack = { messageId: (packet as { messageId: number }).messageId, connection };
      capture = undefined;
      cb?.();
      return;
    }
    send(packet, cb, ...rest);
  };

  client.handleMessage = (packet: IPublishPacket, callback: (err?: Error) => void) => {
    arrived++;
    const held: Held = {};
    // QoS 0 (not ours, but a misconfigured broker may send it) has nothing to hold
    if (packet.qos > 0) capture = held;
    take(packet, held);
    pending.push(held);
    callback();
    capture = undefined;
    if (pending.length >= batchMax || stopping) flushSoon(0);
    else flushSoon(batchMs);
  };

  let resolveReady!: () => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<void>((resolve, reject) => ((resolveReady = resolve), (rejectReady = reject)));
  client.on('connect', (connack) => {
    connection++;
    // acknowledgements held for the connection that closed are void: the broker sends those again
    for (const h of pending) if (h.ack && h.ack.connection !== connection) h.ack = undefined;
    if (connack.sessionPresent) {
      log.info('broker session resumed');
      resolveReady();
      return;
    }
    client.subscribe(
      INGEST_FILTERS.map((f) => f),
      { qos: QOS },
      (err, granted) => {
        const refused = granted?.filter((g) => g.qos !== QOS) ?? [];
        if (err || refused.length > 0) {
          const e = err ?? new Error(`the broker refused ${refused.map((g) => g.topic).join(', ')}`);
          log.error({ err: e }, 'ingest subscription refused');
          rejectReady(e);
          return;
        }
        log.info({ filters: INGEST_FILTERS }, 'ingest subscribed');
        resolveReady();
      },
    );
  });
  client.on('error', (err) => log.warn({ err }, 'vehicle broker connection error'));
  client.on('close', () => {
    connection++;
  });
  // a refused connect (bad credentials) is final for a first start: say so, do not spin silently
  client.once('error', (err) => rejectReady(err));
  ready.catch(() => undefined);

  const sweep = setInterval(() => flood.sweep(Date.now()), 60_000);
  sweep.unref();

  function take(packet: IPublishPacket, held: Held): void {
    totals.received++;
    const now = Date.now();
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const decoded = decodeReport(packet.topic, payload, now, cfg);
    if (!decoded.ok)
      return reject(decoded.reason, decoded.channel, 1, { vehicleId: decoded.vehicleId, topic: packet.topic.slice(0, 200), detail: decoded.detail });
    if (!flood.allow(decoded.report.vehicleId, decoded.report.ts.getTime(), now))
      return reject('flood', decoded.report.channel, 1, { vehicleId: decoded.report.vehicleId });
    held.received = { report: decoded.report, receivedAt: new Date(now) };
  }

  /** Counts `n` refused reports and logs a line for them unless one of `reason` was logged lately. */
  function reject(reason: RejectReason, channel: string, n: number, fields: Record<string, unknown>): void {
    totals.rejected += n;
    metrics.ingestRejected.inc({ reason }, n);
    metrics.ingestReports.inc({ channel, outcome: 'rejected' }, n);
    const now = Date.now();
    const seen = rejectLog.get(reason);
    if (seen && now - seen.at < REJECT_LOG_MS) {
      seen.suppressed += n;
      return;
    }
    rejectLog.set(reason, { at: now, suppressed: 0 });
    log.warn({ reason, ...fields, sameReasonSinceLastLine: seen?.suppressed ?? 0 }, 'vehicle report refused');
  }

  function flushSoon(ms: number): void {
    if (writing) return; // the write in progress flushes again when it is done
    if (ms === 0) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      void write();
      return;
    }
    timer ??= setTimeout(() => {
      timer = undefined;
      void write();
    }, ms);
  }

  /** The one writer: flushes, then schedules what came in meanwhile. */
  function write(): Promise<void> {
    // flush() retries its writes until they commit; what could still throw is a fault of ours: it
    // is logged, and the reports it held stay unacknowledged for the broker to deliver again
    writing = flush()
      .catch((err: unknown) => log.error({ err }, 'ingest flush failed'))
      .finally(() => {
        writing = undefined;
        if (pending.length > 0) flushSoon(stopping ? 0 : batchMs);
      });
    return writing;
  }

  async function flush(): Promise<void> {
    while (pending.length > 0) {
      const batch = pending.splice(0, batchMax);
      const reports = batch.flatMap((h) => (h.received ? [h.received] : []));
      if (reports.length > 0) await writeUntilCommitted(reports);
      for (const h of batch)
        if (h.ack && h.ack.connection === connection && client.connected) send({ cmd: 'puback', messageId: h.ack.messageId, reasonCode: 0 });
      // a batch that came in while this one was written is written now if it is full, else after batchMs
      if (pending.length < batchMax && !stopping) break;
    }
  }

  async function writeUntilCommitted(reports: Received[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const t0 = process.hrtime.bigint();
      try {
        const r = await ctx.db.tx((tx) => writeBatch(tx, reports));
        metrics.ingestBatchSeconds.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        account(r, reports);
        return;
      } catch (err) {
        metrics.ingestBatchFailures.inc();
        if (abandoned) throw new Error('the ingest stopped before this batch could be written: the broker keeps it for the session', { cause: err });
        const pause = Math.min(5000, 100 * 2 ** attempt);
        log.warn({ err, reports: reports.length, attempt, retryInMs: pause }, 'ingest batch failed; writing it again');
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  function account(r: BatchResult, reports: Received[]): void {
    totals.batches++;
    totals.stored += r.telemetry.stored + r.state.applied;
    totals.duplicate += r.telemetry.duplicate;
    metrics.ingestReports.inc({ channel: 'telemetry', outcome: 'stored' }, r.telemetry.stored);
    metrics.ingestReports.inc({ channel: 'telemetry', outcome: 'duplicate' }, r.telemetry.duplicate);
    metrics.ingestReports.inc({ channel: 'state', outcome: 'stored' }, r.state.applied);
    metrics.ingestReports.inc({ channel: 'state', outcome: 'stale' }, r.state.stale);
    for (const channel of ['telemetry', 'state'] as const) {
      if (r.unknown[channel] > 0) reject('unknown_vehicle', channel, r.unknown[channel], { count: r.unknown[channel] });
    }
    for (const e of r.events) metrics.ingestImpliedEvents.inc({ event: e.eventType });
    const now = Date.now();
    for (const { report } of reports) metrics.ingestReportAge.observe(Math.max(0, now - report.ts.getTime()) / 1000);
  }

  return {
    ready,
    totals,
    async stop() {
      if (stopping) return;
      stopping = true;
      clearInterval(sweep);
      if (timer) clearTimeout(timer);
      timer = undefined;
      // Leaving the group, not just the connection: a broker hands a shared subscription's messages
      // to every member with a session, connected or not (Mosquitto, EMQX and VerneMQ alike), so a
      // session left behind would swallow its share until it expires. First the subscription goes
      // (no new report is routed here), then what the broker had routed here already comes in and is
      // written and acknowledged, and only then does the session end (expiry 0 on DISCONNECT). A
      // broker that does not answer the unsubscribe keeps the session for the next process of this
      // INGEST_ID, as after a crash.
      const left = await Promise.race([
        client.unsubscribeAsync([...INGEST_FILTERS]).then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((r) => setTimeout(() => r(false), 5000).unref()),
      ]);
      // a Postgres that does not come back within the bound leaves the rest to the session
      const bound = setTimeout(() => (abandoned = true), ctx.config.shutdownTimeoutMs);
      for (let seen = -1; !abandoned && (seen !== arrived || writing || pending.length > 0);) {
        seen = arrived;
        // one writer at a time, so that acknowledgements keep their order
        while (!abandoned && (writing || pending.length > 0)) await (writing ?? write());
        if (!left) break;
        await new Promise((r) => setTimeout(r, 300));
      }
      clearTimeout(bound);
      if (writing) await writing;
      if (abandoned || pending.length > 0) {
        log.warn({ unwritten: pending.length }, 'ingest stopped with reports unwritten: its broker session keeps them for the next process of this INGEST_ID');
        pending.length = 0;
        await client.endAsync(true);
        return;
      }
      await client.endAsync(false, left ? { properties: { sessionExpiryInterval: 0 } } : {});
    },
  };
}
