/**
 * Waits that hold no work of this process: a vehicle answering a command over cellular (0.5–3 s,
 * lib/domain/rentals/engine.ts). A request in such a wait holds no database connection and no
 * transaction, and it should not hold its admission slot either (api/kit/admission.ts): the slot
 * goes to other requests meanwhile and comes back, ahead of any waiter, when the wait ends. Without an
 * admission scope (the publisher, the ops CLI, a test calling the engine) the wait is just awaited.
 *
 * The scope travels with the request's async context (AsyncLocalStorage), so the engine needs no
 * parameter for it and the layers stay as they are: core offers the scope, the API's admission
 * opens it, the domain marks its waits.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** How a scope runs a wait outside itself: gives up its slot, awaits `wait`, takes a slot back. */
export type StepOut = <T>(wait: () => Promise<T>) => Promise<T>;

const scope = new AsyncLocalStorage<StepOut>();

/** Runs `work` in a scope whose waits (`awaitOutside`) go through `stepOut`. */
export function withStepOut<T>(stepOut: StepOut, work: () => Promise<T>): Promise<T> {
  return scope.run(stepOut, work);
}

/** Awaits `wait` outside the caller's admission slot, when it has one. */
export function awaitOutside<T>(wait: () => Promise<T>): Promise<T> {
  const stepOut = scope.getStore();
  return stepOut ? stepOut(wait) : wait();
}
