/**
 * A streaming JSON writer for feed envelopes: the head members, then one array of records pulled
 * from an async iterable (so a cursor is read only as fast as the consumer writes), then the tail
 * members. Memory stays at one chunk whatever the number of records.
 *
 *   MDS 2.0 trips:  jsonEnvelope({ version: '2.0.0', last_updated: { last_updated: ms }, ttl: { ttl: 0 } }, 'trips', records)
 *   MDS 2.0 events: jsonEnvelope({ version: '2.0.0', last_updated: …, ttl: … }, 'events', records, { links: {} })
 *   legacy:         jsonEnvelope({ version: '1.2.0' }, 'data.status_changes', records)  → {"version":…,"data":{"status_changes":[…]}}
 *   insurance:      jsonEnvelope({ last_updated: ms, version: '2.0.0' }, 'trips', records)
 */
import { Readable } from 'node:stream';

const CHUNK = 64 * 1024;

function members(o: object): string {
  const s = JSON.stringify(o);
  return s.length > 2 ? s.slice(1, -1) : '';
}

/**
 * The envelope as the text before the first record and the text after the last one (records go
 * between, comma-separated): what jsonEnvelope writes, for writers that place the records themselves.
 */
export function envelopeParts(head: object, arrayKey: string, tail: object = {}): { open: string; close: string } {
  const path = arrayKey.split('.');
  const headMembers = members(head);
  const tailMembers = members(tail);
  let open = '{' + (headMembers ? headMembers + ',' : '');
  for (let i = 0; i < path.length; i++) open += JSON.stringify(path[i]) + ':' + (i === path.length - 1 ? '[' : '{');
  const close = ']' + '}'.repeat(path.length - 1) + (tailMembers ? ',' + tailMembers : '') + '}';
  return { open, close };
}

/**
 * `arrayKey` may be a dotted path (`data.trips`): the array is then nested in objects of those keys.
 * Records that are `undefined` are skipped (mappers return undefined for "no equivalent record"); a
 * string is JSON text already (built in Postgres: shape.ts), one record or several separated by
 * commas, written as is.
 */
export function jsonEnvelope(
  head: object,
  arrayKey: string,
  records: AsyncIterable<object | string | undefined> | Iterable<object | string | undefined>,
  tail: object = {},
): Readable {
  const { open, close } = envelopeParts(head, arrayKey, tail);

  async function* chunks(): AsyncGenerator<Buffer> {
    let buf = open;
    let first = true;
    for await (const r of records as AsyncIterable<object | string | undefined>) {
      if (r === undefined) continue;
      buf += (first ? '' : ',') + (typeof r === 'string' ? r : JSON.stringify(r));
      first = false;
      if (buf.length >= CHUNK) {
        yield Buffer.from(buf);
        buf = '';
      }
    }
    yield Buffer.from(buf + close);
  }
  return Readable.from(chunks(), { objectMode: false, highWaterMark: CHUNK });
}

/** The MDS 2.0 head of trips / events / vehicle status: version, last_updated and ttl objects. */
export function mds20Head(lastUpdatedMs: number, ttlMs = 0): { version: '2.0.0'; last_updated: { last_updated: number }; ttl: { ttl: number } } {
  return { version: '2.0.0', last_updated: { last_updated: lastUpdatedMs }, ttl: { ttl: ttlMs } };
}

/** The insurance head: last_updated as a plain integer of milliseconds. */
export function insuranceHead(lastUpdatedMs: number): { last_updated: number; version: '2.0.0' } {
  return { last_updated: lastUpdatedMs, version: '2.0.0' };
}
