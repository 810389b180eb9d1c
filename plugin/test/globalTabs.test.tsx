import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { AuditEntry, Job, Me, Problem, Schedules } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { viaText } from '../src/shape/audit';
import { triggerText, windowText } from '../src/shape/schedules';
import { AppContext } from '../src/views/common';
import { AuditTab, SchedulesTab } from '../src/views/GlobalTabs';
import { type Call, fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';
const SCHEDULES = fixture<Schedules>('schedules.json');
const CHANGED = fixture<Schedules>('schedules_changed.json');
const JOBS = fixture<Job[]>('jobs.json');
const AUDIT = fixture<AuditEntry[]>('audit.json');

afterEach(() => cleanup());

function renderWith(node: React.ReactNode, routes: Record<string, unknown | Responder>) {
  const f = fakeFetch(routes);
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  render(<AppContext.Provider value={{ api, host, open: () => undefined }}>{node}</AppContext.Provider>);
  return f;
}

function scheduleRoutes(role: string, extra: Record<string, unknown | Responder> = {}) {
  return {
    'GET /schedules': SCHEDULES,
    'GET /jobs': JOBS,
    'GET /health': fixture('health.json'),
    'GET /me': { ...fixture<Me>('me.json'), name: `t-${role}`, role },
    ...extra,
  };
}

describe('schedules tab', () => {
  it('shows every job with its trigger in words and why none has a next run', async () => {
    renderWith(<SchedulesTab />, scheduleRoutes('viewer'));
    const table = await screen.findByTestId('jobs-table');
    await screen.findByTestId('scheduler-stopped');
    for (const job of JOBS) {
      const row = table.querySelector(`tr[data-job='${job.id}']`) as HTMLElement;
      expect(row).not.toBeNull();
      expect(row.textContent).toContain(job.name);
      if (job.id !== 'rebalance') expect(within(row).getByTestId('job-trigger').textContent).toBe(triggerText(job.trigger).text);
      expect(within(row).getByTestId('job-next').textContent).toBe('not scheduled: the scheduler is stopped');
    }
    const rebalance = table.querySelector("tr[data-job='rebalance']") as HTMLElement;
    expect(within(rebalance).getByTestId('job-trigger').textContent).toContain(`window cron ${SCHEDULES.rebalance?.cron}`);
    const never = JOBS.find((j) => j.last_run === null);
    expect(never).toBeDefined();
    const neverRow = table.querySelector(`tr[data-job='${never?.id}']`) as HTMLElement;
    expect(within(neverRow).getByTestId('job-last').textContent).toBe('never');
  });

  it('shows no job without the reason for its missing next run, however late /health answers', async () => {
    const f = fakeFetch(scheduleRoutes('admin'));
    const slowHealth = async (input: string, init?: RequestInit) => {
      if (input.endsWith('/health')) await new Promise((r) => setTimeout(r, 150));
      return f.fetch(input, init);
    };
    const host = new StandaloneHost(new MemoryStore(), null, false);
    const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: slowHealth });
    render(
      <AppContext.Provider value={{ api, host, open: () => undefined }}>
        <SchedulesTab />
      </AppContext.Provider>,
    );
    await waitFor(() => expect(f.calls.some((c) => c.path === '/jobs')).toBe(true));
    expect(screen.queryByTestId('jobs-table')).toBeNull(); // jobs are in, health is not: no table yet
    const table = await screen.findByTestId('jobs-table');
    expect(within(table).getAllByTestId('job-next')[0].textContent).toBe('not scheduled: the scheduler is stopped');
    expect(within(table).getByTestId('run-collect')).toBeTruthy();
  });

  it('shows the window read-only to a non-admin, saying why', async () => {
    renderWith(<SchedulesTab />, scheduleRoutes('operator'));
    const note = await screen.findByTestId('window-readonly');
    expect(note.textContent).toBe('Changing the window takes an admin; you are t-operator (operator).');
    expect(screen.getByTestId('window-now').textContent).toContain(windowText(SCHEDULES.rebalance as NonNullable<Schedules['rebalance']>));
    expect(screen.queryByTestId('window-form')).toBeNull();
    expect(screen.queryByTestId('run-collect')).toBeNull();
  });

  it('sends an admin’s edit of the window, only what changed, and shows the window after it', async () => {
    let changed = false;
    const f = renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', {
        'GET /schedules': () => ({ status: 200, body: changed ? CHANGED : SCHEDULES }),
        'PUT /schedules/rebalance': () => {
          changed = true;
          return { status: 200, body: CHANGED };
        },
      }),
    );
    const save = (await screen.findByTestId('window-save')) as HTMLButtonElement;
    expect(save.disabled).toBe(true); // nothing to send yet
    fireEvent.change(screen.getByTestId('window-cron'), { target: { value: CHANGED.rebalance?.cron } });
    fireEvent.change(screen.getByTestId('window-max_moves'), { target: { value: String(CHANGED.rebalance?.max_moves) } });
    expect(save.disabled).toBe(false);
    fireEvent.click(save);
    const notice = await screen.findByTestId('window-notice');
    const puts = f.calls.filter((c: Call) => c.method === 'PUT');
    expect(puts.map((c) => [c.path, c.body])).toEqual([
      ['/schedules/rebalance', { cron: CHANGED.rebalance?.cron, max_moves: CHANGED.rebalance?.max_moves }],
    ]);
    const after = windowText(CHANGED.rebalance as NonNullable<Schedules['rebalance']>);
    expect(notice.textContent).toContain('until the service restarts');
    await waitFor(() => expect(screen.getByTestId('window-now').textContent).toContain(after));
    // The form starts again from the window the service now holds.
    expect((screen.getByTestId('window-cron') as HTMLInputElement).value).toBe(CHANGED.rebalance?.cron);
    expect((screen.getByTestId('window-save') as HTMLButtonElement).disabled).toBe(true);
  });

  it('puts the service’s refusal on the fields it names and changes nothing', async () => {
    const { problems } = fixture<{ problems: Problem[] }>('window_problems.json');
    renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', { 'PUT /schedules/rebalance': () => ({ status: 400, body: fixture('window_problems.json') }) }),
    );
    fireEvent.change(await screen.findByTestId('window-cron'), { target: { value: '0 25 * * *' } });
    fireEvent.change(screen.getByTestId('window-timezone'), { target: { value: 'Mars/Olympus' } });
    fireEvent.change(screen.getByTestId('window-duration'), { target: { value: '9d' } });
    fireEvent.click(screen.getByTestId('window-save'));
    expect((await screen.findByTestId('window-error')).textContent).toContain('3 problems');
    for (const p of problems) {
      const field = p.field.replace(/^\./, '');
      expect(screen.getByTestId(`window-${field}`).getAttribute('aria-invalid')).toBe('true');
      expect(screen.getByTestId(`window-${field}-problem`).textContent).toBe(p.message);
    }
    expect(screen.getByTestId('window-max_gb').getAttribute('aria-invalid')).toBe('false');
    expect(screen.queryByTestId('window-notice')).toBeNull();
    expect(screen.getByTestId('window-now').textContent).toContain(SCHEDULES.rebalance?.cron);
  });

  it('lets an admin run a job now and shows its outcome', async () => {
    const f = renderWith(<SchedulesTab />, scheduleRoutes('admin', { 'POST /jobs/collect/run': fixture('job_run.json') }));
    fireEvent.click(await screen.findByTestId('run-collect'));
    expect((await screen.findByTestId('job-notice')).textContent).toBe('Collect performance samples: succeeded.');
    expect(f.calls.filter((c) => c.method === 'POST').map((c) => c.path)).toEqual(['/jobs/collect/run']);
    await waitFor(() => expect(f.calls.filter((c) => c.path === '/jobs').length).toBe(2)); // reloaded
  });
});

describe('audit tab', () => {
  it('shows who did what, how they signed in, from where and how it ended', async () => {
    renderWith(<AuditTab />, { 'GET /audit': AUDIT });
    const rows = await screen.findAllByTestId('audit-row');
    expect(rows).toHaveLength(AUDIT.length);
    const i = AUDIT.findIndex((e) => e.action === 'schedules.rebalance' && e.outcome === 'ok');
    const row = rows[i];
    expect(row.getAttribute('data-action')).toBe('schedules.rebalance');
    expect(within(row).getByTestId('audit-who').textContent).toBe(`${AUDIT[i].who}${viaText(AUDIT[i].via)}`);
    expect(within(row).getByTestId('audit-target').textContent).toBe('rebalance window');
    expect(within(row).getByTestId('audit-what').textContent).toBe('cron: 30 1 * * sun, max_moves: 12');
    expect(row.textContent).toContain(AUDIT[i].from);
    // Fewer entries than a page: the whole log is shown, and it says so.
    expect(screen.getByTestId('audit-end').textContent).toContain(`${AUDIT.length} entries`);
    expect(screen.queryByTestId('audit-older')).toBeNull();
  });

  it('pages back from the oldest entry shown', async () => {
    const full = Array.from({ length: 50 }, (_, k) => ({ ...AUDIT[0], id: 1000 - k, at: new Date(Date.UTC(2026, 10, 22, 10, 0, 0) - k * 1000).toISOString() }));
    const f = renderWith(<AuditTab />, {
      'GET /audit': (c: Call) => ({ status: 200, body: c.path.includes('before=') ? AUDIT.slice(0, 3) : full }),
    });
    fireEvent.click(await screen.findByTestId('audit-older'));
    await waitFor(() => expect(screen.getAllByTestId('audit-row')).toHaveLength(53));
    const paged = f.calls.filter((c) => c.path.includes('before='));
    expect(paged.map((c) => new URL(c.url).searchParams.get('before'))).toEqual([full[49].at]);
    expect(screen.getByTestId('audit-end')).toBeTruthy();
  });

  it('filters by action and by who through the API', async () => {
    const f = renderWith(<AuditTab />, { 'GET /audit': (c: Call) => ({ status: 200, body: c.path.includes('action=') ? [] : AUDIT }) });
    await screen.findAllByTestId('audit-row');
    fireEvent.change(screen.getByTestId('audit-action'), { target: { value: 'schedules.' } });
    expect((await screen.findByTestId('audit-empty')).textContent).toBe('No entry matches this filter.');
    fireEvent.change(screen.getByTestId('audit-actor'), { target: { value: 'fixtures' } });
    fireEvent.submit(screen.getByTestId('audit-actor').closest('form') as HTMLFormElement);
    await waitFor(() => expect(f.calls.some((c) => c.path === '/audit?limit=50&actor=fixtures&action=schedules.')).toBe(true));
  });

  it('says why the log is empty', async () => {
    renderWith(<AuditTab />, { 'GET /audit': [] });
    expect((await screen.findByTestId('audit-empty')).textContent).toMatch(/^Nothing recorded yet/);
  });
});
