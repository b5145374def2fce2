/**
 * A small seeded PRNG (sfc32, seeded through splitmix32) so that the seed data and the simulator
 * are reproducible: the same seed and inputs give the same rows, UUIDs included.
 */

function splitmix32(a: number): () => number {
  return () => {
    a |= 0;
    a = (a + 0x9e3779b9) | 0;
    let t = a ^ (a >>> 16);
    t = Math.imul(t, 0x21f0aaad);
    t ^= t >>> 15;
    t = Math.imul(t, 0x735a2d97);
    t ^= t >>> 15;
    return t >>> 0;
  };
}

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const s = splitmix32((seed >>> 0) ^ Math.floor(seed / 2 ** 32));
    this.a = s();
    this.b = s();
    this.c = s();
    this.d = s();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform in [min, max). */
  range(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** Exponentially distributed with the given mean. */
  exp(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }

  /** Roughly normal (sum of uniforms), clamped to [min, max]. */
  normal(mean: number, sd: number, min = -Infinity, max = Infinity): number {
    const z = this.next() + this.next() + this.next() + this.next() - 2; // variance 1/3
    return Math.min(max, Math.max(min, mean + z * sd * Math.sqrt(3)));
  }

  /** A valid random (version 4, RFC 4122 variant) UUID drawn from this stream. */
  uuid(): string {
    const w = [this.nextU32(), this.nextU32(), this.nextU32(), this.nextU32()];
    w[1] = (w[1] & 0xffff0fff) | 0x00004000; // version 4
    w[2] = (w[2] & 0x3fffffff) | 0x80000000; // variant 10xx
    const h = w.map((x) => (x >>> 0).toString(16).padStart(8, '0')).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
  }

  /** An independent stream derived from this one (keeps streams stable when one consumer changes). */
  fork(salt: number): Prng {
    return new Prng((this.nextU32() ^ Math.imul(salt | 0, 0x9e3779b1)) >>> 0);
  }
}
