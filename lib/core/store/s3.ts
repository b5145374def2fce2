/**
 * S3 object store (AWS S3 or any S3-compatible server). A PUT is atomic by protocol: a GET returns
 * one whole version. Streams of unknown length go through the SDK's managed upload (multipart above
 * 5 MB, so memory stays bounded). Credentials come from the SDK's default chain (environment,
 * profile, instance role) unless given; they never appear in error messages.
 */
import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { assertKey, StoreError, type ObjectMeta, type ObjectStore, type PutOptions, type StoredObject } from './types.js';
import { assertPrefix, assertPutOptions } from './types.js';

export interface S3StoreOptions {
  bucket: string;
  /** folder inside the bucket, without leading or trailing slash; '' for the bucket root */
  prefix: string;
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** ListObjectsV2 page size (tests use a small one to exercise paging); default 1000 */
  listPageSize?: number;
}

const PART_SIZE = 5 * 1024 * 1024;
const HEAD_CONCURRENCY = 8;

interface AwsError {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

function status(err: unknown): number | undefined {
  return (err as AwsError)?.$metadata?.httpStatusCode;
}

/** 404 for an object (NoSuchKey / NotFound), but not a missing bucket, which is a configuration error. */
function isNotFound(err: unknown): boolean {
  const e = err as AwsError;
  return status(err) === 404 && e?.name !== 'NoSuchBucket' && e?.Code !== 'NoSuchBucket';
}

/**
 * An S3 service error keeps only its name and HTTP status (the service's text and the attached
 * response can echo request details); a local error (network, a failing source stream) keeps its
 * message and cause.
 */
function wrap(err: unknown, what: string): StoreError {
  if (err instanceof StoreError) return err;
  const e = err as AwsError & { message?: string };
  const code = status(err);
  if (code !== undefined) return new StoreError(`s3 ${what}: ${e?.name ?? e?.Code ?? 'Error'} (HTTP ${code})`);
  return new StoreError(`s3 ${what}: ${e?.message ?? String(err)}`, { cause: err });
}

export class S3Store implements ObjectStore {
  private constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly pageSize: number,
  ) {}

  static open(opts: S3StoreOptions): Promise<S3Store> {
    const config: S3ClientConfig = {
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
      // S3-compatible servers often reject the SDK's default flexible checksums (aws-chunked trailers)
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
    };
    // nothing to wait for (the client connects on its first request); a Promise like the other stores' open
    return Promise.resolve(new S3Store(new S3Client(config), opts.bucket, opts.prefix.replace(/^\/+|\/+$/g, ''), opts.listPageSize ?? 1000));
  }

  private full(key: string): string {
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private local(fullKey: string): string {
    return this.prefix ? fullKey.slice(this.prefix.length + 1) : fullKey;
  }

  async put(key: string, body: Buffer | Readable, opts: PutOptions): Promise<ObjectMeta> {
    assertKey(key);
    assertPutOptions(opts);
    const params = {
      Bucket: this.bucket,
      Key: this.full(key),
      ContentType: opts.contentType,
      ...(opts.contentEncoding ? { ContentEncoding: opts.contentEncoding } : {}),
      Metadata: { ...(opts.metadata ?? {}) },
    };
    try {
      let etag: string | undefined;
      let size: number;
      if (Buffer.isBuffer(body)) {
        const md5 = createHash('md5').update(body).digest('base64');
        const res = await this.client.send(new PutObjectCommand({ ...params, Body: body, ContentLength: body.length, ContentMD5: md5 }));
        etag = res.ETag;
        size = body.length;
      } else {
        let counted = 0;
        const counter = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            counted += chunk.length;
            cb(null, chunk);
          },
        });
        body.on('error', (err) => counter.destroy(err));
        const upload = new Upload({
          client: this.client,
          params: { ...params, Body: body.pipe(counter) },
          partSize: PART_SIZE,
          queueSize: 4,
          leavePartsOnError: false,
        });
        const res = await upload.done();
        etag = res.ETag;
        size = counted;
      }
      // lastModified is known only to the server; ask for exactly the version we wrote
      const written = await this.headMatching(key, etag);
      if (written) return written;
      // replaced by a concurrent writer already: describe what we wrote, with our own clock
      return toMeta(key, {
        ContentLength: size,
        ContentType: opts.contentType,
        ContentEncoding: opts.contentEncoding,
        ETag: etag,
        LastModified: new Date(Math.floor(Date.now() / 1000) * 1000),
        Metadata: opts.metadata,
      });
    } catch (err) {
      throw wrap(err, `put ${key}`);
    }
  }

  /** HEAD with If-Match: undefined when a concurrent writer replaced the object meanwhile. */
  private async headMatching(key: string, etag: string | undefined): Promise<ObjectMeta | undefined> {
    if (!etag) return undefined;
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.full(key), IfMatch: etag }));
      // some S3-compatible servers ignore If-Match on HEAD
      return res.ETag === etag ? toMeta(key, res) : undefined;
    } catch (err) {
      if (isNotFound(err) || status(err) === 412) return undefined;
      throw err;
    }
  }

  async get(key: string): Promise<StoredObject | undefined> {
    assertKey(key);
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
      const body = res.Body instanceof Readable ? res.Body : Readable.from([]);
      return { meta: toMeta(key, res), body };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw wrap(err, `get ${key}`);
    }
  }

  async head(key: string): Promise<ObjectMeta | undefined> {
    assertKey(key);
    try {
      return toMeta(key, await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.full(key) })));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw wrap(err, `head ${key}`);
    }
  }

  /** ListObjectsV2 returns keys in UTF-8 binary order; content type and metadata need a HEAD each. */
  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    assertPrefix(prefix);
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.full(prefix), MaxKeys: this.pageSize, ...(token ? { ContinuationToken: token } : {}) }),
        );
      } catch (err) {
        throw wrap(err, `list ${prefix}`);
      }
      const keys = (page.Contents ?? []).map((o) => this.local(o.Key!)).filter(isValidKey);
      for (let i = 0; i < keys.length; i += HEAD_CONCURRENCY) {
        const metas = await Promise.all(keys.slice(i, i + HEAD_CONCURRENCY).map((k) => this.head(k)));
        for (const m of metas) if (m) yield m; // deleted since listed: skip
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.full(key) }));
    } catch (err) {
      if (isNotFound(err)) return;
      throw wrap(err, `delete ${key}`);
    }
  }

  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      throw wrap(err, `bucket ${this.bucket} not reachable`);
    }
  }

  close(): Promise<void> {
    this.client.destroy();
    return Promise.resolve();
  }
}

/** Objects written by other tools under our prefix may have keys we would refuse: ignore them. */
function isValidKey(key: string): boolean {
  try {
    assertKey(key);
    return true;
  } catch {
    return false;
  }
}

interface HeadLike {
  ContentLength?: number;
  ContentType?: string;
  ContentEncoding?: string;
  ETag?: string;
  LastModified?: Date;
  Metadata?: Record<string, string>;
}

function toMeta(key: string, r: HeadLike): ObjectMeta {
  return {
    key,
    size: r.ContentLength ?? 0,
    contentType: r.ContentType ?? 'application/octet-stream',
    ...(r.ContentEncoding ? { contentEncoding: r.ContentEncoding } : {}),
    etag: r.ETag ?? '""',
    lastModified: r.LastModified ?? new Date(0),
    metadata: { ...(r.Metadata ?? {}) },
  };
}
