/**
 * Path and query parameters of the feeds, validated before they reach a query or become part of an
 * object key. Every parser throws a 400 FeedError naming the parameter.
 */
import { parseHour } from '../../lib/feeds/hours.js';
import { TIME_HOUR_SCHEMA } from '../../schemas/common.js';
import { badParam } from './errors.js';
import { isUuid } from '../../lib/core/uuid.js';
import { isZoneId, ZONE_ID_SCHEMA } from '../../lib/domain/zones.js';
import type Koa from 'koa';

const MS = /^\d{1,15}$/;

/**
 * A path parameter of the matched route, as @koa/router decoded it; undefined when the route has no
 * such segment. The router sets `ctx.params`, which Koa's own Context type leaves as `any`.
 */
export const pathParam = (ctx: Koa.Context, name: string): string | undefined => (ctx.params as Record<string, string | undefined>)[name];

export function zoneParam(raw: string | undefined): string {
  if (!isZoneId(raw)) throw badParam('invalid zone id', `zoneID must match ${ZONE_ID_SCHEMA.pattern}`);
  return raw;
}

export function uuidParam(name: string, raw: string | undefined): string {
  if (!raw || !isUuid(raw)) throw badParam(`invalid ${name}`, `${name} must be a UUID`);
  return raw.toLowerCase();
}

/** A UTC hour. `key` is the object-key form (YYYY-MM-DDTHH), `sql` the `timestamp` literal. */
export interface Hour {
  start: Date;
  key: string;
  sql: string;
}

function hourOf(start: Date): Hour {
  const iso = start.toISOString();
  return { start, key: iso.slice(0, 13), sql: `${iso.slice(0, 13)}:00:00` };
}

/** Parses a time-hour `YYYY-MM-DDTHH` (ISO 8601 extended, UTC, hour 00–23, a real calendar date). */
export function timeHourParam(name: string, raw: unknown): Hour {
  if (typeof raw !== 'string' || raw === '') throw badParam(`missing ${name}`, `${name} is required (YYYY-MM-DDTHH, UTC)`);
  // parseHour rejects a malformed value, and what Date.UTC would roll over (2026-02-30, hour 24) instead of guessing
  const start = parseHour(raw);
  if (!start) {
    const shaped = new RegExp(TIME_HOUR_SCHEMA.pattern).test(raw);
    throw badParam(
      `invalid ${name}`,
      shaped ? `${name} is not a valid UTC hour: ${raw}` : `${name} must be YYYY-MM-DDTHH (UTC hour), got ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  if (start.getUTCFullYear() < 1970) throw badParam(`invalid ${name}`, `${name} is not a valid UTC hour: ${raw}`);
  return hourOf(start);
}

/** Parses integer milliseconds since the epoch. */
function msParam(name: string, raw: unknown): Date {
  if (typeof raw !== 'string' || raw === '') throw badParam(`missing ${name}`, `${name} is required (integer milliseconds since the Unix epoch)`);
  if (!MS.test(raw)) throw badParam(`invalid ${name}`, `${name} must be integer milliseconds since the Unix epoch`);
  const n = Number(raw);
  if (n > 8.64e15) throw badParam(`invalid ${name}`, `${name} is out of range`);
  return new Date(n);
}

/** A single query value: repeated parameters are a client error, not an array to guess from. */
export function single(query: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = query[name];
  if (Array.isArray(v)) throw badParam(`repeated ${name}`, `${name} must be given once`);
  return v;
}

const TWO_WEEKS_MS = 14 * 24 * 3600 * 1000;

/** The recent-events window: start < end, end − start ≤ two weeks, start at most two weeks back. */
export function recentWindow(query: Record<string, string | string[] | undefined>, now: Date): { start: Date; end: Date } {
  const start = msParam('start_time', single(query, 'start_time'));
  const end = msParam('end_time', single(query, 'end_time'));
  if (start.getTime() >= end.getTime()) throw badParam('invalid time window', 'start_time must be before end_time');
  if (end.getTime() - start.getTime() > TWO_WEEKS_MS) throw badParam('invalid time window', 'the window must not be longer than two weeks');
  if (start.getTime() < now.getTime() - TWO_WEEKS_MS) throw badParam('invalid time window', 'start_time must be at most two weeks back from now');
  return { start, end };
}
