import { cleanup, render, screen, within } from '@testing-library/react';
import type { JSX } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { PodSummary, Recommendation, SloHistory } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { otherUnmet, sloGroupRows, sloHistoryGroups, sloMoveLine, sloOf } from '../src/shape/slo';
import { AppContext } from '../src/views/common';
import { RecommendationPanel } from '../src/views/Recommendations';
import { fakeFetch, fixture, MemoryStore } from './helpers';

const BASE = 'https://basil.test/api/v1';
const POD = fixture<PodSummary[]>('pods.json')[0];
// Shaped from core/slo.py's pod_report_dict / effect_dict (the API's SloRound and SloMoveEffect).
const SLO_REC = fixture<Recommendation>('recommendation_slo.json');
// Recorded from GET /pods/slo-pod/slo/history on the lab's slo-tiers scenario: a round, its plan
// applied (gold to the SSD), then two more rounds.
const HISTORY = fixture<SloHistory>('slo_history_lab.json');

afterEach(() => cleanup());

function renderWith(routes: Record<string, unknown>, node: JSX.Element) {
  const f = fakeFetch({ 'GET /plans': [], ...routes });
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  render(<AppContext.Provider value={{ api, host, open: () => undefined }}>{node}</AppContext.Provider>);
  return f;
}

describe('slo shaping', () => {
  it('finds the SLO section only on a pod with goal slo', () => {
    expect(sloOf(SLO_REC)?.groups.map((g) => g.name)).toEqual(['gold', 'silver', 'bronze']);
    expect(sloOf(fixture<Recommendation>('recommendation.json'))).toBeNull();
    expect(sloOf(null)).toBeNull();
  });

  it('gives each group its DRT, RTs, damage change and the service’s unmet sentence', () => {
    const rows = sloGroupRows(sloOf(SLO_REC)!);
    expect(rows[0]).toEqual({
      name: 'gold',
      drt: '2.00 ms',
      measured: '19.7 ms',
      predictedNow: '21.4 ms',
      predictedAfter: '2.60 ms',
      damage: '38,211 → 1,360',
      met: false,
      unmet: 'group gold misses its DRT of 2 ms by 0.6 ms (predicted 2.6 ms after the recommended moves)',
    });
    expect(rows[1]).toMatchObject({ name: 'silver', met: true, unmet: null, damage: '49.6 → 49.7' });
    expect(rows[2]).toMatchObject({ name: 'bronze', met: true, damage: '0 → 0' });
    expect(otherUnmet(sloOf(SLO_REC)!)).toEqual([]);
  });

  it('keeps an unmet sentence that names no group, and words a group missing without one', () => {
    const slo = sloOf(SLO_REC)!;
    const odd = { ...slo, unmet: ['the pod cannot be measured'] };
    expect(otherUnmet(odd)).toEqual(['the pod cannot be measured']);
    expect(sloGroupRows(odd)[0].unmet).toBe('gold: predicted 2.60 ms after the moves, above its DRT 2.00 ms');
  });

  it('writes each SLO move’s group RTs and damage change', () => {
    expect(sloMoveLine(SLO_REC.moves[0])).toBe('gold 21.4 ms → 0.62 ms; bronze 1.10 ms → 1.40 ms; damage 38,211 → 1,205');
    expect(sloMoveLine(fixture<Recommendation>('recommendation.json').moves[0])).toBeNull();
  });
});

describe('slo panel', () => {
  it('shows a panel per group and each move’s SLO effect for a pod with goal slo', async () => {
    renderWith({ [`GET /pods/${POD.name}/recommendations`]: SLO_REC }, <RecommendationPanel pod={POD.name} datastores={POD.datastores} />);
    const panel = await screen.findByTestId('slo-panel');
    expect(screen.getByTestId('slo-summary').textContent).toContain('38,260');
    expect(screen.getByTestId('slo-damage-after').textContent).toBe('1,410');
    const rows = within(panel).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.getAttribute('data-group'))).toEqual(['gold', 'silver', 'bronze']);
    expect(rows[0].textContent).toContain('unmet');
    expect(within(rows[0]).getByTestId('slo-unmet').textContent).toContain('group gold misses its DRT of 2 ms');
    expect(rows[1].textContent).toContain('met');
    expect(within(panel).getAllByTestId('slo-unmet')).toHaveLength(1);
    expect(screen.getByTestId('slo-move').textContent).toContain('gold 21.4 ms → 0.62 ms');
  });

  it('shows the lab’s real answer (slo-tiers scenario, recorded from POST /pods/slo-pod/recommendations)', async () => {
    const real = fixture<Recommendation>('recommendation_slo_lab.json');
    renderWith({ [`GET /pods/${POD.name}/recommendations`]: real }, <RecommendationPanel pod={POD.name} datastores={POD.datastores} />);
    const panel = await screen.findByTestId('slo-panel');
    const slo = sloOf(real)!;
    const rows = within(panel).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.getAttribute('data-group'))).toEqual(slo.groups.map((g) => g.name));
    sloGroupRows(slo).forEach((g, i) => {
      expect(rows[i].textContent).toContain(g.measured);
      expect(rows[i].textContent).toContain(g.predictedAfter);
      expect(rows[i].textContent).toContain(g.damage);
    });
    expect(within(panel).queryAllByTestId('slo-unmet')).toHaveLength(slo.unmet.length);
    const lines = screen.getAllByTestId('slo-move').map((e) => e.textContent);
    expect(lines).toEqual(real.moves.map((m) => sloMoveLine(m)));
  });

  it('leaves a balance-goal pod’s recommendation as it was', async () => {
    renderWith(
      { [`GET /pods/${POD.name}/recommendations`]: fixture<Recommendation>('recommendation.json') },
      <RecommendationPanel pod={POD.name} datastores={POD.datastores} />,
    );
    await screen.findByTestId('moves-table');
    expect(screen.queryByTestId('slo-panel')).toBeNull();
    expect(screen.queryByTestId('slo-move')).toBeNull();
  });
});

describe('slo history', () => {
  it('gives each group its measured and predicted RT and damage per round, and its DRT', () => {
    const groups = sloHistoryGroups(HISTORY);
    expect(groups.map((g) => g.name)).toEqual(['gold', 'silver', 'bronze']);
    const gold = groups[0];
    expect(gold.drtMs).toBe(2);
    const measured = gold.rt.find((s) => s.name === 'measured')!;
    expect(measured.points).toHaveLength(HISTORY.points.length);
    expect(measured.points.map((p) => p.y)).toEqual(HISTORY.points.map((p) => p.groups.find((g) => g.name === 'gold')!.measured_ms));
    // Gold started on SATA and FC, above its DRT, and is within it once the plan moved it.
    expect(measured.points[0].y!).toBeGreaterThan(2);
    expect(measured.points.at(-1)!.y!).toBeLessThan(2);
    expect(gold.rt.find((s) => s.dashed)!.name).toBe('predicted after the moves');
    expect(gold.damage.find((s) => s.name === 'measured')!.points[0].y).toBeGreaterThan(0);
    expect(gold.withinNow).toBe('100 %');
    const xs = measured.points.map((p) => p.x);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
  });

  it('starts a group added later where it first appears, and says — when nothing is measured', () => {
    const [first, ...rest] = HISTORY.points;
    const later: SloHistory = {
      ...HISTORY,
      points: [
        { ...first, groups: first.groups.filter((g) => g.name !== 'bronze') },
        ...rest.map((p) => ({ ...p, groups: p.groups.map((g) => (g.name === 'bronze' ? { ...g, measured_within_drt: null } : g)) })),
      ],
    };
    const bronze = sloHistoryGroups(later).find((g) => g.name === 'bronze')!;
    expect(bronze.rt[0].points[0].y).toBeNull();
    expect(bronze.rt[0].points[1].y).not.toBeNull();
    expect(bronze.withinNow).toBe('—');
    expect(sloHistoryGroups({ ...HISTORY, points: [] })).toEqual([]);
  });

  it('charts each group over time in the SLO panel, with the DRT line', async () => {
    const f = renderWith(
      { [`GET /pods/${POD.name}/recommendations`]: SLO_REC, [`GET /pods/${POD.name}/slo/history`]: HISTORY },
      <RecommendationPanel pod={POD.name} datastores={POD.datastores} />,
    );
    const groups = await screen.findAllByTestId('slo-history-group');
    expect(groups.map((g) => g.getAttribute('data-group'))).toEqual(['gold', 'silver', 'bronze']);
    expect(groups[0].textContent).toContain('gold: DRT 2.00 ms, 100 % of its measured disks within it');
    expect(within(groups[1]).getByTestId('slo-rt-chart-reference').textContent).toBe('DRT 15.0 ms');
    const rt = within(groups[0]).getByTestId('slo-rt-chart');
    expect(rt.querySelector('path[data-series="measured"]')).not.toBeNull();
    expect(rt.querySelectorAll('circle[data-point="measured"]')).toHaveLength(HISTORY.points.length);
    expect(within(groups[0]).getByTestId('slo-damage-chart').querySelector('path[data-series="predicted"]')).not.toBeNull();
    expect(f.calls.some((c) => c.method === 'GET' && c.path === `/pods/${POD.name}/slo/history`)).toBe(true);
  });
});
