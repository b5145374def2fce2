/**
 * One contract, two backends: the same suite runs against the filesystem store and against the S3
 * store talking to a real S3 protocol server (s3rver on loopback).
 */
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { openStore } from '../lib/core/store/index.js';
import { S3Store } from '../lib/core/store/s3.js';
import { StoreError, type ObjectMeta, type ObjectStore } from '../lib/core/store/types.js';
import { testConfig } from '../lib/core/config.js';
import { ROOT } from '../lib/core/paths.js';
import { startS3rver, type S3rverHandle } from './support/s3rver.js';

async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A stream that yields `buf` in `chunk`-sized pieces with a pause between them: a slow writer. */
function trickle(buf: Buffer, chunk: number, pauseMs: number): Readable {
  return Readable.from(
    (async function* () {
      for (let i = 0; i < buf.length; i += chunk) {
        yield buf.subarray(i, i + chunk);
        await sleep(pauseMs);
      }
    })(),
  );
}

async function collect(it: AsyncIterable<ObjectMeta>): Promise<ObjectMeta[]> {
  const out: ObjectMeta[] = [];
  for await (const m of it) out.push(m);
  return out;
}

async function rejects(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

interface Backend {
  store: ObjectStore;
  /** backend-specific check that no partial/temp object is visible after a failed put */
  leftovers?: () => string[];
}

function contract(name: string, setup: () => Promise<Backend>, teardown: () => void | Promise<void>) {
  describe(`object store contract: ${name}`, function () {
    this.timeout(60000);
    let b: Backend;
    let store: ObjectStore;
    before(async () => {
      b = await setup();
      store = b.store;
    });
    after(teardown);

    it('puts and gets a buffer with its metadata', async () => {
      const body = Buffer.from('{"hello":"world"}');
      const meta = await store.put('t/buffer.json', body, { contentType: 'application/json', metadata: { sha256: sha(body), 'record-count': '1' } });
      expect(meta).to.include({ key: 't/buffer.json', size: body.length, contentType: 'application/json' });
      expect(meta.etag).to.match(/^"[^"]+"$/);
      expect(meta.lastModified).to.be.instanceOf(Date);
      expect(Math.abs(meta.lastModified.getTime() - Date.now())).to.be.lessThan(10 * 60_000);
      expect(meta.metadata).to.deep.equal({ sha256: sha(body), 'record-count': '1' });
      const got = await store.get('t/buffer.json');
      expect(got).to.not.equal(undefined);
      expect((await readAll(got!.body)).equals(body)).to.equal(true);
      expect(got!.meta).to.deep.equal(meta);
      expect(await store.head('t/buffer.json')).to.deep.equal(meta);
    });

    it('puts an empty object', async () => {
      const meta = await store.put('t/empty', Buffer.alloc(0), { contentType: 'text/plain' });
      expect(meta.size).to.equal(0);
      const got = await store.get('t/empty');
      expect((await readAll(got!.body)).length).to.equal(0);
      await store.put('t/empty-stream', Readable.from([]), { contentType: 'text/plain' });
      expect((await store.head('t/empty-stream'))?.size).to.equal(0);
    });

    it('puts a multi-MB stream of unknown length', async () => {
      const body = randomBytes(12 * 1024 * 1024 + 123);
      const meta = await store.put('t/big.bin', trickle(body, 256 * 1024, 0), { contentType: 'application/octet-stream', metadata: { sha256: sha(body) } });
      expect(meta.size).to.equal(body.length);
      const got = await store.get('t/big.bin');
      expect(got!.meta.size).to.equal(body.length);
      expect(got!.meta.etag).to.equal(meta.etag);
      expect(got!.meta.metadata.sha256).to.equal(sha(body));
      expect(sha(await readAll(got!.body))).to.equal(sha(body));
    });

    it('keeps the bytes and content-encoding of gzip objects as stored', async () => {
      const json = JSON.stringify({ data: { trips: Array.from({ length: 100 }, (_, i) => ({ i })) } });
      const gz = gzipSync(json);
      await store.put('t/hour.json.gz', gz, { contentType: 'application/json', contentEncoding: 'gzip' });
      const got = await store.get('t/hour.json.gz');
      expect(got!.meta.contentEncoding).to.equal('gzip');
      expect(got!.meta.contentType).to.equal('application/json');
      const raw = await readAll(got!.body);
      expect(raw.equals(gz)).to.equal(true);
      expect(gunzipSync(raw).toString()).to.equal(json);
      const plain = await store.head('t/buffer.json');
      expect(plain?.contentEncoding).to.equal(undefined);
    });

    it('answers undefined for a missing object', async () => {
      expect(await store.get('t/missing')).to.equal(undefined);
      expect(await store.head('t/missing')).to.equal(undefined);
      // a "folder" that exists because deeper keys exist is not an object
      expect(await store.get('t')).to.equal(undefined);
      expect(await store.head('t')).to.equal(undefined);
    });

    it('overwrites an object whole, metadata included', async () => {
      const v1 = await store.put('t/over', Buffer.from('one'), { contentType: 'text/plain', contentEncoding: 'identity', metadata: { a: '1', b: '2' } });
      const v2 = await store.put('t/over', Buffer.from('second'), { contentType: 'application/json', metadata: { c: '3' } });
      expect(v2.etag).to.not.equal(v1.etag);
      const got = await store.get('t/over');
      expect((await readAll(got!.body)).toString()).to.equal('second');
      expect(got!.meta).to.include({ size: 6, contentType: 'application/json', etag: v2.etag });
      expect(got!.meta.contentEncoding).to.equal(undefined);
      expect(got!.meta.metadata).to.deep.equal({ c: '3' });
    });

    it('deletes, and deleting a missing object is not an error', async () => {
      await store.put('t/del', Buffer.from('x'), { contentType: 'text/plain' });
      await store.delete('t/del');
      expect(await store.get('t/del')).to.equal(undefined);
      await store.delete('t/del');
      await store.delete('t/never/existed');
    });

    it('lists by prefix in key order', async () => {
      const keys = ['l/b', 'l/a/b/c', 'l/a-c', 'l/a', 'l/a.b', 'l/a/b', 'l/A', 'l/a/a', 'l/0', 'lx/other', 'l/a_z'];
      for (const k of keys) await store.put(k, Buffer.from(k), { contentType: 'text/plain', metadata: { k } });
      const sorted = (ks: string[]) => [...ks].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      const all = await collect(store.list('l/'));
      expect(all.map((m) => m.key)).to.deep.equal(sorted(keys.filter((k) => k.startsWith('l/'))));
      expect(all.every((m) => m.metadata.k === m.key && m.size === m.key.length && m.contentType === 'text/plain')).to.equal(true);
      expect((await collect(store.list('l/a'))).map((m) => m.key)).to.deep.equal(sorted(['l/a', 'l/a-c', 'l/a.b', 'l/a/b', 'l/a/b/c', 'l/a/a', 'l/a_z']));
      expect((await collect(store.list('l/a/'))).map((m) => m.key)).to.deep.equal(['l/a/a', 'l/a/b', 'l/a/b/c']);
      expect(await collect(store.list('l'))).to.have.length(keys.length);
      expect(await collect(store.list('nothing/here/'))).to.deep.equal([]);
      const everything = (await collect(store.list(''))).map((m) => m.key);
      expect(everything).to.deep.equal(sorted(everything));
      expect(everything).to.include.members(keys);
    });

    it('refuses invalid keys and prefixes', async () => {
      const bad = ['../x', '/abs', 'a//b', 'a/../b', 'a/./b', 'a b', 'a?b', 'a\\b', 'ü', '', 'a/', '.hidden', 'a/.x', 'a~obj', 'x'.repeat(600)];
      for (const k of bad) {
        expect(await rejects(store.put(k, Buffer.from('x'), { contentType: 'text/plain' })), k).to.be.instanceOf(StoreError);
        expect(await rejects(store.get(k)), k).to.be.instanceOf(StoreError);
        expect(await rejects(store.head(k)), k).to.be.instanceOf(StoreError);
        expect(await rejects(store.delete(k)), k).to.be.instanceOf(StoreError);
      }
      for (const p of ['../', '/abs', 'a//', 'a b']) {
        expect(await rejects(collect(store.list(p))), p).to.be.instanceOf(StoreError);
      }
    });

    it('refuses metadata that S3 could not carry', async () => {
      const bad: Record<string, string>[] = [{ Upper: 'x' }, { 'a b': 'x' }, { ok: 'line\nbreak' }, { ok: 'ü' }, { big: 'x'.repeat(3000) }];
      for (const metadata of bad) {
        expect(await rejects(store.put('t/meta', Buffer.from('x'), { contentType: 'text/plain', metadata }))).to.be.instanceOf(StoreError);
      }
      expect(await store.head('t/meta')).to.equal(undefined);
    });

    it('a failed stream leaves the old object and nothing partial', async () => {
      await store.put('t/fail', Buffer.from('old'), { contentType: 'text/plain' });
      const failing = Readable.from(
        (async function* () {
          yield randomBytes(1024);
          await sleep(5);
          throw new Error('source broke');
        })(),
      );
      expect(await rejects(store.put('t/fail', failing, { contentType: 'text/plain' }))).to.be.instanceOf(StoreError);
      const got = await store.get('t/fail');
      expect((await readAll(got!.body)).toString()).to.equal('old');
      expect(b.leftovers?.() ?? []).to.deep.equal([]);
    });

    it('readers see the old or the new object whole during a slow rewrite', async () => {
      const oldBody = randomBytes(2 * 1024 * 1024);
      const newBody = randomBytes(6 * 1024 * 1024 + 17); // above one S3 part: a multipart upload
      const versions = new Map([
        [sha(oldBody), 'old'],
        [sha(newBody), 'new'],
      ]);
      await store.put('t/atomic', oldBody, { contentType: 'application/octet-stream', metadata: { v: 'old' } });
      let done = false;
      const writer = store.put('t/atomic', trickle(newBody, 64 * 1024, 3), { contentType: 'application/octet-stream', metadata: { v: 'new' } }).finally(() => {
        done = true;
      });
      const seen: string[] = [];
      const reader = async () => {
        let after = 0;
        while (!done || after++ < 3) {
          const got = await store.get('t/atomic');
          expect(got, 'object vanished during rewrite').to.not.equal(undefined);
          const body = await readAll(got!.body);
          const version = versions.get(sha(body));
          expect(version, `partial read of ${body.length} bytes`).to.not.equal(undefined);
          expect(got!.meta.metadata.v, 'metadata of the other version').to.equal(version);
          expect(got!.meta.size).to.equal(body.length);
          seen.push(version!);
        }
      };
      await Promise.all([writer, reader(), reader(), reader()]);
      expect(seen).to.include('old');
      expect(seen.at(-1)).to.equal('new');
      expect(sha(await readAll((await store.get('t/atomic'))!.body))).to.equal(sha(newBody));
    });

    it('concurrent writers of one key leave one of their versions whole', async () => {
      const bodies = Array.from({ length: 4 }, () => randomBytes(256 * 1024));
      await Promise.all(
        bodies.map((body, i) => store.put('t/race', trickle(body, 16 * 1024, 1), { contentType: 'application/octet-stream', metadata: { i: String(i) } })),
      );
      const got = await store.get('t/race');
      const body = await readAll(got!.body);
      const i = Number(got!.meta.metadata.i);
      expect(sha(body)).to.equal(sha(bodies[i]));
      expect(b.leftovers?.() ?? []).to.deep.equal([]);
    });

    it('check() passes on a working store', async () => {
      await store.check();
    });
  });
}

// ------------------------------------------------------------------------------------------------

let fsRoot: string;
contract(
  'filesystem',
  async () => {
    fsRoot = mkdtempSync(join(tmpdir(), 'store-contract-'));
    const store = await openStore(testConfig({ STORE_URL: `file://${fsRoot}` }));
    const leftovers = () => {
      const out: string[] = [];
      const walk = (dir: string) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          if (e.isDirectory()) walk(join(dir, e.name));
          else if (e.name.endsWith('.tmp')) out.push(join(dir, e.name));
        }
      };
      walk(fsRoot);
      return out;
    };
    return { store, leftovers };
  },
  () => rmSync(fsRoot, { recursive: true, force: true }),
);

let s3: S3rverHandle;
let s3store: ObjectStore;
contract(
  's3 (s3rver)',
  async () => {
    s3 = await startS3rver();
    // a small page size makes the suite walk several ListObjectsV2 pages
    s3store = await S3Store.open({
      bucket: s3.bucket,
      prefix: 'feeds',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: s3.credentials,
      listPageSize: 3,
    });
    return { store: s3store };
  },
  async () => {
    await s3store?.close();
    await s3?.close();
  },
);

describe('object store: backend specifics', function () {
  this.timeout(30000);

  it('filesystem: a relative file:// path resolves under the project root', async () => {
    const rel = `.data/store-test-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      const store = await openStore(testConfig({ STORE_URL: `file://${rel}` }));
      await store.put('a/b', Buffer.from('x'), { contentType: 'text/plain' });
      expect(existsSync(join(ROOT, rel, 'a'))).to.equal(true);
      expect((await store.head('a/b'))?.size).to.equal(1);
    } finally {
      rmSync(join(ROOT, rel), { recursive: true, force: true });
    }
  });

  it('filesystem: check() fails when the root is no longer a writable folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'store-root-'));
    try {
      const store = await openStore(testConfig({ STORE_URL: `file://${dir}/nested/root` }));
      await store.put('a/b', Buffer.from('x'), { contentType: 'text/plain' });
      await store.check();
      rmSync(join(dir, 'nested'), { recursive: true });
      writeFileSync(join(dir, 'nested'), 'not a folder');
      expect(await rejects(store.check())).to.be.instanceOf(StoreError);
      expect(await store.get('a/b')).to.equal(undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('filesystem: a folder removed behind the store is made again by the next put into it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'store-gone-'));
    try {
      const store = await openStore(testConfig({ STORE_URL: `file://${dir}` }));
      await store.put('a/b/c', Buffer.from('one'), { contentType: 'text/plain' });
      rmSync(join(dir, 'a'), { recursive: true });
      await store.put('a/b/c', Buffer.from('two'), { contentType: 'text/plain' });
      await store.put('a/b/d', Readable.from([Buffer.from('th'), Buffer.from('ree')]), { contentType: 'text/plain' });
      expect((await readAll((await store.get('a/b/c'))!.body)).toString()).to.equal('two');
      expect((await readAll((await store.get('a/b/d'))!.body)).toString()).to.equal('three');
      expect((await store.head('a/b/d'))?.size).to.equal(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('filesystem: temp files of an interrupted writer and foreign files are not objects', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'store-tmp-'));
    try {
      const store = await openStore(testConfig({ STORE_URL: `file://${dir}` }));
      await store.put('a/b', Buffer.from('x'), { contentType: 'text/plain' });
      writeFileSync(join(dir, 'a', '.c.123.tmp'), 'partial');
      mkdirSync(join(dir, 'lost+found'));
      writeFileSync(join(dir, 'lost+found', 'x~obj'), 'not ours');
      expect((await collect(store.list(''))).map((m) => m.key)).to.deep.equal(['a/b']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('s3', () => {
    let srv: S3rverHandle;
    before(async () => {
      srv = await startS3rver('other-bucket');
    });
    after(async () => srv?.close());

    it('openStore parses s3://bucket/prefix and takes credentials from the environment', async () => {
      const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
      process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
      try {
        const store = await openStore(testConfig({ STORE_URL: `s3://${srv.bucket}/some/prefix`, S3_ENDPOINT: srv.endpoint, S3_FORCE_PATH_STYLE: 'true' }));
        try {
          await store.check();
          await store.put('x/y.json', Buffer.from('{}'), { contentType: 'application/json' });
          expect((await collect(store.list(''))).map((m) => m.key)).to.deep.equal(['x/y.json']);
          // the prefix is where the object really is
          const root = await S3Store.open({
            bucket: srv.bucket,
            prefix: '',
            endpoint: srv.endpoint,
            region: 'us-east-1',
            forcePathStyle: true,
            credentials: srv.credentials,
          });
          expect(await root.head('some/prefix/x/y.json')).to.not.equal(undefined);
          await root.close();
        } finally {
          await store.close();
        }
      } finally {
        if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
        else process.env.AWS_ACCESS_KEY_ID = saved.id;
        if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
        else process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      }
    });

    it('turns S3 failures into StoreError without credentials in the message', async () => {
      const secret = 'very-secret-value-123';
      const bad = await S3Store.open({
        bucket: srv.bucket,
        prefix: '',
        endpoint: srv.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'UNKNOWNKEYID', secretAccessKey: secret },
      });
      const err = await rejects(bad.put('a', Buffer.from('x'), { contentType: 'text/plain' }));
      expect(err).to.be.instanceOf(StoreError);
      expect(err.message).to.match(/InvalidAccessKeyId/);
      expect(err.message).to.not.include(secret);
      expect(err.message).to.not.include('UNKNOWNKEYID');
      expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).to.not.include(secret);
      await bad.close();
      const missing = await S3Store.open({
        bucket: 'no-such-bucket',
        prefix: '',
        endpoint: srv.endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: srv.credentials,
      });
      expect(await rejects(missing.check())).to.be.instanceOf(StoreError);
      expect(await rejects(missing.get('a'))).to.be.instanceOf(StoreError);
      await missing.close();
    });
  });
});
