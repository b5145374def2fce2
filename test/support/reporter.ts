/**
 * The suite's reporter: mocha's spec reporter, which also keeps every failure (a test's or a hook's)
 * in the run's folder (FIGURES_DIR) so that the global teardown (test/support/global.ts) can name
 * them again in the run's last lines. A CI log is often read from its end, and the spec reporter's
 * failure list comes before the reliability figures and the suite's time.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import Mocha from 'mocha';

/** One line of the run's failures file. */
export interface FailureLine {
  title: string;
  file: string;
  message: string;
}

/** How many of a failure's message lines the run's last lines repeat. */
const MESSAGE_LINES = 4;

/** The file of the run's folder the reporter appends failures to, a JSON object per line. */
export const FAILURES_FILE = 'failures.jsonl';

export default class SuiteReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.on(Mocha.Runner.constants.EVENT_TEST_FAIL, (test: Mocha.Runnable, err: unknown) => {
      const dir = process.env.FIGURES_DIR;
      if (!dir) return;
      // in parallel runs the error arrives from a worker as a plain object with its message
      const raw = (err as { message?: unknown } | null)?.message;
      const message = typeof raw === 'string' ? raw : String(err);
      const line: FailureLine = {
        title: test.fullTitle(),
        file: test.file ?? '',
        // the first lines: a command's failure names the command first and says why after it
        message: message
          .split('\n')
          .filter((l) => l.trim() !== '')
          .slice(0, MESSAGE_LINES)
          .join('\n'),
      };
      try {
        appendFileSync(join(dir, FAILURES_FILE), JSON.stringify(line) + '\n');
      } catch {
        // the spec reporter has printed the failure already
      }
    });
  }
}
