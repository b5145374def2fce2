/**
 * Admission control of the API families whose requests hold database work (partner API, TOMP):
 * at most `maxInFlight` requests of a process run at once; a request beyond that waits in a short
 * FIFO queue for at most `maxWaitMs`, and is refused (the family answers 503 with Retry-After) when
 * the queue is full or its wait runs out.
 *
 * Why: past the machine's capacity, requests used to pile up in the pg pool's queue and every
 * partner waited seconds (p99 20 s at 1,333 req/s offered on the 2-core bench). A refusal costs
 * a fraction of a millisecond and tells the partner to come back, so the requests that are
 * admitted keep their latency (bench/partner-api.bench.ts, open loop). The default of in-flight
 * requests is the database pool size: more would only wait for a connection.
 *
 * The in-flight count does not see a process whose own CPU is the bottleneck (requests then wait in
 * the socket before Node reads them), so the event loop's delay is watched too, as fastify's
 * under-pressure does: a timer every SAMPLE_MS measures how late it fires; while the last delay is
 * above `maxDelayMs`, new requests are refused at once. Refusals are cheap, so the loop recovers.
 */
const SAMPLE_MS = 25;

export class Admission {
  private inFlight = 0;
  /** how late the last sampling timer fired (ms) */
  private delayMs = 0;
  private sampler?: NodeJS.Timeout;
  private readonly queue: Array<{ admit: () => void; timer: NodeJS.Timeout }> = [];
  /** requests refused since start (for tests; the metric counts them per family) */
  refused = 0;

  constructor(
    readonly maxInFlight: number,
    readonly maxWaitMs: number,
    readonly maxQueue: number,
    readonly maxDelayMs = 0,
  ) {}

  /** Resolves true once admitted (call `leave()` when done), false when refused. */
  enter(): Promise<boolean> | boolean {
    if (this.maxDelayMs > 0) {
      this.sample();
      if (this.delayMs > this.maxDelayMs) {
        this.refused++;
        return false;
      }
    }
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return true;
    }
    if (this.queue.length >= this.maxQueue || this.maxWaitMs === 0) {
      this.refused++;
      return false;
    }
    return new Promise<boolean>((resolve) => {
      const waiter = {
        admit: () => resolve(true),
        timer: setTimeout(() => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          this.refused++;
          resolve(false);
        }, this.maxWaitMs),
      };
      this.queue.push(waiter);
    });
  }

  leave(): void {
    const next = this.queue.shift();
    if (next) {
      // the slot passes straight to the oldest waiter: inFlight stays the same
      clearTimeout(next.timer);
      next.admit();
    } else {
      this.inFlight--;
    }
  }

  /** Starts the delay sampler on first use; unref'd, so it never keeps a process alive. */
  private sample(): void {
    if (this.sampler) return;
    let expected = performance.now() + SAMPLE_MS;
    this.sampler = setInterval(() => {
      const now = performance.now();
      this.delayMs = Math.max(0, now - expected);
      expected = now + SAMPLE_MS;
    }, SAMPLE_MS);
    this.sampler.unref();
  }

  get running(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.queue.length;
  }
}

/** The admission limit the config describes (API_MAX_IN_FLIGHT, API_MAX_QUEUE_MS, API_MAX_QUEUE, API_MAX_EVENT_LOOP_DELAY_MS). */
export function admissionFor(config: { apiMaxInFlight: number; apiMaxQueueMs: number; apiMaxQueue: number; apiMaxEventLoopDelayMs: number }): Admission {
  return new Admission(config.apiMaxInFlight, config.apiMaxQueueMs, config.apiMaxQueue, config.apiMaxEventLoopDelayMs);
}
