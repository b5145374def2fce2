/**
 * Filesystem object store. Each object is one file `<root>/<key>~obj` holding the body followed by a
 * JSON trailer with its metadata and an 8-byte footer (magic + trailer length). Data and metadata
 * are one file, written to a temp file in the same directory, fsynced and renamed over the old one:
 * a reader holds an open descriptor on one inode, so it sees the old or the new object whole, never
 * a mix. The trailer (not a header) lets a stream of unknown length be written in one pass with its
 * sha256 computed on the way.
 *
 * The `~obj` suffix cannot occur in a key, so object files and directories never collide (`a/b` and
 * `a/b/c` can both exist), and temp files (`.name.random.tmp`) are never mistaken for objects.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { assertKey, StoreError, type ObjectMeta, type ObjectStore, type PutOptions, type StoredObject } from './types.js';
import { assertPrefix, assertPutOptions } from './types.js';

const SUFFIX = '~obj';
const MAGIC = 0x4f424a31; // "OBJ1"
const FOOTER = 8;
const MAX_TRAILER = 64 * 1024;
/** one segment of a valid key (see assertKey) */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._=-]*$/;

interface Trailer {
  contentType: string;
  contentEncoding?: string;
  etag: string;
  size: number;
  lastModified: string;
  metadata: Record<string, string>;
}

function isCode(err: unknown, ...codes: string[]): boolean {
  return codes.includes((err as NodeJS.ErrnoException)?.code ?? '');
}

function wrap(err: unknown, what: string): StoreError {
  if (err instanceof StoreError) return err;
  return new StoreError(`${what}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

export class FsStore implements ObjectStore {
  /**
   * Folders this store has made or found: a put into one opens its temp file straight away (a
   * publisher writes thousands of objects a minute into the same few hundred folders, and a
   * recursive mkdir is two system calls through the thread pool each time). A folder removed behind
   * the store's back costs one failed open, then it is made again.
   */
  private readonly folders = new Set<string>();

  private constructor(readonly root: string) {}

  static async open(root: string): Promise<FsStore> {
    try {
      await mkdir(root, { recursive: true });
    } catch (err) {
      throw wrap(err, `cannot create store root ${root}`);
    }
    return new FsStore(root);
  }

  private path(key: string): string {
    return join(this.root, key + SUFFIX);
  }

  async put(key: string, body: Buffer | Readable, opts: PutOptions): Promise<ObjectMeta> {
    assertKey(key);
    assertPutOptions(opts);
    const target = this.path(key);
    const dir = dirname(target);
    const tmp = join(dir, `.${key.slice(key.lastIndexOf('/') + 1)}.${randomBytes(6).toString('hex')}.tmp`);
    let fh: FileHandle | undefined;
    try {
      fh = await this.openTemp(dir, tmp);
      const hash = createHash('sha256');
      let size = 0;
      const write = async (chunk: Buffer) => {
        hash.update(chunk);
        size += chunk.length;
        // a partial write is possible on some filesystems: loop until the chunk is out
        for (let off = 0; off < chunk.length;) off += (await fh!.write(chunk, off)).bytesWritten;
      };
      // a Buffer goes out with the trailer in one write (below); a stream chunk by chunk
      if (Buffer.isBuffer(body)) {
        hash.update(body);
        size = body.length;
      } else for await (const chunk of body) await write(toBuffer(chunk));
      // seconds precision, as S3 and HTTP Last-Modified have
      const lastModified = new Date(Math.floor(Date.now() / 1000) * 1000);
      const trailer: Trailer = {
        contentType: opts.contentType,
        ...(opts.contentEncoding ? { contentEncoding: opts.contentEncoding } : {}),
        etag: `"${hash.digest('hex')}"`,
        size,
        lastModified: lastModified.toISOString(),
        metadata: { ...(opts.metadata ?? {}) },
      };
      const json = Buffer.from(JSON.stringify(trailer));
      const footer = Buffer.alloc(FOOTER);
      footer.writeUInt32BE(MAGIC, 0);
      footer.writeUInt32BE(json.length, 4);
      await writeAll(fh, Buffer.isBuffer(body) ? [body, json, footer] : [json, footer]);
      await fh.sync();
      await fh.close();
      fh = undefined;
      await rename(tmp, target);
      await syncDir(dir);
      return toMeta(key, trailer);
    } catch (err) {
      await fh?.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw wrap(err, `put ${key}`);
    }
  }

  /** The new temp file `tmp` in `dir`, making the folder first when this store has not seen it. */
  private async openTemp(dir: string, tmp: string): Promise<FileHandle> {
    if (this.folders.has(dir)) {
      try {
        return await open(tmp, 'wx', 0o644);
      } catch (err) {
        if (!isCode(err, 'ENOENT')) throw err;
        this.folders.delete(dir);
      }
    }
    await mkdir(dir, { recursive: true });
    const fh = await open(tmp, 'wx', 0o644);
    this.folders.add(dir);
    return fh;
  }

  async get(key: string): Promise<StoredObject | undefined> {
    assertKey(key);
    const fh = await this.openObject(key);
    if (!fh) return undefined;
    try {
      const trailer = await readTrailer(fh, key);
      const meta = toMeta(key, trailer);
      if (trailer.size === 0) {
        await fh.close();
        return { meta, body: Readable.from([]) };
      }
      // the stream owns the descriptor from here and closes it at end, error or destroy
      const body = fh.createReadStream({ start: 0, end: trailer.size - 1, autoClose: true });
      return { meta, body };
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw wrap(err, `get ${key}`);
    }
  }

  async head(key: string): Promise<ObjectMeta | undefined> {
    assertKey(key);
    const fh = await this.openObject(key);
    if (!fh) return undefined;
    try {
      return toMeta(key, await readTrailer(fh, key));
    } catch (err) {
      throw wrap(err, `head ${key}`);
    } finally {
      await fh.close().catch(() => undefined);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    assertPrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const base = slash < 0 ? '' : prefix.slice(0, slash + 1);
    for await (const key of this.walk(base)) {
      if (!key.startsWith(prefix)) continue;
      const meta = await this.head(key);
      if (meta) yield meta; // deleted since the directory was read: skip
    }
  }

  /**
   * Keys under the folder `base` ('' or ending with '/') in key order. Sorting each directory's
   * entries by `name` for objects and `name/` for folders gives global key order, because every key
   * of a folder starts with `name/`.
   */
  private async *walk(base: string): AsyncGenerator<string> {
    let entries;
    try {
      entries = await readdir(join(this.root, base), { withFileTypes: true });
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return;
      throw wrap(err, `list ${base}`);
    }
    const items: { sortKey: string; dir: boolean }[] = [];
    for (const e of entries) {
      // temp files start with '.'; anything else that no valid key produces (lost+found …) is not ours
      if (e.isDirectory() && SEGMENT.test(e.name)) items.push({ sortKey: `${base}${e.name}/`, dir: true });
      else if (e.isFile() && e.name.endsWith(SUFFIX) && SEGMENT.test(e.name.slice(0, -SUFFIX.length))) {
        items.push({ sortKey: base + e.name.slice(0, -SUFFIX.length), dir: false });
      }
    }
    items.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
    for (const it of items) {
      if (it.dir) yield* this.walk(it.sortKey);
      else yield it.sortKey;
    }
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    try {
      await unlink(this.path(key));
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR')) return;
      throw wrap(err, `delete ${key}`);
    }
  }

  async check(): Promise<void> {
    const probe = join(this.root, `.check.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const fh = await open(probe, 'wx');
      try {
        await fh.write('ok');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await unlink(probe);
    } catch (err) {
      throw wrap(err, 'store root is not writable');
    }
  }

  async close(): Promise<void> {}

  private async openObject(key: string): Promise<FileHandle | undefined> {
    try {
      return await open(this.path(key), 'r');
    } catch (err) {
      if (isCode(err, 'ENOENT', 'ENOTDIR', 'EISDIR')) return undefined;
      throw wrap(err, `open ${key}`);
    }
  }
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk);
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new StoreError('put: body stream must yield bytes');
}

/** Writes `bufs` in order, in one system call when the filesystem takes them whole. */
async function writeAll(fh: FileHandle, bufs: Buffer[]): Promise<void> {
  let { bytesWritten } = await fh.writev(bufs);
  // a partial write is possible on some filesystems: the rest one buffer at a time
  for (const buf of bufs) {
    const done = Math.min(bytesWritten, buf.length);
    bytesWritten -= done;
    for (let off = done; off < buf.length;) off += (await fh.write(buf, off)).bytesWritten;
  }
}

async function readExactly(fh: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let off = 0;
  while (off < length) {
    const { bytesRead } = await fh.read(buf, off, length - off, position + off);
    if (bytesRead === 0) break;
    off += bytesRead;
  }
  if (off !== length) throw new StoreError('short read');
  return buf;
}

async function readTrailer(fh: FileHandle, key: string): Promise<Trailer> {
  const { size } = await fh.stat();
  if (size < FOOTER) throw new StoreError(`corrupt object ${key}: too short`);
  const footer = await readExactly(fh, FOOTER, size - FOOTER);
  const len = footer.readUInt32BE(4);
  if (footer.readUInt32BE(0) !== MAGIC || len > MAX_TRAILER || len > size - FOOTER) throw new StoreError(`corrupt object ${key}: bad footer`);
  const trailer = JSON.parse((await readExactly(fh, len, size - FOOTER - len)).toString('utf8')) as Trailer;
  if (trailer.size !== size - FOOTER - len) throw new StoreError(`corrupt object ${key}: size mismatch`);
  return trailer;
}

function toMeta(key: string, t: Trailer): ObjectMeta {
  return {
    key,
    size: t.size,
    contentType: t.contentType,
    ...(t.contentEncoding ? { contentEncoding: t.contentEncoding } : {}),
    etag: t.etag,
    lastModified: new Date(t.lastModified),
    metadata: { ...t.metadata },
  };
}

/** Makes the rename durable; not every filesystem allows fsync on a directory. */
async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // best effort
  } finally {
    await fh?.close().catch(() => undefined);
  }
}
