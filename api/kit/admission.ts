/**
 * Admission control of the work behind the API families that hold database work (partner API,
 * TOMP, and the token endpoints' secret checks): a bounded number of requests run at once and the
 * rest wait in a FIFO queue, so that bursts the contract allows are served, not refused.
 *
 * A request is refused (the family answers 503 with Retry-After) only when it would wait longer
 * than its budget, and that is decided on arrival from the queue's predicted wait, so a refusal is
 * as fast as an answer can be and never comes after the wait it predicts:
 *
 * - **A burst** (the queue has just formed) gets the whole deadline (API_QUEUE_DEADLINE_MS,
 *   default 2 s): 50 partners tapping "start" at once, or one partner sending its minute's budget
 *   in one go, all wait and are served.
 * - **Overload** (the queue has stood, or the loop has been late, without a break): the budget falls
 *   linearly with the time the pressure has lasted, from the deadline to the short `overloadWaitMs`
 *   after `burstMs`, so new requests are admitted only while their predicted wait is below it, those
 *   admitted are answered promptly and the rest are told at once to come back. This is the
 *   controlled-delay rule of Facebook's "Fail at Scale" queues (and of CoDel): a queue that drains
 *   is a burst, a queue that stands is overload. The fall is gradual because a burst that arrives
 *   over some time (clients that send again as answers come back) is still a burst: at 2× the
 *   capacity the two lines meet after ~0.45 s, with the default settings (2 s falling to 0.3 s over
 *   0.5 s), at a wait of ~0.45 s, so what is answered under sustained overload waits well under a
 *   second (BENCH=partner-api, docs/benchmarks.md).
 *
 * The prediction is (position in the queue) × (the mean time a request holds its slot, an EWMA of
 * the measured durations) ÷ (slots), plus how late the event loop runs: a process whose own CPU is
 * the bottleneck makes requests wait before Node even reads them, which the queue cannot see. A loop
 * later than `maxLagMs` counts as pressure, and under overload such a loop refuses new requests even
 * with slots free (as fastify's under-pressure does): each admitted one would only make the loop
 * later, while a refusal costs next to nothing, so the loop stays punctual and refusals stay fast.
 *
 * A waiter still waiting at its deadline (the prediction was wrong: a request held its slot far
 * longer than the mean) is refused then; `maxQueue` bounds the memory a flood can take.
 *
 * A request that waits on something outside the process (a vehicle's answer, lib/core/outside.ts)
 * gives its slot up for the wait: 50 starts on vehicles that answer after 2 s hold no slot while
 * they wait, so the requests behind them are not queued for seconds, and the slot time the
 * prediction uses is the request's own work, not the vehicle's. When the wait ends the request takes
 * a slot back ahead of every waiter and is never refused: it was admitted once and has work half done.
 */
import type { AdmissionLimits } from '../../lib/core/config.js';
import { metrics } from '../../lib/core/metrics.js';
import { withStepOut, type StepOut } from '../../lib/core/outside.js';

const SAMPLE_MS = 25;
/**
 * The lag that counts is the least of the last LAG_WINDOW samples (100 ms): a loop whose own CPU is
 * the bottleneck is late at every sample, while one stall (a major GC, the hypervisor taking the
 * core, a synchronous burst of work) makes one sample late and is over when it is read. Counting
 * that one sample refused every request that had arrived during the stall (the 64 connections of
 * test/bursts.test.ts: 17 to 21 refusals of 4,000 in one CI run), though the wait it predicts is
 * already behind them. This is CoDel's rule: the minimum over an interval tells a standing delay
 * from a passing one.
 */
const LAG_WINDOW = 4;
/** weight of the newest duration in the mean slot time */
const ALPHA = 0.05;
/**
 * A duration counts in the mean slot time as at most this many times the mean: a stall of the
 * process (the hypervisor taking the core, a major GC) lengthens every request in flight by the
 * whole stall at once, and ten requests of 5 ms that a 300 ms stall made 305 ms each took the mean
 * to 120 ms, so the queue behind them was predicted to wait 0.6 s and refused, though it drained at
 * the usual pace once the process ran again. A real slowdown (Postgres slower, heavier requests)
 * still moves the mean: by up to 1.15× a request, 4× within ten.
 */
const CLIP = 4;
/**
 * A request is admitted only while its predicted wait, with this headroom, fits its budget: the
 * mean slot time lags behind a load that grows, and a waiter refused at its deadline is a refusal
 * that came late.
 */
const HEADROOM = 1.25;

/** Thrown by `Admission.run` for a request that would wait past its budget. */
export class AdmissionRefused extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('too many requests in progress');
    this.name = 'AdmissionRefused';
  }
}

interface Waiter {
  admit: () => void;
  /** the deadline; none for a request taking its slot back after a wait outside */
  timer?: NodeJS.Timeout;
}

export class Admission {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];
  /** mean time a request holds its slot (ms); the prior is replaced within a few dozen requests */
  private slotMs = 5;
  /** how late the loop runs (ms): the least lag of the last LAG_WINDOW samples */
  private lagMs = 0;
  /** the last LAG_WINDOW samples' lags, oldest overwritten */
  private readonly lags = new Array<number>(LAG_WINDOW).fill(0);
  private lagAt = 0;
  private sampler?: NodeJS.Timeout;
  /** since when the queue has stood or the loop been late without a break (undefined: calm) */
  private pressuredSince: number | undefined;
  /** requests refused since start (tests; the metric counts them per family) */
  refused = 0;

  constructor(readonly limits: AdmissionLimits) {}

  /**
   * Runs `work` once a slot is free; throws AdmissionRefused, without running it, when the request
   * would wait past its budget.
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const admitted = this.enter();
    if (admitted !== true) await admitted;
    const started = performance.now();
    // waits outside (lib/core/outside.ts) give the slot up; several at once in one request give it up once
    let outside = 0;
    let leftAt = 0;
    let outsideMs = 0;
    const stepOut: StepOut = async (wait) => {
      if (outside++ === 0) {
        leftAt = performance.now();
        this.leave();
      }
      try {
        return await wait();
      } finally {
        if (--outside === 0) {
          await this.reenter();
          outsideMs += performance.now() - leftAt;
        }
      }
    };
    try {
      return await withStepOut(stepOut, work);
    } finally {
      this.slotMs += ALPHA * (Math.min(CLIP * this.slotMs, performance.now() - started - outsideMs) - this.slotMs);
      this.leave();
    }
  }

  /** A slot for a request back from a wait outside: at once when one is free, else the next one freed. */
  private reenter(): true | Promise<void> {
    if (this.inFlight < this.limits.maxInFlight && this.queue.length === 0) {
      this.inFlight++;
      return true;
    }
    this.pressure(true);
    return new Promise<void>((resolve) => this.queue.unshift({ admit: resolve }));
  }

  /** The wait a request arriving now is predicted to have, in ms. */
  predictedWaitMs(): number {
    const ahead = this.inFlight < this.limits.maxInFlight ? 0 : this.queue.length + 1;
    return this.lagMs + (ahead * this.slotMs) / this.limits.maxInFlight;
  }

  /** Overload rather than a burst: the queue has stood, or the loop been late, for burstMs or longer. */
  get overloaded(): boolean {
    return this.pressuredSince !== undefined && performance.now() - this.pressuredSince >= this.limits.burstMs;
  }

  /** The longest predicted wait admitted now: the deadline, falling to overloadWaitMs as pressure lasts. */
  budgetMs(): number {
    const { deadlineMs, overloadWaitMs, burstMs } = this.limits;
    if (this.pressuredSince === undefined) return deadlineMs;
    const lasted = burstMs > 0 ? Math.min(1, (performance.now() - this.pressuredSince) / burstMs) : 1;
    return Math.min(deadlineMs, deadlineMs - (deadlineMs - overloadWaitMs) * lasted);
  }

  get running(): number {
    return this.inFlight;
  }

  get waiting(): number {
    return this.queue.length;
  }

  private enter(): true | Promise<void> {
    if (this.limits.maxLagMs > 0) this.startSampler();
    // overloaded and the loop late: the process's own CPU is the bottleneck, and each request it
    // admits makes every other one (refusals included) wait longer before it is even read
    if (this.overloaded && this.limits.maxLagMs > 0 && this.lagMs > this.limits.maxLagMs) throw this.refuse();
    const budget = this.budgetMs();
    const predicted = this.predictedWaitMs();
    if (predicted * HEADROOM > budget || this.queue.length >= this.limits.maxQueue) throw this.refuse(predicted);
    if (this.inFlight < this.limits.maxInFlight && this.queue.length === 0) {
      this.inFlight++;
      return true;
    }
    this.pressure(true);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        admit: resolve,
        timer: setTimeout(() => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          if (this.queue.length === 0) this.pressure(false);
          reject(this.refuse());
        }, this.limits.deadlineMs),
      };
      this.queue.push(waiter);
    });
  }

  private leave(): void {
    const next = this.queue.shift();
    if (next) {
      // the slot passes straight to the oldest waiter: inFlight stays the same
      clearTimeout(next.timer);
      if (this.queue.length === 0) this.pressure(false);
      next.admit();
    } else {
      this.inFlight--;
    }
  }

  private refuse(predictedMs = this.predictedWaitMs()): AdmissionRefused {
    this.refused++;
    // come back once the work now ahead would be done
    return stackless(() => new AdmissionRefused(Math.max(1, Math.ceil(predictedMs / 1000))));
  }

  /** Marks pressure on (a standing queue, a late loop) or off (the queue drained and the loop is punctual). */
  private pressure(on: boolean): void {
    if (on) this.pressuredSince ??= performance.now();
    else if (this.queue.length === 0 && !(this.limits.maxLagMs > 0 && this.lagMs > this.limits.maxLagMs)) this.pressuredSince = undefined;
  }

  /** Starts the lag sampler on first use; unref'd, so it never keeps a process alive. */
  private startSampler(): void {
    if (this.sampler) return;
    let expected = performance.now() + SAMPLE_MS;
    this.sampler = setInterval(() => {
      const now = performance.now();
      this.lags[this.lagAt++ % LAG_WINDOW] = Math.max(0, now - expected);
      this.lagMs = Math.min(...this.lags);
      expected = now + SAMPLE_MS;
      this.pressure(this.lagMs > this.limits.maxLagMs);
    }, SAMPLE_MS);
    this.sampler.unref();
  }
}

/**
 * `make()` with no stack trace captured by the errors it constructs: a refusal for overload is an
 * answer, not a fault, and capturing the stack of each refusal and of its family error took 0.66 s of
 * the API's 26.6 s of CPU at 2 × the capacity (BENCH=partner-api, CPU profile).
 */
function stackless<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** The admission limits the config describes (API_MAX_IN_FLIGHT, API_QUEUE_*, API_MAX_QUEUE, API_MAX_EVENT_LOOP_DELAY_MS). */
export function admissionFor(config: { admission: AdmissionLimits }): Admission {
  return new Admission(config.admission);
}

/**
 * The kit's `admit` of a family (api/kit/endpoints.ts): runs a handler under `gate`, and turns a
 * refusal into the family's own error (`overloaded`), counted in http_requests_shed_total.
 */
export function admitter(gate: Admission, family: string, overloaded: (refusal: AdmissionRefused) => Error): (work: () => Promise<void>) => Promise<void> {
  return async (work) => {
    try {
      await gate.run(work);
    } catch (err) {
      if (!(err instanceof AdmissionRefused)) throw err;
      metrics.shed.inc({ family });
      throw stackless(() => overloaded(err));
    }
  };
}
