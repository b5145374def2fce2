/** What every benchmark's `run()` returns; bench/run.ts turns a list of them into one report. */
export interface BenchResult {
  name: string;
  /** numbers by name (units in the name) */
  metrics: Record<string, number | null>;
  /** each goal names a metric and says whether it was met (null: not measured) */
  goals: Array<{ metric: string; goal: string; met: boolean | null }>;
  notes: string[];
}
