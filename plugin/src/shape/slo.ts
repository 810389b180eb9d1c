// The SLO goal's per-group figures (docs/slo.md "API"), as the pod and recommendation views show them.

import type { Move, Recommendation, SloGroup, SloHistory, SloHistoryGroup, SloRound } from '../api/types';
import { timeSeries, type XY } from './charts';
import { compact, ms } from './format';

export interface SloGroupRow {
  name: string;
  drt: string;
  measured: string;
  predictedNow: string;
  predictedAfter: string;
  damage: string;
  met: boolean;
  /** The service's sentence for a group predicted above its DRT after the moves, if any. */
  unmet: string | null;
}

/** The round's SLO section, or null for a pod with the balance goal (its views stay as they were). */
export function sloOf(rec: Recommendation | null | undefined): SloRound | null {
  return rec?.slo?.goal === 'slo' ? rec.slo : null;
}

/** The unmet sentence of a group: the service writes one per group above its DRT, "group <name> misses …". */
function unmetFor(group: SloGroup, unmet: string[]): string | null {
  return unmet.find((u) => u.startsWith(`group ${group.name} `)) ?? null;
}

export function damageChange(before: number, after: number): string {
  return `${compact(before)} → ${compact(after)}`;
}

export function sloGroupRows(slo: SloRound): SloGroupRow[] {
  return slo.groups.map((g) => ({
    name: g.name,
    drt: ms(g.drt_ms),
    measured: ms(g.measured_ms),
    predictedNow: ms(g.predicted_ms_before),
    predictedAfter: ms(g.predicted_ms_after),
    damage: damageChange(g.damage_before, g.damage_after),
    met: g.within_drt_after,
    unmet: g.within_drt_after ? null : (unmetFor(g, slo.unmet) ?? `${g.name}: predicted ${ms(g.predicted_ms_after)} after the moves, above its DRT ${ms(g.drt_ms)}`),
  }));
}

/** The unmet sentences that name no group (shown above the table so none is lost). */
export function otherUnmet(slo: SloRound): string[] {
  const rows = sloGroupRows(slo);
  return slo.unmet.filter((u) => !rows.some((r) => r.unmet === u));
}

/** One line for an SLO move: each affected group's RT before → after, and the pod's damage change. */
export function sloMoveLine(m: Move): string | null {
  const e = m.slo;
  if (!e) return null;
  const groups = e.groups.map((g) => `${g.group} ${ms(g.rt_ms_before)} → ${ms(g.rt_ms_after)}`);
  return [...groups, `damage ${damageChange(e.damage_before, e.damage_after)}`].join('; ');
}

/** One group's charts over the pod's SLO series: response times against its DRT, and damage. */
export interface SloGroupHistory {
  name: string;
  drtMs: number;
  /** Measured RT (solid) and predicted RT after each round's moves (dashed). */
  rt: { name: string; points: XY[]; dashed?: boolean }[];
  /** Measured damage (solid) and predicted damage at the placement of each round (dashed). */
  damage: { name: string; points: XY[]; dashed?: boolean }[];
  /** The latest round's share of measured disks within the DRT, as "67 %" (— when unmeasured). */
  withinNow: string;
}

/**
 * The pod's SLO series per group, in the order of the latest round's groups (a group configured
 * later starts where it first appears): the points the plugin charts over time.
 */
export function sloHistoryGroups(history: SloHistory): SloGroupHistory[] {
  const rounds = history.points.map((p) => ({ t: p.at, groups: new Map(p.groups.map((g) => [g.name, g])) }));
  const names: string[] = [];
  for (const p of [...history.points].reverse()) for (const g of p.groups) if (!names.includes(g.name)) names.push(g.name);
  return names.map((name) => {
    const of = (value: (g: SloHistoryGroup) => number | null | undefined): XY[] =>
      timeSeries(rounds, (r) => {
        const g = r.groups.get(name);
        return g ? value(g) : null;
      });
    const latest = [...history.points].reverse().find((p) => p.groups.some((g) => g.name === name));
    const group = latest?.groups.find((g) => g.name === name);
    const within = group?.measured_within_drt;
    return {
      name,
      drtMs: group?.drt_ms ?? 0,
      rt: [
        { name: 'measured', points: of((g) => g.measured_ms) },
        { name: 'predicted after the moves', points: of((g) => g.predicted_ms_after), dashed: true },
      ],
      damage: [
        { name: 'measured', points: of((g) => g.measured_damage) },
        { name: 'predicted', points: of((g) => g.damage_before), dashed: true },
      ],
      withinNow: typeof within === 'number' && Number.isFinite(within) ? `${Math.round(within * 100)} %` : '—',
    };
  });
}
