// Shaping the service's pods, datastores, recommendations and plans into what the tables and bars show.

import type { DatastoreSummary, LoadPoint, Move, Plan, PodSummary, Recommendation } from '../api/types';
import { compact } from './format';

export type Status = 'ok' | 'warn' | 'over' | 'unknown';

/**
 * How a pod's imbalance (σ/μ of the normalized loads, BASIL eq. 5) compares with its threshold: over
 * it the balancer recommends moves; within 80 % of it, a warning.
 */
export function imbalanceStatus(imbalance: number | null | undefined, threshold: number): Status {
  if (typeof imbalance !== 'number' || !Number.isFinite(imbalance)) return 'unknown';
  if (imbalance > threshold) return 'over';
  if (imbalance > 0.8 * threshold) return 'warn';
  return 'ok';
}

export function pendingMoveCount(pod: Pick<PodSummary, 'pending_moves'>): number {
  const p = pod.pending_moves;
  if (Array.isArray(p)) return p.length;
  return typeof p === 'number' && Number.isFinite(p) ? p : 0;
}

export interface DatastoreRow {
  ds: DatastoreSummary;
  /** Normalized load as a fraction of the pod's highest, for the bar (0..1). */
  share: number;
  /** Why the row stands out: maintenance, inaccessible, no device model yet. */
  flags: string[];
  usedPct: number | null;
}

export function datastoreFlags(ds: DatastoreSummary): string[] {
  const flags: string[] = [];
  if (!ds.accessible) flags.push('inaccessible');
  if (ds.maintenance) flags.push('maintenance');
  if (ds.model_status && ds.model_status !== 'ok' && ds.model_status !== 'fitted') flags.push(`model: ${ds.model_status}`);
  return flags;
}

/** A pod's datastores, most loaded first (unknown loads last, by name). */
export function datastoreRows(datastores: DatastoreSummary[]): DatastoreRow[] {
  const max = Math.max(0, ...datastores.map((d) => (isNum(d.normalized_load) ? d.normalized_load : 0)));
  const rows = datastores.map((ds) => ({
    ds,
    share: max > 0 && isNum(ds.normalized_load) ? ds.normalized_load / max : 0,
    flags: datastoreFlags(ds),
    usedPct: ds.capacity_gb > 0 ? (100 * (ds.capacity_gb - ds.free_gb)) / ds.capacity_gb : null,
  }));
  return rows.sort((a, b) => {
    const na = isNum(a.ds.normalized_load) ? a.ds.normalized_load : -Infinity;
    const nb = isNum(b.ds.normalized_load) ? b.ds.normalized_load : -Infinity;
    return nb - na || a.ds.name.localeCompare(b.ds.name);
  });
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** The datastore name for an id, from the datastores at hand; the id itself when unknown. */
export function nameOf(id: string, datastores: DatastoreSummary[]): string {
  return datastores.find((d) => d.id === id || d.name === id)?.name ?? id;
}

/** The label of a move that is half of a swap ("swap 3"), or null: both halves share it. */
export function swapLabel(move: Move): string | null {
  return move.swap_group === undefined || move.swap_group === null ? null : `swap ${move.swap_group}`;
}

/** The names of a move's source and target: the service's, else looked up, else the ids. */
export function moveEnds(move: Move, datastores: DatastoreSummary[] = []): { from: string; to: string } {
  return { from: move.from_name ?? nameOf(move.from, datastores), to: move.to_name ?? nameOf(move.to, datastores) };
}

/** One line on what a move is predicted to do: both datastores' N and the pod's imbalance. */
export function moveEffect(move: Move, datastores: DatastoreSummary[] = []): string {
  const { from, to } = moveEnds(move, datastores);
  return (
    `${from}: N ${compact(move.from_N_before)} → ${compact(move.from_N_after)}; ` +
    `${to}: N ${compact(move.to_N_before)} → ${compact(move.to_N_after)}; ` +
    `imbalance ${compact(move.imbalance_before)} → ${compact(move.imbalance_after)}`
  );
}

export interface EffectBar {
  id: string;
  name: string;
  before: number | null;
  after: number | null;
}

/** Per datastore, normalized load before and after the recommendation, for the before/after bars. */
export function recommendationBars(rec: Recommendation, datastores: DatastoreSummary[]): EffectBar[] {
  const ids = new Set([...Object.keys(rec.before?.normalized_load ?? {}), ...Object.keys(rec.after?.normalized_load ?? {})]);
  const bars = [...ids].map((id) => ({
    id,
    name: nameOf(id, datastores),
    before: rec.before?.normalized_load?.[id] ?? null,
    after: rec.after?.normalized_load?.[id] ?? null,
  }));
  return bars.sort((a, b) => (b.before ?? 0) - (a.before ?? 0) || a.name.localeCompare(b.name));
}

/** Total GB a set of moves copies, for the confirmation ("3 disks, 120 GB"). */
export function movesSummary(moves: Move[]): string {
  const total = moves.reduce((s, m) => s + (isNum(m.size_gb) ? m.size_gb : 0), 0);
  const disks = moves.length === 1 ? '1 disk' : `${moves.length} disks`;
  return `${disks}, ${compact(total)} GB to copy`;
}

export const FINAL_PLAN_STATES = new Set(['succeeded', 'failed', 'cancelled']);

export function isPlanFinal(plan: Pick<Plan, 'state'>): boolean {
  return FINAL_PLAN_STATES.has(plan.state);
}

/**
 * A plan's progress in percent: the service's figure when it gives one, else the mean of its moves'
 * (a finished move counts 100, a pending one 0).
 */
export function planProgress(plan: Plan): number {
  if (isNum(plan.progress)) return clamp(plan.progress, 0, 100);
  if (plan.moves.length === 0) return plan.state === 'succeeded' ? 100 : 0;
  const each = plan.moves.map((m) => {
    if (m.state === 'succeeded' || m.state === 'failed' || m.state === 'skipped') return 100;
    if (isNum(m.progress)) return clamp(m.progress, 0, 100);
    return 0;
  });
  return Math.round(each.reduce((a, b) => a + b, 0) / each.length);
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

/** The label colour Clarity gives a state. */
export function stateTone(state: string | undefined): 'success' | 'danger' | 'warning' | 'info' | 'neutral' {
  switch (state) {
    case 'succeeded':
    case 'moved':
    case 'ok':
      return 'success';
    case 'failed':
    case 'denied':
    case 'invalid':
      return 'danger';
    case 'running':
    case 'approved':
      return 'info';
    case 'cancelled':
    case 'skipped':
      return 'warning';
    default:
      return 'neutral';
  }
}

/** A pod's moves not started yet: the service's list, or none when it only gives their count. */
export function pendingMoves(pod: { pending?: Move[]; pending_moves?: number | Move[] }): Move[] {
  if (Array.isArray(pod.pending)) return pod.pending;
  return Array.isArray(pod.pending_moves) ? pod.pending_moves : [];
}

/** Recent moves of a pod (newest first) and pending ones, from a pod detail or a list of plans. */
export function splitMoves(plans: Plan[]): { pending: (Move & { plan: Plan })[]; recent: (Move & { plan: Plan })[] } {
  const pending: (Move & { plan: Plan })[] = [];
  const recent: (Move & { plan: Plan })[] = [];
  for (const plan of plans) {
    for (const m of plan.moves) {
      const row = { ...m, plan };
      const done = m.state === 'succeeded' || m.state === 'failed' || m.state === 'skipped';
      if (done || isPlanFinal(plan)) recent.push(row);
      else pending.push(row);
    }
  }
  const when = (m: Move & { plan: Plan }) => Date.parse(m.finished_at ?? m.plan.updated_at ?? m.plan.created_at) || 0;
  recent.sort((a, b) => when(b) - when(a));
  return { pending, recent };
}

/**
 * Whether a recommendation still has moves to decide on: the service marks each move `open` until a
 * plan takes it (moves without a status are taken as open).
 */
export function hasOpenMoves(rec: Recommendation): boolean {
  return rec.moves.some((m) => m.status === undefined || m.status === null || m.status === 'open');
}

/** What the header's "N now" is, for its tooltip: computed, not recorded. */
export const N_NOW_MEANING =
  'N now = ΣL / P (BASIL eq. 5): the load L of the disks on the datastore now, over its performance P, ' +
  'from the latest models. The chart shows N as each model run computed it, with the placement of that ' +
  'moment, so a move applied since the last run shows here first.';

export interface NowAgainstRuns {
  /** The last model run's N and when it ran (null without runs). */
  lastN: number | null;
  lastAt: string | null;
  /** N now differs from the last run's by more than `tolerance` (relative): a move or a refit since. */
  differs: boolean;
}

/** N now (current placement, latest models) against N at the last model run in `points`. */
export function nowAgainstLastRun(now: number | null | undefined, points: LoadPoint[], tolerance = 0.01): NowAgainstRuns {
  const last = [...points].reverse().find((p) => isNum(p.normalized_load));
  if (!last || !isNum(last.normalized_load)) return { lastN: null, lastAt: null, differs: false };
  const lastN = last.normalized_load;
  const differs = isNum(now) && Math.abs(now - lastN) > tolerance * Math.max(Math.abs(lastN), Math.abs(now), 1e-9);
  return { lastN, lastAt: last.t, differs };
}
