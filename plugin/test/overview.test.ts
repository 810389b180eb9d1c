import { describe, expect, it } from 'vitest';
import type { DatastoreDetail, LoadPoint, Plan, PodSummary, Recommendation } from '../src/api/types';
import { ago, compact, gb, limit, ms } from '../src/shape/format';
import {
  datastoreRows,
  hasOpenMoves,
  imbalanceStatus,
  isPlanFinal,
  moveEffect,
  moveEnds,
  movesSummary,
  nowAgainstLastRun,
  pendingMoveCount,
  pendingMoves,
  planProgress,
  recommendationBars,
  splitMoves,
  swapLabel,
} from '../src/shape/overview';
import { fixture } from './helpers';

const pod = fixture<PodSummary[]>('pods.json')[0];
const byLoad = [...pod.datastores].sort((x, y) => (y.normalized_load ?? 0) - (x.normalized_load ?? 0));

describe('pod overview', () => {
  it.each([
    [0.69, 0.25, 'over'],
    [0.22, 0.25, 'warn'],
    [0.1, 0.25, 'ok'],
    [null, 0.25, 'unknown'],
  ] as const)('imbalance %s against threshold %s is %s', (imb, thr, want) => {
    expect(imbalanceStatus(imb, thr)).toBe(want);
  });

  it('lists datastores most loaded first with bars relative to the highest N', () => {
    const rows = datastoreRows([...pod.datastores].reverse());
    expect(rows.map((r) => r.ds.name)).toEqual(byLoad.map((d) => d.name));
    expect(rows[0].share).toBe(1);
    expect(rows[2].share).toBeCloseTo((byLoad[2].normalized_load ?? 0) / (byLoad[0].normalized_load ?? 1));
    expect(rows[0].usedPct).toBeCloseTo((100 * (byLoad[0].capacity_gb - byLoad[0].free_gb)) / byLoad[0].capacity_gb);
  });

  it('puts datastores without a load last and flags why they stand out', () => {
    const odd = { ...pod.datastores[0], id: 'datastore-9', name: 'new-lun', normalized_load: null, model_status: 'insufficient_data', maintenance: true };
    const rows = datastoreRows([odd, ...pod.datastores]);
    expect(rows[rows.length - 1].ds.name).toBe('new-lun');
    expect(rows[rows.length - 1].flags).toEqual(['maintenance', 'model: insufficient_data']);
    expect(rows[rows.length - 1].share).toBe(0);
  });

  it('counts pending moves given as a number or as a list, and finds the list', () => {
    expect(pendingMoveCount({ pending_moves: 3 })).toBe(3);
    expect(pendingMoveCount(pod)).toBe(pod.pending_moves);
    const moves = fixture<Plan>('plan_proposed.json').moves;
    expect(pendingMoveCount({ pending_moves: moves })).toBe(moves.length);
    expect(pendingMoves({ pending: moves, pending_moves: moves.length })).toBe(moves);
    expect(pendingMoves({ pending_moves: 2 })).toEqual([]);
  });
});

describe('recommendations and plans', () => {
  const rec = fixture<Recommendation>('recommendation.json');
  const m = rec.moves[0];

  it('says what a move is predicted to do, with the datastores’ names', () => {
    expect(moveEffect(m, pod.datastores)).toBe(
      `${m.from_name}: N ${compact(m.from_N_before)} → ${compact(m.from_N_after)}; ` +
        `${m.to_name}: N ${compact(m.to_N_before)} → ${compact(m.to_N_after)}; ` +
        `imbalance ${compact(m.imbalance_before)} → ${compact(m.imbalance_after)}`,
    );
    // Without the service's names, the pod's datastores name the ends.
    const bare = { ...m, from_name: undefined, to_name: undefined };
    expect(moveEnds(bare, pod.datastores)).toEqual({ from: m.from_name, to: m.to_name });
    expect(moveEnds(bare, [])).toEqual({ from: m.from, to: m.to });
  });

  it('labels both halves of a swap alike, and a plain move not at all', () => {
    const first = { ...m, kind: 'swap', swap_group: 3 };
    const second = { ...m, kind: 'swap', swap_group: 3, from: m.to, to: m.from };
    expect(swapLabel(first)).toBe('swap 3');
    expect(swapLabel(second)).toBe(swapLabel(first));
    expect(swapLabel({ ...m, swap_group: null })).toBeNull();
    expect(swapLabel({ ...m, swap_group: undefined })).toBeNull();
  });

  it('pairs every datastore’s N before and after the moves, most loaded first', () => {
    const bars = recommendationBars(rec, pod.datastores);
    expect(bars.map((b) => b.id).sort()).toEqual(Object.keys(rec.before.normalized_load).sort());
    for (const b of bars) {
      expect(b.before).toBe(rec.before.normalized_load[b.id]);
      expect(b.after).toBe(rec.after.normalized_load[b.id]);
      expect(b.name).toBe(pod.datastores.find((d) => d.id === b.id)?.name);
    }
    expect(bars[0].before).toBe(Math.max(...Object.values(rec.before.normalized_load)));
  });

  it('knows when the moves are still to be decided on', () => {
    expect(hasOpenMoves(rec)).toBe(rec.moves.some((x) => x.status === 'open'));
    expect(hasOpenMoves({ ...rec, moves: rec.moves.map((x) => ({ ...x, status: 'planned' })) })).toBe(false);
    expect(hasOpenMoves({ ...rec, moves: rec.moves.map((x) => ({ ...x, status: undefined })) })).toBe(true);
  });

  it('sums what the moves copy', () => {
    const total = rec.moves.reduce((t, x) => t + x.size_gb, 0);
    expect(movesSummary(rec.moves)).toBe(`${rec.moves.length} disks, ${compact(total)} GB to copy`);
    expect(movesSummary(rec.moves.slice(0, 1))).toBe(`1 disk, ${compact(m.size_gb)} GB to copy`);
  });

  it('takes the service’s plan progress, or averages the moves', () => {
    const running = fixture<Plan>('plan_running.json');
    expect(planProgress(running)).toBe(running.progress);
    const mean = running.moves.reduce((t, x) => t + (x.progress ?? 0), 0) / running.moves.length;
    expect(planProgress({ ...running, progress: null })).toBe(Math.round(mean));
    expect(planProgress({ ...fixture<Plan>('plan_proposed.json'), progress: undefined })).toBe(0);
    const done = fixture<Plan>('plan_succeeded.json');
    expect(planProgress({ ...done, progress: null })).toBe(100);
    expect(isPlanFinal(running)).toBe(false);
    expect(isPlanFinal(done)).toBe(true);
  });

  it('splits plans into pending and recent moves, newest first', () => {
    const running = fixture<Plan>('plan_running.json');
    const older = { ...fixture<Plan>('plan_succeeded.json'), id: 99 };
    const { pending, recent } = splitMoves([older, running]);
    expect(pending.map((x) => x.disk)).toEqual(running.moves.filter((x) => x.state !== 'succeeded').map((x) => x.disk));
    expect(recent.every((x) => x.plan.id === 99 || x.state === 'succeeded')).toBe(true);
    const times = recent.map((x) => Date.parse(x.finished_at ?? x.plan.updated_at ?? x.plan.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });
});

describe('formatting', () => {
  it('reads numbers at a useful precision, with a dash for unknowns', () => {
    expect(compact(4.15)).toBe('4.15');
    expect(compact(37.4)).toBe('37.4');
    expect(compact(1538)).toBe('1,538');
    expect(compact(null)).toBe('—');
    expect(compact(-4.5e-13)).toBe('0');
    expect(compact(0.0042)).toBe('0.0042');
    expect(ms(6.9)).toBe('6.90 ms');
    expect(gb(2048)).toBe('2.0 TB');
    expect(limit(-1)).toBe('unlimited');
    expect(limit(300)).toBe('300');
    expect(ago('2026-11-22T09:58:00Z', Date.parse('2026-11-22T10:00:00Z'))).toBe('2 min ago');
  });
});

describe('N now against the model runs', () => {
  const ds = fixture<DatastoreDetail>('datastore.json');
  const load = fixture<LoadPoint[]>('datastore_load.json');

  it('agrees with the last run when nothing moved since (the recorded service)', () => {
    const r = nowAgainstLastRun(ds.normalized_load, load);
    expect(r.lastN).toBeCloseTo(load[load.length - 1].normalized_load as number);
    expect(r.lastAt).toBe(load[load.length - 1].t);
    expect(r.differs).toBe(false);
  });

  it('tells a move applied since the last run apart from rounding', () => {
    const last = load[load.length - 1].normalized_load as number;
    expect(nowAgainstLastRun(last * 4.6, load).differs).toBe(true);
    expect(nowAgainstLastRun(last * 0.5, load).differs).toBe(true);
    expect(nowAgainstLastRun(last * 1.004, load).differs).toBe(false);
  });

  it('skips runs without a figure, and says nothing without runs or without N now', () => {
    const withGap = [...load, { t: '2026-11-22T09:00:00Z', normalized_load: null }];
    expect(nowAgainstLastRun(1, withGap).lastAt).toBe(load[load.length - 1].t);
    expect(nowAgainstLastRun(1, [])).toEqual({ lastN: null, lastAt: null, differs: false });
    expect(nowAgainstLastRun(null, load).differs).toBe(false);
  });
});
