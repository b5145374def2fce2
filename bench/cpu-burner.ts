/**
 * A control of BENCH=ingest (bench/ingest.bench.ts): a process that takes a given share of one core and
 * does nothing else (busy for `share` of every 10 ms, asleep the rest), so that the partner API's
 * latency beside it measures what the same CPU costs when it is taken by work that shares no lock,
 * row, connection or cache with the API.
 *
 *   node bench/cpu-burner.ts SHARE        (0 < SHARE ≤ 1)
 */
const share = Math.min(1, Math.max(0, Number(process.argv[2])));
const PERIOD_MS = 10;
const busyMs = share * PERIOD_MS;

const tick = () => {
  const until = performance.now() + busyMs;
  while (performance.now() < until);
  setTimeout(tick, PERIOD_MS - busyMs);
};
tick();
