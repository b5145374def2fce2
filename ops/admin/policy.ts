/**
 * `ops policy …`: a zone's city Policy source (lib/domain/policy/sources.ts, the console's too) and the
 * compliance view as text, in `make publish-status`'s spirit: one block per zone, its last read, then
 * one line per rule with what it maps to, since when it is in force, the vehicles commanded and those
 * that did not acknowledge, and an alert's figure against its limit.
 */
import { readFileSync } from 'node:fs';
import type { ComplianceView } from '../../lib/domain/policy/sources.js';
import { rfc3339Utc } from '../../lib/core/clock.js';

/** The source's secret: from a file (never an argument, which `ps` shows) or POLICY_SOURCE_SECRET. */
export function policySecret(file: string | undefined): string | undefined {
  if (file) return readFileSync(file, 'utf8').trim();
  return process.env.POLICY_SOURCE_SECRET || undefined;
}

const when = (d: Date | null) => (d ? rfc3339Utc(d) : '-');

export function formatCompliance(view: ComplianceView, now: Date): string {
  if (!view.sources.length) return 'no zone has a city Policy source (ops policy add)';
  const out: string[] = [];
  for (const s of view.sources) {
    const age = s.read_at ? `${Math.round((now.getTime() - s.read_at.getTime()) / 1000)} s ago` : 'never';
    out.push(
      `zone ${s.zone_id}: ${s.rules} rules, ${s.in_force} in force; last read ${age} (${s.read_status ?? 'none'})${s.read_error ? `: ${s.read_error}` : ''}; last good ${when(s.good_at)}; ${s.reads} reads, ${s.failed_reads} failed`,
    );
    out.push(`  policies ${s.policy_url}  geographies ${s.geography_url}  auth ${s.auth_type}`);
    for (const r of view.rules.filter((x) => x.zone_id === s.zone_id)) {
      const state = r.in_force ? `in force since ${when(r.in_force_since)}` : 'not in force';
      const extra = [
        r.max_speed_kph !== null ? `${r.max_speed_kph} km/h` : '',
        r.commanded || r.unacknowledged ? `${r.commanded} vehicles commanded, ${r.unacknowledged} not acknowledged, ${r.failures} failed attempts` : '',
        r.figure !== null
          ? `${r.figure} vehicles${r.maximum !== null ? ` against ${r.mapping === 'fleet-cap' ? 'a cap of ' : 'a limit of '}${r.maximum}${r.mapping === 'parking-time' ? ` ${r.rule_units}` : ''}` : ''}${r.maximum !== null && r.figure > r.maximum && r.mapping === 'fleet-cap' ? ' (OVER)' : ''}`
          : '',
      ].filter(Boolean);
      out.push(`  ${r.mapping.padEnd(12)} ${state.padEnd(40)} ${r.policy_name} / ${r.rule_name}${extra.length ? `: ${extra.join('; ')}` : ''}`);
      out.push(`  ${''.padEnd(12)} ${r.note}`);
    }
  }
  return out.join('\n');
}
