/**
 * One log line per server error: a family's error renderer records the fault on the request
 * (`recordFault`) instead of logging it, and the request's access line (api/middleware/
 * request-envelope.ts) goes out at error level carrying it, so a 5xx is one line with its cause, its
 * request id, method, URL, status and duration, never two lines to correlate.
 */
import type Koa from 'koa';

export interface Fault {
  err: unknown;
  [field: string]: unknown;
}

/** Marks the request as failed by `err` (with extra fields for the line, e.g. the family's code). */
export function recordFault(ctx: Koa.Context, err: unknown, fields: Record<string, unknown> = {}): void {
  ctx.state.fault = { ...fields, err } satisfies Fault;
}

/** The fault recorded on the request, if any. */
export const faultOf = (ctx: Koa.Context): Fault | undefined => ctx.state.fault as Fault | undefined;
