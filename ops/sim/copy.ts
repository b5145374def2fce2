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
  private lines: string[] = [];
  private currentChars = 0;
  rows = 0;
  /** characters gathered and not yet copied: what this buffer holds in memory */
  pending = 0;

  constructor(
    readonly table: string,
    readonly columns: readonly string[],
  ) {}

  push(cells: Cell[]): void {
    // joined, not concatenated cell by cell: a `+=` chain leaves a tree of small strings per line
    // (several times the text's size until it is flattened); join gives one flat string
    const line = cells
      .map((c) => (c === null || c === undefined ? '\\N' : c instanceof Date ? c.toISOString() : typeof c === 'boolean' ? (c ? 't' : 'f') : String(c)))
      .join('\t');
    this.lines.push(line);
    this.currentChars += line.length + 1;
    this.pending += line.length + 1;
    this.rows++;
    if (this.currentChars >= CHUNK) this.seal();
  }

  /** Lines gathered so far become one flat chunk. */
  private seal(): void {
    if (!this.lines.length) return;
    this.chunks.push(this.lines.join('\n') + '\n');
    this.lines = [];
    this.currentChars = 0;
  }

  /**
   * Copies what is gathered and empties the buffer; may be called repeatedly (the simulator flushes
   * as it goes, so memory holds one batch, not the whole history). Returns the rows copied.
   */
  async copyTo(client: pg.PoolClient): Promise<number> {
    this.seal();
    if (!this.chunks.length) return 0;
    const rows = this.rows - this.copied;
    const stream = client.query(copyFrom(`COPY ${this.table} (${this.columns.join(', ')}) FROM STDIN`));
    await pipeline(Readable.from(this.chunks), stream);
    this.chunks = [];
    this.pending = 0;
    this.copied = this.rows;
    return rows;
  }

  private copied = 0;
}

/** EWKT of a point, accepted by COPY into a geometry(Point, 4326) column. */
export function point(lng: number, lat: number): string {
  return `SRID=4326;POINT(${lng} ${lat})`;
}

/** A Postgres array literal of plain words / uuids. */
export function arrayLiteral(items: readonly string[]): string {
  return `{${items.join(',')}}`;
}
