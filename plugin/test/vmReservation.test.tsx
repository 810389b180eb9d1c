import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { ReactNode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { Me, VmDetail, VmReservation } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { AppContext } from '../src/views/common';
import { fractionText, uploadProblems, VmReservationPanel } from '../src/views/VmReservation';
import { VmView } from '../src/views/VmView';
import { type Call, fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';
// Recorded from the service on the lab: oltp-2's SPC trace from GET /lab/trace, 95 % within 10 ms,
// oltp-2 in the pool tree gold-tier (pool gold, reservation 150).
const RES = fixture<VmReservation>('vm_reservation.json');
const VM = fixture<VmDetail>('vm.json');
const SUGGESTION = RES.suggestion as NonNullable<VmReservation['suggestion']>;

afterEach(() => cleanup());

function renderIn(node: ReactNode, routes: Record<string, unknown | Responder>) {
  const f = fakeFetch(routes);
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  render(<AppContext.Provider value={{ api, host, open: () => undefined }}>{node}</AppContext.Provider>);
  return f;
}

const me = (role: string): Me => ({ name: `a-${role}`, role, via: 'token' });
const puts = (calls: Call[]) => calls.filter((c) => c.method === 'PUT');

describe('the reservation suggestion of a VM', () => {
  it('shows the target, the suggested reservation and the pool reservation it is compared with', async () => {
    renderIn(<VmReservationPanel id={VM.id} />, { [`GET /vms/${VM.id}/reservation`]: RES, 'GET /me': me('viewer') });
    const suggested = await screen.findByTestId('res-suggested');
    expect(suggested.textContent).toContain(`${SUGGESTION.reservation_iops.toLocaleString('en-US')} IOPS`);
    expect(SUGGESTION.reservation_iops).toBe(Math.ceil(SUGGESTION.capacity_iops));
    expect(screen.getByTestId('res-target').textContent).toContain('95 % of IOs within 10 ms');
    const current = screen.getByTestId('res-current');
    expect(current.textContent).toContain('pool tree gold-tier, pool gold');
    expect(current.textContent).toContain('150 IOPS');
    expect(screen.getByTestId('res-meets').textContent).toContain('no');
    expect(screen.getByTestId('res-meets').className).toContain('basil-stat-bad');
    expect(screen.getByTestId('res-advice').textContent).toContain(`raise its reservation to ${SUGGESTION.reservation_iops.toLocaleString('en-US')} IOPS`);
    expect(screen.getByTestId('res-trace').textContent).toContain(`${(SUGGESTION.trace.requests ?? 0).toLocaleString('en-US')} requests`);
    expect(screen.getByTestId('res-trace').textContent).toContain('(SPC)');
    expect(screen.getByTestId('res-uploaded').textContent).toContain('by fixtures');
    // A viewer reads it; only operators upload or remove.
    await waitFor(() => expect(screen.queryByTestId('trace-upload-open')).toBeNull());
    expect(screen.queryByTestId('trace-remove')).toBeNull();
  });

  it('says a reservation that covers the capacity meets the target', async () => {
    const enough = { ...RES, srp: { ...RES.srp!, reservation: SUGGESTION.reservation_iops }, meets_target: true };
    renderIn(<VmReservationPanel id={VM.id} />, { [`GET /vms/${VM.id}/reservation`]: enough, 'GET /me': me('viewer') });
    expect((await screen.findByTestId('res-meets')).textContent).toContain('yes');
    expect(screen.queryByTestId('res-advice')).toBeNull();
  });

  it('is shown in the VM view above the disks and their pool settings', async () => {
    renderIn(<VmView id={VM.id} />, {
      [`GET /vms/${VM.id}`]: VM,
      [`GET /vms/${VM.id}/reservation`]: RES,
      'GET /pools/gold-tier/entitlements': fixture('entitlements.json'),
      'GET /me': me('viewer'),
    });
    const panel = await screen.findByTestId('vm-reservation');
    await screen.findByTestId('res-suggested');
    const firstDisk = await screen.findByTestId(`disk-${VM.disks[0].instance}`);
    expect(panel.compareDocumentPosition(firstDisk) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
  });

  it('invites an upload when there is no trace yet', async () => {
    renderIn(<VmReservationPanel id={VM.id} />, {
      [`GET /vms/${VM.id}/reservation`]: { ...RES, suggestion: null, meets_target: null },
      'GET /me': me('operator'),
    });
    expect((await screen.findByTestId('no-suggestion')).textContent).toContain('No request trace');
    expect(await screen.findByTestId('trace-upload-open')).toBeTruthy();
    expect(screen.queryByTestId('trace-remove')).toBeNull();
  });

  it('lets an operator upload a trace file with a target, then shows the new answer', async () => {
    let uploaded = false;
    const f = renderIn(<VmReservationPanel id={VM.id} />, {
      [`GET /vms/${VM.id}/reservation`]: () => ({ status: 200, body: uploaded ? RES : { ...RES, suggestion: null, meets_target: null } }),
      [`PUT /vms/${VM.id}/trace`]: () => {
        uploaded = true;
        return { status: 200, body: RES };
      },
      'GET /me': me('operator'),
    });
    fireEvent.click(await screen.findByTestId('trace-upload-open'));
    const text = '0.001,4096,R\n0.002,4096,W\n';
    const file = new File([text], 'oltp-2.csv', { type: 'text/csv' });
    fireEvent.change(screen.getByTestId('trace-file'), { target: { files: [file] } });
    fireEvent.change(screen.getByTestId('trace-fraction'), { target: { value: '0.99' } });
    fireEvent.change(screen.getByTestId('trace-bound'), { target: { value: '5' } });
    fireEvent.change(screen.getByTestId('trace-format'), { target: { value: 'csv' } });
    fireEvent.click(screen.getByTestId('trace-submit'));
    await screen.findByTestId('res-suggested');
    expect(puts(f.calls).map((c) => c.body)).toEqual([{ trace: text, fraction: 0.99, bound_ms: 5, format: 'csv' }]);
    expect(screen.queryByTestId('trace-upload')).toBeNull();
  });

  it('names the field of a bad upload, before sending or as the service answers', async () => {
    const f = renderIn(<VmReservationPanel id={VM.id} />, {
      [`GET /vms/${VM.id}/reservation`]: RES,
      [`PUT /vms/${VM.id}/trace`]: () => ({
        status: 400,
        body: { error: 'invalid', message: 'invalid trace: 1 problem(s)', problems: [{ field: 'line 3', message: "timestamp must be a number of seconds, not 'late'" }] },
      }),
      'GET /me': me('admin'),
    });
    fireEvent.click(await screen.findByTestId('trace-upload-open'));
    fireEvent.change(screen.getByTestId('trace-fraction'), { target: { value: '1.5' } });
    fireEvent.click(screen.getByTestId('trace-submit'));
    const local = await screen.findByTestId('trace-error');
    expect(local.textContent).toContain('trace');
    expect(local.textContent).toContain('fraction');
    expect(puts(f.calls)).toEqual([]);
    fireEvent.change(screen.getByTestId('trace-fraction'), { target: { value: '0.9' } });
    fireEvent.change(screen.getByTestId('trace-file'), { target: { files: [new File(['0.1\n0.2\nlate\n'], 't.csv')] } });
    fireEvent.click(screen.getByTestId('trace-submit'));
    await waitFor(() => expect(screen.getByTestId('trace-error').textContent).toContain('line 3'));
    expect(puts(f.calls)).toHaveLength(1);
  });

  it('lets an operator remove the kept answer', async () => {
    let removed = false;
    const f = renderIn(<VmReservationPanel id={VM.id} />, {
      [`GET /vms/${VM.id}/reservation`]: () => ({ status: 200, body: removed ? { ...RES, suggestion: null, meets_target: null } : RES }),
      [`DELETE /vms/${VM.id}/trace`]: () => {
        removed = true;
        return { status: 204 };
      },
      'GET /me': me('operator'),
    });
    fireEvent.click(await screen.findByTestId('trace-remove'));
    await screen.findByTestId('no-suggestion');
    expect(f.calls.filter((c) => c.method === 'DELETE')).toHaveLength(1);
  });
});

describe('upload checks', () => {
  it('finds every problem of the form and none in a good one', () => {
    const file = new File(['0.1\n'], 't.csv');
    expect(uploadProblems({ file: null, fraction: '0', bound: '-1' }).map((p) => p.field)).toEqual(['trace', 'fraction', 'bound_ms']);
    expect(uploadProblems({ file, fraction: '', bound: '' }).map((p) => p.field)).toEqual(['fraction', 'bound_ms']);
    expect(uploadProblems({ file, fraction: '1', bound: '0.5' })).toEqual([]);
  });

  it('writes a fraction as the percentage given', () => {
    expect(fractionText(0.95)).toBe('95 %');
    expect(fractionText(0.999)).toBe('99.9 %');
    expect(fractionText(1)).toBe('100 %');
  });
});
