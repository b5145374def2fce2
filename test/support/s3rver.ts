/**
 * A real S3 protocol endpoint on loopback for the store contract tests: s3rver in a child process on
 * 127.0.0.1 with an ephemeral port and its own temp directory, one bucket created.
 *
 *   const s3 = await startS3rver();   // { endpoint, bucket, credentials, close }
 *
 * Why a child process: s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3
 * only offers with `--openssl-legacy-provider` (without it every truncated listing is a 500).
 *
 * Why a sorted listing: s3rver returns keys in directory-walk order and loses keys across pages; the
 * child lists in S3's binary key order.
 *
 * Why a lock: s3rver's filesystem store rewrites an object in place and its metadata in separate
 * files, so a GET during a PUT can return a torn object, which real S3 never does (a PUT is atomic).
 * The child serialises, per object, whole GET/HEAD responses against the requests that replace an
 * object (PUT without partNumber, POST completing a multipart upload, DELETE), which gives s3rver the
 * read-your-whole-version semantics of S3. Part uploads, the slow part of a big write, stay
 * concurrent. Our client code is what the contract tests exercise, against S3's semantics.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { ROOT } from '../../lib/core/paths.js';

const CHILD = String.raw`
const S3rver = require('s3rver');
const [directory, bucket, silent] = process.argv.slice(1);

// writer-preferring read/write lock per object path
const locks = new Map();
function lockFor(path) {
  let l = locks.get(path);
  if (!l) locks.set(path, (l = { readers: 0, writer: false, waitingWriters: 0, queue: [] }));
  return l;
}
function wake(path, l) {
  const q = l.queue;
  l.queue = [];
  for (const fn of q) fn();
  if (!l.readers && !l.writer && !l.waitingWriters && !l.queue.length) locks.delete(path);
}
async function acquire(path, write) {
  const l = lockFor(path);
  if (write) {
    l.waitingWriters++;
    while (l.writer || l.readers) await new Promise((r) => l.queue.push(r));
    l.waitingWriters--;
    l.writer = true;
  } else {
    while (l.writer || l.waitingWriters) await new Promise((r) => l.queue.push(r));
    l.readers++;
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (write) l.writer = false;
    else l.readers--;
    wake(path, l);
  };
}

// s3rver lists in directory-walk order and prunes folders by string order of encoded paths, so
// pages skip keys; S3 lists in UTF-8 binary key order. List everything, then sort and page.
const FilesystemStore = require('s3rver/lib/stores/filesystem');
const listObjects = FilesystemStore.prototype.listObjects;
FilesystemStore.prototype.listObjects = async function (bucketName, options) {
  if (options.delimiter) return listObjects.call(this, bucketName, options);
  const all = await listObjects.call(this, bucketName, { prefix: options.prefix });
  const startAfter = options.startAfter || '';
  const sorted = all.objects
    .filter((o) => o.key > startAfter)
    .sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
  const max = options.maxKeys === undefined ? Infinity : options.maxKeys;
  return { objects: sorted.slice(0, max), commonPrefixes: [], isTruncated: sorted.length > max };
};

const server = new S3rver({ address: '127.0.0.1', port: 0, silent: silent === '1', directory, configureBuckets: [{ name: bucket }] });
server.middleware.unshift(async (ctx, next) => {
  const path = ctx.path;
  const objectPath = path.split('/').filter(Boolean).length >= 2;
  const q = ctx.query;
  const read = (ctx.method === 'GET' || ctx.method === 'HEAD') && !('uploadId' in q);
  const write = (ctx.method === 'PUT' && !('partNumber' in q)) || (ctx.method === 'POST' && 'uploadId' in q) || ctx.method === 'DELETE';
  if (!objectPath || (!read && !write)) return next();
  const release = await acquire(path, write);
  ctx.res.once('close', release);
  ctx.res.once('finish', release);
  try {
    await next();
  } catch (err) {
    release();
    throw err;
  }
});
server.run().then((addr) => process.send({ port: addr.port }));
process.on('disconnect', () => process.exit(0));
`;

export interface S3rverHandle {
  endpoint: string;
  bucket: string;
  /** s3rver accepts these; it does not verify SigV4 signatures, only the access key id */
  credentials: { accessKeyId: string; secretAccessKey: string };
  close(): Promise<void>;
}

export async function startS3rver(bucket = 'test-bucket'): Promise<S3rverHandle> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-'));
  const child: ChildProcess = spawn(
    process.execPath,
    ['--openssl-legacy-provider', '-e', CHILD, directory, bucket, process.env.S3RVER_LOG === '1' ? '0' : '1'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  // never leave the server behind, even when a test run aborts
  const kill = () => child.kill();
  process.once('exit', kill);
  const [msg] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`s3rver exited with code ${code}`);
    }),
  ])) as [{ port: number }];
  return {
    endpoint: `http://127.0.0.1:${msg.port}`,
    bucket,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    async close() {
      process.removeListener('exit', kill);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill();
        await exited;
      }
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
