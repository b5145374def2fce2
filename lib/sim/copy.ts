/**
 * Bulk rows for COPY … FROM STDIN (text format): lines gathered into ~1 MB chunks, then streamed
 * through pg-copy-streams on the transaction's connection. Values here never contain tabs,
 * newlines or backslashes (ids, numbers, ISO times, enum words), so no escaping is needed.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { from as copyFrom } from 'pg-copy-streams';
import type pg from 'pg';

export type Cell = string | number | boolean | null | undefined | Date;

const CHUNK = 1 << 20;

export class CopyBuffer {
  private chunks: string[] = [];
  private current = '';
  rows = 0;

  constructor(readonly table: string, readonly columns: readonly string[]) {}

  push(cells: Cell[]): void {
    let line = '';
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i];
      if (i > 0) line += '\t';
      line += c === null || c === undefined ? '\\N' : c instanceof Date ? c.toISOString() : typeof c === 'boolean' ? (c ? 't' : 'f') : String(c);
    }
    this.current += line + '\n';
    this.rows++;
    if (this.current.length >= CHUNK) {
      this.chunks.push(this.current);
      this.current = '';
    }
  }

  async copyTo(client: pg.PoolClient): Promise<number> {
    if (this.rows === 0) return 0;
    if (this.current) {
      this.chunks.push(this.current);
      this.current = '';
    }
    const stream = client.query(copyFrom(`COPY ${this.table} (${this.columns.join(', ')}) FROM STDIN`));
    await pipeline(Readable.from(this.chunks), stream);
    this.chunks = [];
    return this.rows;
  }
}

/** EWKT of a point, accepted by COPY into a geometry(Point, 4326) column. */
export function point(lng: number, lat: number): string {
  return `SRID=4326;POINT(${lng} ${lat})`;
}

/** A Postgres array literal of plain words / uuids. */
export function arrayLiteral(items: readonly string[]): string {
  return `{${items.join(',')}}`;
}
