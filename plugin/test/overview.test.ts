import { describe, expect, it } from 'vitest';
import type { Plan, PodDetail, PodSummary, Recommendation } from '../src/api/types';
import { ago, compact, gb, limit, ms } from '../src/shape/format';
import {
  datastoreRows,
  imbalanceStatus,
  isPlanFinal,
  moveEffect,
  movesSummary,
  pendingMoveCount,
  planProgress,
  recommendationBars,
  splitMoves,
} from '../src/shape/overview';
import { fixture } from './helpers';

const pod = fixture<PodSummary[]>('pods.json')[0];

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
    expect(rows.map((r) => r.ds.name)).toEqual(['3diskLUN', '6diskLUN', '9diskLUN']);
    expect(rows[0].share).toBe(1);
    expect(rows[2].share).toBeCloseTo(0.52 / 4.15);
    expect(rows[0].usedPct).toBeCloseTo((100 * (150 - 92)) / 150);
  });

  it('puts datastores without a load last and flags why they stand out', () => {
    const odd = { ...pod.datastores[0], id: 'datastore-9', name: 'new-lun', normalized_load: null, model_status: 'insufficient_data', maintenance: true };
    const rows = datastoreRows([odd, ...pod.datastores]);
    expect(rows[rows.length - 1].ds.name).toBe('new-lun');
    expect(rows[rows.length - 1].flags).toEqual(['maintenance', 'model: insufficient_data']);
    expect(rows[rows.length - 1].share).toBe(0);
  });

  it('counts pending moves given as a number or as a list', () => {
    expect(pendingMoveCount({ pending_moves: 3 })).toBe(3);
    expect(pendingMoveCount({ pending_moves: fixture<PodDetail>('pod.json').recent_moves ?? [] })).toBe(1);
  });
});

describe('recommendations and plans', () => {
  const rec = fixture<Recommendation>('recommendation.json');

  it('says what a move is predicted to do, with datastore names', () => {
    expect(moveEffect(rec.moves[0], pod.datastores)).toBe(
      '3diskLUN: N 4.15 → 2.46; 9diskLUN: N 0.52 → 1.11; imbalance 0.69 → 0.33',
    );
  });

  it('pairs every datastore’s N before and after the moves', () => {
    const bars = recommendationBars(rec, pod.datastores);
    expect(bars.map((b) => [b.name, b.before, b.after])).toEqual([
      ['3diskLUN', 4.15, 2.46],
      ['6diskLUN', 2.21, 1.75],
      ['9diskLUN', 0.52, 1.43],
    ]);
  });

  it('sums what the moves copy', () => {
    expect(movesSummary(rec.moves)).toBe('2 disks, 20.0 GB to copy');
    expect(movesSummary(rec.moves.slice(0, 1))).toBe('1 disk, 10.0 GB to copy');
  });

  it('takes the service’s plan progress, or averages the moves', () => {
    const running = fixture<Plan>('plan_running.json');
    expect(planProgress(running)).toBe(70);
    expect(planProgress({ ...running, progress: null })).toBe(70);
    expect(planProgress({ ...fixture<Plan>('plan_proposed.json'), progress: undefined })).toBe(0);
    expect(isPlanFinal(running)).toBe(false);
    expect(isPlanFinal(fixture<Plan>('plan_succeeded.json'))).toBe(true);
  });

  it('splits plans into pending and recent moves, newest first', () => {
    const a = fixture<Plan>('plan_running.json');
    const b = { ...fixture<Plan>('plan_succeeded.json'), id: 4, updated_at: '2026-11-22T08:00:00Z' };
    const { pending, recent } = splitMoves([b, a]);
    expect(pending.map((m) => m.disk)).toEqual(['vm-205:scsi0:1']);
    expect(recent.map((m) => [m.plan.id, m.disk])).toEqual([
      [5, 'vm-201:scsi0:1'],
      [4, 'vm-201:scsi0:1'],
      [4, 'vm-205:scsi0:1'],
    ]);
  });
});

describe('formatting', () => {
  it('reads numbers at a useful precision, with a dash for unknowns', () => {
    expect(compact(4.15)).toBe('4.15');
    expect(compact(37.4)).toBe('37.4');
    expect(compact(1538)).toBe('1,538');
    expect(compact(null)).toBe('—');
    expect(ms(6.9)).toBe('6.90 ms');
    expect(gb(2048)).toBe('2.0 TB');
    expect(limit(-1)).toBe('unlimited');
    expect(limit(300)).toBe('300');
    expect(ago('2026-11-22T09:58:00Z', Date.parse('2026-11-22T10:00:00Z'))).toBe('2 min ago');
  });
});
