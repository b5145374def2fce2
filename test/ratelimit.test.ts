import { expect } from 'chai';
import { useTestContext } from './support/context.js';
import { RateLimiter, sliceFor } from '../api/kit/ratelimit.js';
import { ManualClock } from '../lib/core/clock.js';
import { Db } from '../lib/core/db.js';

/** Round trips one process makes to spend a whole budget alone: its slices shrink near the limit. */
function claimsToSpend(limit: number): number {
  let count = 0;
  let n = 0;
  for (; count < limit; n++) count += sliceFor(limit, count);
  return n;
}
describe('rate limiter', () => {
  const t = useTestContext({ now: '2026-11-21T10:00:00Z' });

  /** `fn` with two pools of `max` connections each, as two API processes have; both closed after. */
  async function twoProcesses(max: number, fn: (db1: Db, db2: Db) => Promise<void>): Promise<void> {
    const db1 = new Db(t.database.url, t.ctx.log, { max });
    const db2 = new Db(t.database.url, t.ctx.log, { max });
    try {
      await fn(db1, db2);
    } finally {
      await db1.close();
      await db2.close();
    }
  }

  it('allows the limit, then refuses with remaining 0 and retryAfter until the window ends', async () => {
    const clock = new ManualClock('2026-11-21T10:00:15.500Z');
    const rl = new RateLimiter(t.ctx.db, clock);
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await rl.hit('key-a', 3));
    expect(results.map((r) => r.allowed)).to.deep.equal([true, true, true, false, false]);
    expect(results.map((r) => r.remaining)).to.deep.equal([2, 1, 0, 0, 0]);
    expect(results[0].retryAfterSeconds).to.equal(0);
    expect(results[3].retryAfterSeconds).to.equal(45); // 44.5 s left, rounded up
    // another key has its own budget
    expect(await rl.hit('key-b', 3)).to.deep.equal({ allowed: true, remaining: 2, retryAfterSeconds: 0 });
  });

  it('rolls over to a fresh budget in the next minute', async () => {
    const clock = new ManualClock('2026-11-21T10:05:59.000Z');
    const rl = new RateLimiter(t.ctx.db, clock);
    expect((await rl.hit('key-roll', 1)).allowed).to.equal(true);
    const refused = await rl.hit('key-roll', 1);
    expect(refused).to.deep.equal({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    clock.advance(1000);
    expect(await rl.hit('key-roll', 1)).to.deep.equal({ allowed: true, remaining: 0, retryAfterSeconds: 0 });
  });

  it('shares one budget between limiters of separate pools (processes)', async () => {
    const clock = new ManualClock('2026-11-21T10:10:00Z');
    await twoProcesses(5, async (db1, db2) => {
      const a = new RateLimiter(db1, clock);
      const b = new RateLimiter(db2, clock);
      const hits = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).hit('key-shared', 25)));
      expect(hits.filter((h) => h.allowed)).to.have.length(25);
      // every allowed hit saw a distinct position in the window
      expect(new Set(hits.filter((h) => h.allowed).map((h) => h.remaining)).size).to.equal(25);
      expect(hits.filter((h) => !h.allowed).every((h) => h.remaining === 0 && h.retryAfterSeconds === 60)).to.equal(true);
    });
  });

  it('claims slices: two limiters sharing a limit never allow more than it in total, with ~limit/slice round trips', async () => {
    const clock = new ManualClock('2026-11-21T10:20:30Z');
    await twoProcesses(5, async (db1, db2) => {
      const limit = 200;
      const slice = sliceFor(limit);
      expect(slice).to.equal(10);
      const a = new RateLimiter(db1, clock);
      const b = new RateLimiter(db2, clock);
      // waves of concurrent hits from both "processes", far more than the budget
      const hits = [];
      for (let wave = 0; wave < 10; wave++) hits.push(...(await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 3 ? a : b).hit('key-slices', limit)))));
      const allowed = hits.filter((h) => h.allowed);
      // every claimed position up to the limit was spent (both kept being asked), none twice
      expect(allowed).to.have.length(limit);
      expect(new Set(allowed.map((h) => h.remaining)).size).to.equal(limit);
      expect(Math.min(...allowed.map((h) => h.remaining))).to.equal(0);
      expect(hits.filter((h) => !h.allowed).every((h) => h.remaining === 0 && h.retryAfterSeconds === 30)).to.equal(true);
      // the claims one process alone would make (slices shrinking near the limit), plus, per limiter
      // that found the window spent, one claim, one after waiting for hand-backs and one re-check: a
      // limiter's slices are at least that process's, since the count it last saw is at most the true one
      expect(a.claims + b.claims).to.be.at.most(claimsToSpend(limit) + 6);
      const { count } = await t.ctx.db.one(`SELECT count FROM rate_limit_counters WHERE key_id = 'key-slices'`);
      expect(count, 'a claim never counts past the limit').to.equal(limit);
      // refusals after the window is spent cost no round trip, but a re-check every RECHECK_MS
      const before = a.claims;
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) expect((await a.hit('key-slices', limit)).allowed).to.equal(false);
      expect(a.claims - before).to.be.at.most(1 + Math.floor((performance.now() - t0) / 250));
      // the next window starts a fresh budget
      clock.advance(30_000);
      expect(await a.hit('key-slices', limit)).to.deep.equal({ allowed: true, remaining: limit - 1, retryAfterSeconds: 0 });
    });
  });

  it('over two processes the budget ends at about the same request for both: the (limit+1)-th is the first refusal, to within a position or two', async () => {
    const clock = new ManualClock('2026-11-21T10:25:00Z');
    await twoProcesses(2, async (db1, db2) => {
      for (const limit of [200, 4000]) {
        const a = new RateLimiter(db1, clock);
        const b = new RateLimiter(db2, clock);
        // an uneven spread (a least-connections balancer): two of every three requests go to one process
        const allowed: boolean[] = [];
        for (let i = 0; i < limit + 30; i++) allowed.push((await (i % 3 ? a : b).hit(`key-spread-${limit}`, limit)).allowed);
        expect(allowed.filter(Boolean), `${limit}`).to.have.length(limit);
        const lastAllowed = allowed.lastIndexOf(true);
        const refusedBefore = allowed.slice(0, lastAllowed).filter((x) => !x).length;
        // fixed slices left one process's unspent slice behind the other's first 429s (9 of 200, 49 of 4,000 here)
        expect(refusedBefore, `${limit}: refusals before the last allowed request`).to.be.at.most(2);
        clock.advance(60_000);
      }
    });
  });

  it("a key's traffic moving to another process mid-minute: the positions the first held come back, and the (limit+1)-th is the first 429", async () => {
    const clock = new ManualClock('2026-11-21T10:27:00Z');
    await twoProcesses(2, async (db1, db2) => {
      const limit = 1000;
      const a = new RateLimiter(db1, clock);
      const b = new RateLimiter(db2, clock);
      // the key's first requests reach process a, which claims a slice of 50 and spends 10 of it
      for (let i = 0; i < 10; i++) expect((await a.hit('key-moved', limit)).allowed).to.equal(true);
      // then every request goes to process b (the client reconnected elsewhere)
      const answers: boolean[] = [];
      for (let wave = 0; wave < 25; wave++)
        answers.push(...(await Promise.all(Array.from({ length: 40 }, () => b.hit('key-moved', limit)))).map((h) => h.allowed));
      const allowed = answers.filter(Boolean).length;
      // fixed slices kept a's 40 unspent positions for the rest of the minute: b allowed 950
      expect(allowed, 'b spends what a did not').to.equal(limit - 10);
      expect(answers.slice(0, limit - 10).every(Boolean), 'no 429 before the limit').to.equal(true);
      expect(a.returns).to.equal(1);
      const { count } = await t.ctx.db.one(`SELECT count FROM rate_limit_counters WHERE key_id = 'key-moved'`);
      expect(count).to.equal(limit);
    });
  });

  it('at the default limit a busy key costs one round trip per 50 requests', async () => {
    const clock = new ManualClock('2026-11-21T10:30:00Z');
    const rl = new RateLimiter(t.ctx.db, clock);
    const hits = await Promise.all(Array.from({ length: 500 }, () => rl.hit('key-busy', 4000)));
    expect(hits.every((h) => h.allowed)).to.equal(true);
    expect(Math.min(...hits.map((h) => h.remaining))).to.equal(3500);
    expect(rl.claims).to.equal(10);
  });

  it('prunes old windows', async () => {
    const clock = new ManualClock('2026-11-21T11:00:00Z');
    await new RateLimiter(t.ctx.db, clock).hit('key-old', 10);
    clock.advance(10 * 60_000);
    await new RateLimiter(t.ctx.db, clock).hit('key-new', 10);
    const rows = await t.ctx.db.many(`SELECT key_id FROM rate_limit_counters WHERE key_id IN ('key-old', 'key-new')`);
    expect(rows.map((r) => r.key_id)).to.deep.equal(['key-new']);
  });
});
