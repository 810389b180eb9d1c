// The SLO goal's per-group figures (docs/slo.md "API"), as the pod and recommendation views show them.

import type { Move, Recommendation, SloGroup, SloRound } from '../api/types';
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
