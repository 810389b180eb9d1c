// Whether a recommendation can still be planned, why a pod stays over its threshold, and how far an
// applied plan's prediction was from what was measured an hour later: plain functions the views render.

import type { PinnedBlocking, PredictionCheck, PredictionError, Recommendation } from '../api/types';
import { compact, DASH, iops, ms } from './format';

/** A recommendation is stale once the service says so (the placement it was computed from changed);
 * one whose moves are in a plan (or dismissed, superseded) is not offered either, but is not stale. */
export function isStale(rec: Pick<Recommendation, 'state'>): boolean {
  return rec.state === 'stale';
}

const PIN_WORDS: Record<string, string> = {
  ping_pong: 'moved within the ping-pong window',
  excluded_vm: 'excluded from balancing',
  anti_affinity: 'held by anti-affinity',
};

/** "3 disks cannot move: 2 moved within the ping-pong window, 1 excluded from balancing". */
export function pinnedSummary(entries: PinnedBlocking[], total?: number): string {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(e.code, (counts.get(e.code) ?? 0) + e.disks.length);
  const disks = [...counts.values()].reduce((a, b) => a + b, 0);
  const parts = [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, n]) => `${n} ${PIN_WORDS[code] ?? code}`);
  const more = total !== undefined && total > entries.length ? ` (${entries.length} of ${total} units listed)` : '';
  return `${disks} disk${disks === 1 ? '' : 's'} that would lower the imbalance cannot move: ${parts.join(', ')}${more}`;
}

/** A relative error (0.12) as a signed percentage ("+12 %"). */
export function signedPct(v: number | null | undefined): string {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  const p = Math.round(v * 100);
  return `${p > 0 ? '+' : ''}${p} %`;
}

/** An absolute relative error (0.12) as "±12 %". */
export function absPct(v: number | null | undefined): string {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  return `±${Math.round(Math.abs(v) * 100)} %`;
}

/** One line on a pod's prediction error: "latency ±19 %, IOPS ±27 %, imbalance −1 %". */
export function predictionErrorLine(err: PredictionError | null | undefined): string {
  if (!err) return 'no applied plan measured yet';
  return `latency ${absPct(err.latency_median_abs)}, IOPS ${absPct(err.iops_median_abs)}, imbalance ${signedPct(err.imbalance_rel)}`;
}

export interface PredictionRow {
  name: string;
  model: string;
  latency: { predicted: string; measured: string; error: string };
  iops: { predicted: string; measured: string; error: string };
}

/** Per datastore, predicted against measured latency and IOPS, and the error, as the table shows them. */
export function predictionRows(check: PredictionCheck): PredictionRow[] {
  return check.datastores.map((d) => ({
    name: d.name,
    model: d.model ?? DASH,
    latency: {
      predicted: ms(d.predicted?.latency_ms),
      measured: ms(d.measured?.latency_ms),
      error: signedPct(d.error?.latency),
    },
    iops: {
      predicted: iops(d.predicted?.iops),
      measured: iops(d.measured?.iops),
      error: signedPct(d.error?.iops),
    },
  }));
}

/** "imbalance 0.21 predicted, 0.22 measured" (or waiting until the hour has passed). */
export function imbalanceLine(check: PredictionCheck): string {
  const i = check.imbalance;
  if (check.state !== 'measured') return `imbalance ${compact(i.predicted)} predicted; measured at ${check.due_at} (vCenter time)`;
  return `imbalance ${compact(i.predicted)} predicted, ${compact(i.measured)} measured an hour later`;
}
