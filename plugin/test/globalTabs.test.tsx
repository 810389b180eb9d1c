import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { AuditEntry, Health, Job, JobRun, Me, Problem, Schedules } from '../src/api/types';
import { StandaloneHost } from '../src/host/host';
import { viaText } from '../src/shape/audit';
import { dateTime } from '../src/shape/format';
import { runDuration, triggerText, windowText } from '../src/shape/schedules';
import { AppContext } from '../src/views/common';
import { AuditTab, SchedulesTab } from '../src/views/GlobalTabs';
import { type Call, fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';
const SCHEDULES = fixture<Schedules>('schedules.json');
const CHANGED = fixture<Schedules>('schedules_changed.json');
const RESET = fixture<Schedules>('schedules_reset.json');
const JOBS = fixture<Job[]>('jobs.json');
const STARTED = fixture<JobRun>('job_run_started.json');
const ENDED = fixture<JobRun>('job_run.json');
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
    // Recorded from a service whose scheduler runs only the jobs asked for (health: running, no next runs).
    renderWith(<SchedulesTab />, scheduleRoutes('viewer'));
    const table = await screen.findByTestId('jobs-table');
    expect((await screen.findByTestId('scheduler-on-demand')).textContent).toContain('runs only the jobs asked for');
    expect(screen.queryByTestId('scheduler-stopped')).toBeNull();
    for (const job of JOBS) {
      const row = table.querySelector(`tr[data-job='${job.id}']`) as HTMLElement;
      expect(row).not.toBeNull();
      expect(row.textContent).toContain(job.name);
      if (job.id !== 'rebalance') expect(within(row).getByTestId('job-trigger').textContent).toBe(triggerText(job.trigger).text);
      expect(within(row).getByTestId('job-next').textContent).toBe('not scheduled: the scheduler runs only jobs asked for');
    }
    const rebalance = table.querySelector("tr[data-job='rebalance']") as HTMLElement;
    expect(within(rebalance).getByTestId('job-trigger').textContent).toContain(`window cron ${SCHEDULES.rebalance?.cron}`);
    const never = JOBS.find((j) => j.last_run === null);
    expect(never).toBeDefined();
    const neverRow = table.querySelector(`tr[data-job='${never?.id}']`) as HTMLElement;
    expect(within(neverRow).getByTestId('job-last').textContent).toBe('never');
  });

  it('says so when the scheduler is stopped, and shows next runs when it runs the schedules', async () => {
    renderWith(<SchedulesTab />, scheduleRoutes('viewer', { 'GET /health': { ...fixture<Health>('health.json'), scheduler: 'stopped' } }));
    expect((await screen.findByTestId('scheduler-stopped')).textContent).toContain('An admin can run one now');
    expect(within(screen.getByTestId('jobs-table')).getAllByTestId('job-next')[0].textContent).toBe('not scheduled: the scheduler is stopped');
    cleanup();

    const next = '2026-11-22T10:00:20+00:00';
    renderWith(<SchedulesTab />, scheduleRoutes('viewer', { 'GET /jobs': JOBS.map((j) => ({ ...j, next_run: next })) }));
    const table = await screen.findByTestId('jobs-table');
    expect(within(table).getAllByTestId('job-next').map((c) => c.textContent)).toEqual(JOBS.map(() => dateTime(next)));
    expect(screen.queryByTestId('scheduler-on-demand')).toBeNull();
    expect(screen.queryByTestId('scheduler-stopped')).toBeNull();
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
    expect(within(table).getAllByTestId('job-next')[0].textContent).toBe('not scheduled: the scheduler runs only jobs asked for');
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
    expect(notice.textContent).toContain('Basil keeps the change across restarts');
    expect(notice.textContent).not.toContain('until the service restarts');
    await waitFor(() => expect(screen.getByTestId('window-now').textContent).toContain(after));
    // The window in force now differs from basil.yaml's, and the view says which fields and who changed them.
    const differs = await screen.findByTestId('window-changed');
    expect(differs.textContent).toContain('differs from the one in basil.yaml: cron 30 1 * * sun, max_moves 12');
    expect(differs.textContent).toContain(`changed by ${CHANGED.rebalance?.changed?.by}`);
    expect(screen.queryByTestId('window-origin')).toBeNull();
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

  it('shows the window of basil.yaml as such, and lets an admin go back to it after a confirmation', async () => {
    let current = CHANGED;
    const f = renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', {
        'GET /schedules': () => ({ status: 200, body: current }),
        'DELETE /schedules/rebalance': () => {
          current = RESET;
          return { status: 200, body: RESET };
        },
      }),
    );
    const differs = await screen.findByTestId('window-changed');
    expect(differs.textContent).toContain('cron 30 1 * * sun, max_moves 12');
    expect(differs.textContent).toContain('Basil keeps these changes across restarts');
    // Asked first; cancelling sends nothing.
    fireEvent.click(screen.getByTestId('window-reset'));
    expect(screen.getByTestId('window-reset-confirm').textContent).toContain('cron 30 1 * * sun, max_moves 12');
    fireEvent.click(screen.getByTestId('window-reset-cancel'));
    expect(screen.queryByTestId('window-reset-confirm')).toBeNull();
    expect(f.calls.filter((c) => c.method === 'DELETE')).toHaveLength(0);
    fireEvent.click(screen.getByTestId('window-reset'));
    fireEvent.click(screen.getByTestId('window-reset-ok'));
    await screen.findByTestId('window-reset-notice');
    expect(f.calls.filter((c) => c.method === 'DELETE').map((c) => c.path)).toEqual(['/schedules/rebalance']);
    expect((await screen.findByTestId('window-origin')).textContent).toBe('This is the window configured in basil.yaml.');
    expect(screen.queryByTestId('window-changed')).toBeNull();
    expect(screen.queryByTestId('window-reset-confirm')).toBeNull();
    expect(screen.getByTestId('window-now').textContent).toContain(windowText(RESET.rebalance as NonNullable<Schedules['rebalance']>));
    expect((screen.getByTestId('window-cron') as HTMLInputElement).value).toBe(RESET.rebalance?.cron);
  });

  it('keeps the confirmation open with the service’s refusal of a reset', async () => {
    renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', {
        'GET /schedules': CHANGED,
        'DELETE /schedules/rebalance': () => ({ status: 503, body: { error: 'store_unavailable', message: 'the store is not reachable' } }),
      }),
    );
    fireEvent.click(await screen.findByTestId('window-reset'));
    fireEvent.click(screen.getByTestId('window-reset-ok'));
    expect((await screen.findByTestId('window-reset-error')).textContent).toBe('the store is not reachable');
    expect(screen.getByTestId('window-reset-confirm')).toBeTruthy();
    expect(screen.getByTestId('window-changed')).toBeTruthy();
    expect(screen.queryByTestId('window-reset-notice')).toBeNull();
  });

  it('shows a changed window to a non-admin without the reset', async () => {
    renderWith(<SchedulesTab />, scheduleRoutes('viewer', { 'GET /schedules': CHANGED }));
    expect((await screen.findByTestId('window-changed')).textContent).toContain('cron 30 1 * * sun, max_moves 12');
    expect(screen.queryByTestId('window-reset')).toBeNull();
  });

  it('lets an admin run a job now, shows the run started and follows it to its outcome', async () => {
    let polls = 0;
    const f = renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', {
        'POST /jobs/collect/run': () => ({ status: 202, body: STARTED }),
        [`GET /jobs/collect/runs/${STARTED.id}`]: () => {
          polls += 1;
          return { status: 200, body: polls < 2 ? STARTED : ENDED };
        },
      }),
    );
    fireEvent.click(await screen.findByTestId('run-collect'));
    const notice = await screen.findByTestId('job-notice');
    expect(notice.textContent).toBe(`Collect performance samples: run ${STARTED.id} started at ${dateTime(STARTED.started)}, running…`);
    expect((screen.getByTestId('run-collect') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('run-collect').textContent).toBe('Running…');
    await waitFor(() => expect(screen.getByTestId('job-notice').textContent).toBe(`Collect performance samples: run ${ENDED.id} succeeded in ${runDuration(ENDED)}.`), {
      timeout: 4000,
    });
    expect(polls).toBe(2);
    expect(f.calls.filter((c) => c.method === 'POST').map((c) => c.path)).toEqual(['/jobs/collect/run']);
    expect((screen.getByTestId('run-collect') as HTMLButtonElement).disabled).toBe(false);
    await waitFor(() => expect(f.calls.filter((c) => c.path === '/jobs').length).toBeGreaterThanOrEqual(3)); // reloaded: started, ended
  });

  it('says clearly when the job is running already, and follows the run in progress', async () => {
    const conflict = fixture<{ message: string }>('job_conflict.json');
    const f = renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', {
        'POST /jobs/collect/run': () => ({ status: 409, body: conflict }),
        'GET /jobs/collect/runs': [STARTED],
        [`GET /jobs/collect/runs/${STARTED.id}`]: ENDED,
      }),
    );
    fireEvent.click(await screen.findByTestId('run-collect'));
    const warning = await screen.findByTestId('job-conflict');
    expect(warning.className).toContain('alert-warning');
    expect(warning.textContent).toBe(`Collect performance samples was not started again: ${conflict.message}. Following the run in progress.`);
    await waitFor(() => expect(screen.getByTestId('job-notice').textContent).toContain(`run ${ENDED.id} succeeded`), { timeout: 4000 });
    expect(f.calls.filter((c) => c.path.startsWith('/jobs/collect/runs?')).map((c) => c.path)).toEqual(['/jobs/collect/runs?limit=1']);
  });

  it('shows a refusal that follows no run as the service said it', async () => {
    const refusal = { error: 'conflict', message: 'this service runs no scheduler, so it cannot run a job in the background' };
    renderWith(
      <SchedulesTab />,
      scheduleRoutes('admin', { 'POST /jobs/collect/run': () => ({ status: 409, body: refusal }), 'GET /jobs/collect/runs': [ENDED] }),
    );
    fireEvent.click(await screen.findByTestId('run-collect'));
    expect((await screen.findByTestId('job-conflict')).textContent).toBe(`Collect performance samples was not started again: ${refusal.message}.`);
    await waitFor(() => expect((screen.getByTestId('run-collect') as HTMLButtonElement).disabled).toBe(false));
    expect(screen.queryByTestId('job-notice')).toBeNull();
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
