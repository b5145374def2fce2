/**
 * The vehicle gateway: the one door through which unlock, lock and speed commands reach a vehicle.
 * The built-in implementation simulates vehicles (what `MODE=staging` describes: every command
 * succeeds) and can inject failures, delays and timeouts for tests. A real IoT backend is another
 * implementation of the same interface: the MQTT gateway (lib/domain/vehicles/mqtt-gateway.ts).
 */
import type { VEHICLE_COMMANDS } from '../../schemas/vehicles/messages.js';
export type GatewayCommand = (typeof VEHICLE_COMMANDS)[number];

export class GatewayError extends Error {
  /**
   * A refusal the vehicle called temporary (VehicleReply `temporary`: a jammed lock, a busy
   * controller): the same command may succeed later. TOMP answers it 503 with Retry-After
   * (lib/domain/tomp/errors.ts); the partner API's codes do not change.
   */
  readonly temporary: boolean;

  constructor(
    message: string,
    /** `unreachable`: no answer from the vehicle (timeout, no connectivity); `refused`: it answered no */
    readonly reason: 'unreachable' | 'refused',
    readonly command: GatewayCommand,
    opts: { temporary?: boolean } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.temporary = reason === 'refused' && opts.temporary === true;
  }
}

export interface VehicleGateway {
  unlock(vehicleId: string): Promise<void>;
  lock(vehicleId: string): Promise<void>;
  setMaxSpeed(vehicleId: string, kph: number): Promise<void>;
}

export interface SimulatedGatewayOptions {
  /** probability in [0,1] that a command fails */
  failRate?: number;
  delayMs?: number;
  timeoutMs?: number;
  random?: () => number;
}

type Fault = { reason: 'unreachable' | 'refused' | 'timeout'; times: number; temporary: boolean };

/** Simulated vehicles. Tests use `failNext` to script faults per command. */
export class SimulatedGateway implements VehicleGateway {
  readonly calls: Array<{ command: GatewayCommand; vehicleId: string; arg?: number }> = [];
  private readonly faults = new Map<GatewayCommand, Fault[]>();

  constructor(private readonly opts: SimulatedGatewayOptions = {}) {}

  /**
   * The next `times` calls of `command` fail with `reason` (`timeout` waits past the timeout);
   * `temporary`: a refusal the vehicle calls temporary (a jammed lock).
   */
  failNext(command: GatewayCommand, reason: Fault['reason'] = 'refused', times = 1, opts: { temporary?: boolean } = {}): void {
    const list = this.faults.get(command) ?? [];
    list.push({ reason, times, temporary: opts.temporary === true });
    this.faults.set(command, list);
  }

  reset(): void {
    this.faults.clear();
    this.calls.length = 0;
  }

  unlock(vehicleId: string) {
    return this.run('unlock', vehicleId);
  }
  lock(vehicleId: string) {
    return this.run('lock', vehicleId);
  }
  setMaxSpeed(vehicleId: string, kph: number) {
    return this.run('set_speed', vehicleId, kph);
  }

  private async run(command: GatewayCommand, vehicleId: string, arg?: number): Promise<void> {
    this.calls.push({ command, vehicleId, ...(arg === undefined ? {} : { arg }) });
    const timeoutMs = this.opts.timeoutMs ?? 5000;
    const scripted = this.faults.get(command)?.[0];
    if (scripted) {
      if (--scripted.times <= 0) this.faults.get(command)!.shift();
      if (scripted.reason === 'timeout') {
        await sleep(Math.min(timeoutMs, 50));
        throw new GatewayError(`${command} timed out after ${timeoutMs} ms`, 'unreachable', command);
      }
      throw new GatewayError(`vehicle ${scripted.reason === 'refused' ? 'refused' : 'did not answer'} ${command}`, scripted.reason, command, {
        temporary: scripted.temporary,
      });
    }
    if (this.opts.delayMs) await sleep(Math.min(this.opts.delayMs, timeoutMs));
    if (this.opts.delayMs && this.opts.delayMs > timeoutMs) throw new GatewayError(`${command} timed out after ${timeoutMs} ms`, 'unreachable', command);
    if (this.opts.failRate && (this.opts.random ?? Math.random)() < this.opts.failRate) {
      throw new GatewayError(`vehicle did not answer ${command}`, 'unreachable', command);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
