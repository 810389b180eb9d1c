import { cleanup, render, screen, within } from '@testing-library/react';
import type { JSX } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { PinnedBlocking, PodSummary, PredictionCheck, Recommendation } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { absPct, isStale, pinnedSummary, predictionErrorLine, predictionRows, signedPct } from '../src/shape/recommendation';
import { AppContext } from '../src/views/common';
import { PredictionPanel, RecommendationPanel } from '../src/views/Recommendations';
import { fakeFetch, fixture, MemoryStore } from './helpers';

const BASE = 'https://basil.test/api/v1';
const POD = fixture<PodSummary[]>('pods.json')[0];

afterEach(() => cleanup());

function renderWith(routes: Record<string, unknown>, node: JSX.Element) {
  const f = fakeFetch({ 'GET /plans': [], ...routes });
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  render(<AppContext.Provider value={{ api, host, open: () => undefined }}>{node}</AppContext.Provider>);
  return f;
}

// Two units the service would list when a pod stays over its threshold (the shape of pinned_blocking).
const PINNED: PinnedBlocking[] = [
  {
    vm: 'vm-41', vm_name: 'oltp-1', disks: ['lab:vm-41:scsi0:1'], datastore: 'datastore-30', datastore_name: '6diskLUN',
    code: 'ping_pong', reason: 'disk oltp-1:scsi0:1 moved 1.0 h ago (< 24 h ping-pong window)',
    best_target: 'datastore-32', best_target_name: '9diskLUN', imbalance_if_moved: 0.12,
  },
  {
    vm: 'vm-42', vm_name: 'oltp-2', disks: ['lab:vm-42:scsi0:1', 'lab:vm-42:scsi0:2'], datastore: 'datastore-30',
    datastore_name: '6diskLUN', code: 'excluded_vm', reason: 'VM oltp-2 is excluded from balancing',
    best_target: 'datastore-28', best_target_name: '3diskLUN', imbalance_if_moved: 0.15,
  },
];

describe('recommendation state', () => {
  it('reads the service’s stale flag', () => {
    const stale = fixture<Recommendation>('recommendation_stale.json');
    expect(isStale(stale)).toBe(true);
    expect(isStale(fixture<Recommendation>('recommendation.json'))).toBe(false);
  });

  it('says how many disks cannot move, and why', () => {
    expect(pinnedSummary(PINNED)).toBe(
      '3 disks that would lower the imbalance cannot move: 2 excluded from balancing, 1 moved within the ping-pong window',
    );
    expect(pinnedSummary(PINNED.slice(0, 1), 5)).toContain('(1 of 5 units listed)');
  });

  it('writes errors as percentages', () => {
    expect(signedPct(0.123)).toBe('+12 %');
    expect(signedPct(-0.4)).toBe('-40 %');
    expect(absPct(-0.4)).toBe('±40 %');
    expect(signedPct(null)).toBe('—');
    expect(predictionErrorLine(null)).toBe('no applied plan measured yet');
  });
});

describe('recommendation panel', () => {
  it('shows a stale recommendation with its reason and offers no plan from it', async () => {
    const stale = fixture<Recommendation>('recommendation_stale.json');
    renderWith({ [`GET /pods/${POD.name}/recommendations`]: stale }, <RecommendationPanel pod={POD.name} datastores={POD.datastores} />);
    const alert = await screen.findByTestId('stale');
    expect(alert.textContent).toContain(stale.stale_reason as string);
    expect(screen.getByTestId('stale-hint')).toBeTruthy();
    expect(screen.queryByTestId('apply')).toBeNull();
    expect(screen.queryByTestId('approve')).toBeNull();
  });

  it('lists the pinned disks that keep a pod over its threshold', async () => {
    const rec = fixture<Recommendation>('recommendation.json');
    const stuck: Recommendation = { ...rec, moves: [], pinned_blocking: PINNED, pinned_blocking_total: 2 };
    renderWith({ [`GET /pods/${POD.name}/recommendations`]: stuck }, <RecommendationPanel pod={POD.name} datastores={POD.datastores} />);
    const block = await screen.findByTestId('pinned-blocking');
    expect(block.textContent).toContain('3 disks that would lower the imbalance cannot move');
    const rows = within(block).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.getAttribute('data-code'))).toEqual(['ping_pong', 'excluded_vm']);
    expect(rows[0].textContent).toContain('< 24 h ping-pong window');
    expect(rows[1].textContent).toContain('(to 3diskLUN)');
  });
});

describe('prediction panel', () => {
  it('shows the newest applied plan’s prediction against the measurement an hour later', async () => {
    const checks = fixture<PredictionCheck[]>('predictions.json');
    const newest = checks[0];
    renderWith({ [`GET /pods/${POD.name}/predictions`]: checks }, <PredictionPanel pod={POD.name} />);
    const line = await screen.findByTestId('prediction-error');
    expect(newest.state).toBe('measured');
    expect(line.textContent).toContain(`Plan ${newest.plan}`);
    expect(line.textContent).toContain(predictionErrorLine(newest.error));
    const rows = within(screen.getByTestId('prediction-table')).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.getAttribute('data-datastore'))).toEqual(newest.datastores.map((d) => d.name));
    const shaped = predictionRows(newest);
    rows.forEach((row, i) => {
      expect(row.textContent).toContain(shaped[i].latency.error);
      expect(row.textContent).toContain(shaped[i].iops.measured);
    });
  });

  it('says so when no plan has moved disks yet', async () => {
    renderWith({ [`GET /pods/${POD.name}/predictions`]: [] }, <PredictionPanel pod={POD.name} />);
    expect(await screen.findByText(`No plan has moved disks of ${POD.name} yet.`)).toBeTruthy();
  });
});
