/**
 * The vehicle gateway: the one door through which unlock, lock and speed commands reach a vehicle.
 * The built-in implementation simulates vehicles (what `MODE=staging` describes: every command
 * succeeds) and can inject failures, delays and timeouts for tests. A real IoT backend is another
 * implementation of the same interface: the MQTT gateway (lib/domain/vehicles/mqtt-gateway.ts).
 */
import type { VEHICLE_COMMANDS } from '../../schemas/vehicles/messages.js';
export type GatewayCommand = (typeof VEHICLE_COMMANDS)[number];

export class GatewayError extends Error {
  constructor(
    message: string,
    /** `unreachable`: no answer from the vehicle (timeout, no connectivity); `refused`: it answered no */
    readonly reason: 'unreachable' | 'refused',
    readonly command: GatewayCommand,
  ) {
    super(message);
    this.name = 'GatewayError';
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

type Fault = { reason: 'unreachable' | 'refused' | 'timeout'; times: number };

/** Simulated vehicles. Tests use `failNext` to script faults per command. */
export class SimulatedGateway implements VehicleGateway {
  readonly calls: Array<{ command: GatewayCommand; vehicleId: string; arg?: number }> = [];
  private readonly faults = new Map<GatewayCommand, Fault[]>();

  constructor(private readonly opts: SimulatedGatewayOptions = {}) {}

  /** The next `times` calls of `command` fail with `reason` (`timeout` waits past the timeout). */
  failNext(command: GatewayCommand, reason: Fault['reason'] = 'refused', times = 1): void {
    const list = this.faults.get(command) ?? [];
    list.push({ reason, times });
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
      throw new GatewayError(`vehicle ${scripted.reason === 'refused' ? 'refused' : 'did not answer'} ${command}`, scripted.reason, command);
    }
    if (this.opts.delayMs) await sleep(Math.min(this.opts.delayMs, timeoutMs));
    if (this.opts.delayMs && this.opts.delayMs > timeoutMs) throw new GatewayError(`${command} timed out after ${timeoutMs} ms`, 'unreachable', command);
    if (this.opts.failRate && (this.opts.random ?? Math.random)() < this.opts.failRate) {
      throw new GatewayError(`vehicle did not answer ${command}`, 'unreachable', command);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
