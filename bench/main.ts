/**
 * A bench file run on its own (`node --import tsx bench/x.bench.ts`): its `run()`, printed, then the
 * process exits (pools and servers left open must not keep it alive). bench/run.ts runs them all.
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { BenchResult } from './types.js';

export function runIfMain(moduleUrl: string, run: () => Promise<BenchResult>): void {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  process.env.SIGNING_SECRET ??= randomBytes(32).toString('hex');
  run()
    .then((r) => {
      console.log(JSON.stringify(r.metrics, null, 2));
      for (const g of r.goals)
        console.log(`goal ${g.metric} ${g.goal}: ${g.met === null ? 'not measured' : g.met ? 'met' : 'NOT met'} (${r.metrics[g.metric]})`);
      for (const n of r.notes) console.log(`- ${n}`);
      process.exit(0);
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}
