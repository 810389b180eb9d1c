// The "What if…" dialog and its shape functions, on answers the service gave on the lab
// (tests/plugin/record_fixtures.py whatif): the BASIL §6.2 pod's 3-disk LUN with the busiest disk of
// each other LUN moved there, and the estimator's answer on a log writer beside random readers on a
// RAID 5 LUN, where the destage load saturates.
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { DiskItem, ListPage, WhatIfAnswer, WhatIfWorkload } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { compact, iops, ms, pct } from '../src/shape/format';
import { addedLatency, confidenceOf, destageWarning, diskFlags, diskUnit, signedMs, whatIfRows, whatIfSummary } from '../src/shape/whatif';
import { AppContext, vmOfDisk } from '../src/views/common';
import { WhatIfDialog, WhatIfResult } from '../src/views/WhatIf';
import { fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';
const LAB = fixture<WhatIfAnswer>('whatif_lab.json');
const DISKS = fixture<ListPage<DiskItem>>('whatif_disks_lab.json');
// POST /whatif answers without the route's datastore fields; the dialog's answer has them.
const SATURATED: WhatIfAnswer = { ...fixture<WhatIfAnswer>('whatif_saturated.json'), datastore: 'raid5-lun', moved: ['redo'], max_conn_source: 'given' };
// POST /whatif's answer on a disk whose writes were slower than a cache hit where it ran (the cache
// was full there) beside a random reader of another datastore on a RAID 6 LUN.
const FULL: WhatIfAnswer = { ...fixture<WhatIfAnswer>('whatif_full.json'), datastore: 'sata-raid6', moved: ['audit'], max_conn_source: 'given' };
const TARGET = LAB.datastore;

afterEach(() => cleanup());

function renderIn(node: ReactNode, routes: Record<string, unknown | Responder> = {}) {
  const f = fakeFetch(routes);
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  render(<AppContext.Provider value={{ api, host, open: () => undefined }}>{node}</AppContext.Provider>);
  return f;
}

const workload = (a: WhatIfAnswer, name: string): WhatIfWorkload => {
  const w = a.workloads.find((x) => x.name === name);
  if (!w) throw new Error(`no ${name} in the answer`);
  return w;
};

describe('what-if shape', () => {
  it('orders the moved disks first, in the order asked, each beside its measured figures', () => {
    const rows = whatIfRows(LAB);
    expect(rows).toHaveLength(LAB.workloads.length);
    expect(rows.slice(0, LAB.moved.length).map((r) => r.name)).toEqual(LAB.moved);
    expect(rows.map((r) => r.moved)).toEqual(rows.map((_, k) => k < LAB.moved.length));
    const input = LAB.inputs.find((i) => i.name === rows[0].name);
    expect(rows[0].input?.iops).toBeCloseTo((input?.read_iops ?? NaN) + (input?.write_iops ?? NaN));
    expect(diskUnit('vm-38:scsi0:1')).toBe('scsi0:1');
    expect(vmOfDisk('lab:vm-38:scsi0:1')).toBe('lab:vm-38');
  });

  it('lists the added positioning and destage ms only where they are not zero', () => {
    const sequentialNeighbour = LAB.workloads.find((w) => (w.positioning_added_ms ?? 0) > 0.01);
    const randomOne = LAB.workloads.find((w) => w.positioning_added_ms === 0);
    expect(sequentialNeighbour && randomOne).toBeTruthy();
    const both = addedLatency(sequentialNeighbour as WhatIfWorkload);
    expect(both.map((a) => a.kind)).toEqual(['positioning', 'destage']);
    expect(both[0].ms).toBe(sequentialNeighbour?.positioning_added_ms);
    expect(addedLatency(randomOne as WhatIfWorkload).map((a) => a.kind)).toEqual(['destage']);
    // Float dust (below a microsecond) and an answer from a service without the fields add nothing.
    expect(addedLatency({ ...(randomOne as WhatIfWorkload), destage_added_ms: 4e-4 })).toEqual([]);
    expect(addedLatency({ ...(randomOne as WhatIfWorkload), destage_added_ms: undefined })).toEqual([]);
    expect(signedMs(0.25)).toBe('+0.25 ms');
    expect(signedMs(-3.39)).toBe('−3.39 ms');
    expect(signedMs(null)).toBe('—');
  });

  it('flags sequential streams, cached writes and writes going through or waiting for a full cache', () => {
    // The recorded answer: the cache fills and stays full, every cached write goes through.
    expect(diskFlags(workload(SATURATED, 'redo')).map((f) => f.kind)).toEqual(['sequential', 'write-cached', 'write-through']);
    expect(diskFlags(workload(SATURATED, 'erp')).map((f) => f.kind)).toEqual(['write-cached', 'write-through']);
    expect(diskFlags(workload(SATURATED, 'search')).map((f) => f.kind)).toEqual(['write-cached', 'write-through']);
    // A service before task wif6 admitted them after a wait instead.
    expect(diskFlags({ ...workload(SATURATED, 'search'), write_through: false }).map((f) => f.kind)).toEqual(['write-cached', 'write-waits']);
    expect(diskFlags({ ...workload(SATURATED, 'search'), write_cached: false, write_waits: false, write_through: false })).toEqual([]);
  });

  it('flags a disk whose reads are split over several stripe units', () => {
    const split = diskFlags({ ...workload(SATURATED, 'search'), fork_join: 25 / 12 });
    expect(split.map((f) => f.kind)).toContain('split');
    expect(split.find((f) => f.kind === 'split')?.label).toBe(`split ×${compact(25 / 12)}`);
    expect(LAB.workloads.every((w) => w.fork_join === 1)).toBe(true); // the lab's 4-8 KB disks fit one unit
    expect(LAB.workloads.flatMap((w) => diskFlags(w)).some((f) => f.kind === 'split')).toBe(false);
    expect(diskFlags({ ...workload(SATURATED, 'search'), fork_join: undefined }).some((f) => f.kind === 'split')).toBe(false);
  });

  it('flags the writes that go through a cache full where a disk was measured, instead of waiting', () => {
    expect(FULL.full_where_measured).toEqual(['audit']);
    expect(FULL.cache_full).toBe(true);
    const catalog = workload(FULL, 'catalog');
    expect(catalog.write_through && catalog.write_waits).toBe(true);
    expect(diskFlags(catalog).map((f) => f.label)).toEqual(['cached writes', 'writes go through']);
    // The full disk itself: its writes were device writes where it ran, not cache hits.
    expect(diskFlags(workload(FULL, 'audit')).some((f) => f.kind === 'write-through' || f.kind === 'write-waits')).toBe(false);
  });

  it('splits the confidence sentence into its level and its reason', () => {
    expect(confidenceOf('measured alone')).toEqual({ alone: true, level: 'measured alone', reason: null });
    expect(confidenceOf(workload(LAB, LAB.moved[0]).confidence)).toEqual({
      alone: false,
      level: 'never measured alone',
      reason: 'estimated from figures shared with other disks',
    });
    expect(confidenceOf('measured with the leaving disks')).toEqual({ alone: false, level: 'measured with the leaving disks', reason: null });
  });

  it("puts the datastore's figures beside the paper's and each device parameter beside its source", () => {
    const lines = whatIfSummary(LAB);
    expect(lines.map((l) => l.key)).toEqual(['mix', 'iops', 'parallelism', 'positioning', 'stripe', 'write-cost', 'destage-cost', 'destage', 'queue']);
    const line = (k: string) => lines.find((l) => l.key === k);
    expect(line('mix')?.value).toBe(`${pct((LAB.read_mix ?? NaN) * 100)} / ${pct((LAB.write_mix ?? NaN) * 100)}`);
    expect(line('mix')?.beside).toBe(`eq. 1–2 (isolation throughputs): ${pct((LAB.paper_read_mix ?? NaN) * 100)} / ${pct((LAB.paper_write_mix ?? NaN) * 100)}`);
    expect(line('iops')?.beside).toBe(`eq. 3–4: ${iops(LAB.paper_read_iops)} / ${iops(LAB.paper_write_iops)}`);
    expect(line('parallelism')).toMatchObject({ value: compact(LAB.parallelism), source: LAB.parallelism_source });
    expect(line('positioning')).toMatchObject({ value: ms(LAB.positioning_ms), source: LAB.positioning_source });
    expect(line('stripe')).toMatchObject({ value: `${compact(64)} KB`, source: LAB.stripe_source });
    expect(LAB.stripe_source).toMatch(/^assumed: 64 KB/);
    expect(line('write-cost')).toMatchObject({ value: '1', source: LAB.write_cost_source, beside: 'writes ≤ 1.00 ms alone taken as cached' });
    // The lab's 3-disk LUN: c from its device model with its disks' destaging separated (the service's own samples).
    expect(LAB.destage_source).toMatch(/^device model, destaging separated \(\d+ intervals\) \(c\)$/);
    expect(line('destage-cost')).toMatchObject({ value: ms(LAB.destage_ms), source: LAB.destage_source, beside: null, warn: false });
    expect(line('destage')).toMatchObject({ value: `+${compact((LAB.destage_util ?? NaN) * 100)} %`, warn: false, beside: null });
    expect(line('queue')?.source).toBe('datastoreMaxQueueDepth');
    expect(destageWarning(LAB)).toBeNull();
  });

  it('says what a parameter turned off means, and warns when destaging saturates', () => {
    const off = whatIfSummary({ ...SATURATED, positioning_ms: null, write_cost: null, write_cache_ms: null });
    expect(off.find((l) => l.key === 'positioning')?.value).toBe('not corrected');
    expect(whatIfSummary({ ...SATURATED, stripe_kb: null }).find((l) => l.key === 'stripe')).toMatchObject({ value: 'IO sizes not used', source: null });
    expect(off.find((l) => l.key === 'write-cost')).toMatchObject({ value: 'cached writes free', beside: 'no write taken as cached' });
    // Without t_pos there is no destage cost either; POST /whatif's default is t_pos / m.
    expect(whatIfSummary({ ...SATURATED, positioning_ms: null, destage_ms: null }).find((l) => l.key === 'destage-cost')?.value).toBe('none (no t_pos)');
    expect(whatIfSummary(SATURATED).find((l) => l.key === 'destage-cost')).toMatchObject({ value: ms(4), source: SATURATED.destage_source });
    // The recorded answer's cache fills and stays full: its steady state, every cached write
    // through to the devices, no admission wait.
    expect(SATURATED.cache_full).toBe(true);
    expect(SATURATED.admission_wait_ms).toBe(0);
    const destage = whatIfSummary(SATURATED).find((l) => l.key === 'destage');
    expect(destage).toMatchObject({ warn: true, beside: 'at its bound: the write cache is full' });
    const warning = destageWarning(SATURATED);
    expect(warning).toContain(`(${pct((SATURATED.destage_demand ?? NaN) * 100)} more of their time)`);
    expect(warning).toContain('the write cache fills and stays full, so the cached writes of redo, erp, search go through to the devices');
    expect(warning).not.toContain('wait about');
    // A service before task wif6 admitted the cached writes after a wait, at the rate the devices destage.
    const admitting: WhatIfAnswer = {
      ...SATURATED,
      admission_wait_ms: 5,
      workloads: SATURATED.workloads.map((w) => ({ ...w, write_through: false })),
    };
    const waits = destageWarning(admitting);
    expect(waits).toContain(`wait about ${ms(5)} each`);
    expect(waits).toContain(`${iops(SATURATED.admitted_write_iops)} IO/s of them admitted`);
    for (const w of admitting.workloads) {
      expect(diskFlags(w).some((f) => f.kind === 'write-waits')).toBe(w.write_waits === true);
    }
    // At the bound without a full cache (an estimator with the filling cache turned off).
    const bounded: WhatIfAnswer = { ...SATURATED, cache_full: false };
    expect(whatIfSummary(bounded).find((l) => l.key === 'destage')).toMatchObject({ warn: true, beside: 'at its bound: the write cache would fill' });
    expect(destageWarning(bounded)).toContain(`${pct((SATURATED.destage_util ?? NaN) * 100)} more of the devices' time`);
  });

  it('reads an answer of a service older than these fields', () => {
    const { read_mix, write_mix, read_iops, write_iops, overhead_factor, max_conn, write_share, workloads, inputs } = LAB;
    const old: WhatIfAnswer = { ...{ datastore: TARGET, moved: LAB.moved, max_conn_source: LAB.max_conn_source }, read_mix, write_mix, read_iops, write_iops, overhead_factor, max_conn, write_share, workloads, inputs };
    const lines = whatIfSummary(old);
    expect(lines.map((l) => l.key)).toEqual(['mix', 'iops', 'queue']);
    expect(lines[0].beside).toBeNull();
    expect(destageWarning(old)).toBeNull();
  });
});

describe('what-if dialog', () => {
  const names = new Map(DISKS.items.map((d) => [d.id, d]));

  it('asks the service for the disks picked and shows the whole answer', async () => {
    let closed = 0;
    const f = renderIn(<WhatIfDialog datastoreId={TARGET} datastoreName="3diskLUN" pod="basil" onClose={() => (closed += 1)} />, {
      'GET /disks': DISKS,
      [`POST /datastores/${TARGET}/whatif`]: LAB,
    });
    const list = await screen.findByTestId('whatif-candidates');
    // The disks already on the target are not offered.
    const offered = [...list.querySelectorAll('[data-disk]')].map((e) => e.getAttribute('data-disk'));
    expect(offered).toEqual(DISKS.items.filter((d) => d.datastore.id !== TARGET).map((d) => d.id));
    expect((screen.getByTestId('whatif-ask') as HTMLButtonElement).disabled).toBe(true);
    for (const id of LAB.moved) fireEvent.click(within(list.querySelector(`[data-disk="${id}"]`) as HTMLElement).getByTestId('whatif-pick'));
    fireEvent.click(screen.getByTestId('whatif-ask'));
    const answer = await screen.findByTestId('whatif-answer');
    expect(f.calls.find((c) => c.method === 'POST')?.body).toEqual({ disks: LAB.moved });

    const rows = within(screen.getByTestId('whatif-table')).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.getAttribute('data-disk'))).toEqual(whatIfRows(LAB).map((r) => r.name));
    // The moved disk whose sequential share the interleaving breaks up: both added latencies.
    const movedName = LAB.moved.find((n) => (workload(LAB, n).positioning_added_ms ?? 0) > 0.01) as string;
    const moved = answer.querySelector(`tr[data-disk="${movedName}"]`) as HTMLElement;
    const w = workload(LAB, movedName);
    const input = LAB.inputs.find((i) => i.name === movedName);
    expect(moved.getAttribute('data-moved')).toBe('yes');
    expect(within(moved).getByTestId('vm-link').textContent).toBe(names.get(movedName)?.vm.name);
    expect(within(moved).getByTestId('whatif-iops').textContent).toBe(`${iops((input?.read_iops ?? 0) + (input?.write_iops ?? 0))} → ${iops(w.iops)}`);
    expect(within(moved).getByTestId('whatif-read-latency').textContent).toBe(`${ms(input?.read_latency_ms)} → ${ms(w.read_latency_ms)}`);
    const added = within(moved).getByTestId('whatif-added');
    expect((added.querySelector('[data-added="positioning"]') as HTMLElement).textContent).toBe(`${signedMs(w.positioning_added_ms)} positioning`);
    expect((added.querySelector('[data-added="destage"]') as HTMLElement).textContent).toBe(`${signedMs(w.destage_added_ms)} destage`);
    expect(within(moved).getByTestId('whatif-flags').textContent).toBe('cached writes');
    expect(within(moved).getByTestId('whatif-confidence-level').textContent).toBe('never measured alone');
    expect(within(moved).getByTestId('whatif-confidence-reason').textContent).toBe('estimated from figures shared with other disks');
    // A disk whose runs nothing breaks: the destage stretch only.
    const random = answer.querySelector(`tr[data-disk="${LAB.workloads.find((x) => x.positioning_added_ms === 0)?.name}"]`) as HTMLElement;
    expect([...within(random).getByTestId('whatif-added').querySelectorAll('[data-added]')].map((e) => e.getAttribute('data-added'))).toEqual(['destage']);

    const summary = screen.getByTestId('whatif-summary');
    const mix = summary.querySelector('tr[data-line="mix"]') as HTMLElement;
    expect(within(mix).getByTestId('whatif-summary-beside').textContent).toContain('eq. 1–2');
    const positioning = summary.querySelector('tr[data-line="positioning"]') as HTMLElement;
    expect(within(positioning).getByTestId('whatif-summary-source').textContent).toBe(LAB.positioning_source);
    expect(summary.querySelector('tr[data-line="write-cost"]')?.textContent).toContain(LAB.write_cost_source);
    const cost = summary.querySelector('tr[data-line="destage-cost"]') as HTMLElement;
    expect(within(cost).getByTestId('whatif-summary-value').textContent).toBe(ms(LAB.destage_ms));
    expect(within(cost).getByTestId('whatif-summary-source').textContent).toBe(LAB.destage_source);
    expect(screen.queryByTestId('whatif-destage-saturated')).toBeNull();
    expect(answer.textContent).toContain(`reads ${pct((LAB.read_mix ?? NaN) * 100)} of the IOs`);

    // The inputs, folded away: one row per disk, with its random share.
    const inputs = screen.getByTestId('whatif-inputs-section') as HTMLDetailsElement;
    expect(inputs.open).toBe(false);
    expect(within(screen.getByTestId('whatif-inputs')).getAllByRole('row')).toHaveLength(LAB.inputs.length + 1);
    const inputRow = screen.getByTestId('whatif-inputs').querySelector(`tr[data-disk="${movedName}"]`) as HTMLElement;
    expect(within(inputRow).getByTestId('whatif-input-random').textContent).toBe(pct(input?.random_pct));
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(closed).toBe(1);
  });

  it('warns when the cached writes fill the cache, and flags the writes that go through', () => {
    renderIn(<WhatIfResult answer={SATURATED} names={new Map()} />);
    expect(screen.getByTestId('whatif-destage-saturated').textContent).toBe(destageWarning(SATURATED));
    const line = screen.getByTestId('whatif-summary').querySelector('tr[data-line="destage"]') as HTMLElement;
    expect(line.className).toBe('basil-warn');
    const redo = screen.getByTestId('whatif-table').querySelector('tr[data-disk="redo"]') as HTMLElement;
    expect([...within(redo).getByTestId('whatif-flags').querySelectorAll('[data-label]')].map((e) => e.textContent)).toEqual(['sequential', 'cached writes', 'writes go through']);
    expect(within(redo).getByTestId('whatif-confidence').getAttribute('data-alone')).toBe('yes');
    expect(within(redo).queryByTestId('whatif-confidence-reason')).toBeNull();
  });

  it('warns when the cache was full where a disk was measured, and names the writes that go through', () => {
    const warning = destageWarning(FULL) ?? '';
    expect(warning).toBe(
      'The write cache was already full where audit ran: its writes were slower than a cache hit, so here they count as writes to the devices. ' +
        'The cached writes of catalog go through to the devices with the RAID write penalty.',
    );
    // The writes go through rather than wait for admission: no word of admission waits.
    expect(warning).not.toContain('cannot destage');
    expect(whatIfSummary(FULL).find((l) => l.key === 'destage')).toMatchObject({ beside: 'the write cache was full or at its limit where measured', warn: true });
    // Two disks measured full, no writes going through: their plural, and the sentence ends there.
    const two: WhatIfAnswer = { ...FULL, full_where_measured: ['audit', 'wal'], workloads: FULL.workloads.map((w) => ({ ...w, write_through: false })) };
    expect(destageWarning(two)).toBe('The write cache was already full where audit, wal ran: their writes were slower than a cache hit, so here they count as writes to the devices.');
    // A cache at its limit where a disk's cached writes were measured (slower than two cache hits):
    // beside another group's disks it fills, and both their cached writes go through.
    const edge: WhatIfAnswer = {
      ...FULL,
      full_where_measured: [],
      edge_where_measured: ['ledger'],
      workloads: FULL.workloads.map((w) => ({ ...w, write_through: true })),
    };
    expect(destageWarning(edge)).toBe(
      'The write cache was at its limit where ledger ran: its cached writes were slower than two cache hits, so beside the other disks here it fills. ' +
        'The cached writes of audit, catalog go through to the devices with the RAID write penalty.',
    );
    expect(whatIfSummary(edge).find((l) => l.key === 'destage')).toMatchObject({ beside: 'the write cache was full or at its limit where measured', warn: true });
    renderIn(<WhatIfResult answer={FULL} names={new Map()} />);
    expect(screen.getByTestId('whatif-destage-saturated').textContent).toBe(warning);
    const row = screen.getByTestId('whatif-table').querySelector('tr[data-disk="catalog"]') as HTMLElement;
    expect([...within(row).getByTestId('whatif-flags').querySelectorAll('[data-label]')].map((e) => e.textContent)).toEqual(['cached writes', 'writes go through']);
  });

  it('shows the service’s problem with a disk', async () => {
    const other = DISKS.items.find((d) => d.datastore.id !== TARGET) as DiskItem;
    renderIn(<WhatIfDialog datastoreId={TARGET} datastoreName="3diskLUN" pod="basil" onClose={() => undefined} />, {
      'GET /disks': DISKS,
      [`POST /datastores/${TARGET}/whatif`]: () => ({
        status: 400,
        body: { error: 'invalid', message: 'what-if: 1 problem', problems: [{ field: 'disks[0]', message: `'${other.id}' has no sample yet: collect first` }] },
      }),
    });
    const list = await screen.findByTestId('whatif-candidates');
    fireEvent.click(within(list.querySelector(`[data-disk="${other.id}"]`) as HTMLElement).getByTestId('whatif-pick'));
    fireEvent.click(screen.getByTestId('whatif-ask'));
    expect((await screen.findByTestId('whatif-error')).textContent).toContain('no sample yet');
    expect(screen.queryByTestId('whatif-answer')).toBeNull();
  });
});
