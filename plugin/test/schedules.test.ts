import { describe, expect, it } from 'vitest';
import type { Health, Job, JobRun, Problem, RebalanceWindow, Schedules } from '../src/api/types';
import { dateTime } from '../src/shape/format';
import {
  changedFieldsText,
  everyText,
  nextRunText,
  otherProblems,
  problemsFor,
  runDuration,
  runNotice,
  runPollDelay,
  schedulerState,
  triggerText,
  windowChanges,
  windowForm,
  windowText,
} from '../src/shape/schedules';
import { fixture } from './helpers';

const JOBS = fixture<Job[]>('jobs.json');
const WINDOW = fixture<Schedules>('schedules.json').rebalance as RebalanceWindow;

describe('job triggers in words', () => {
  it('reads the service’s interval triggers', () => {
    const byId = Object.fromEntries(JOBS.map((j) => [j.id, triggerText(j.trigger).text]));
    expect(byId.collect).toBe('every 20 s');
    expect(byId.inventory).toBe('every 5 min');
    expect(byId.model).toBe('every 1 min');
  });

  it('keeps only the cron fields that restrict, and the raw trigger for a tooltip', () => {
    const rebalance = JOBS.find((j) => j.id === 'rebalance');
    expect(rebalance).toBeDefined();
    const t = triggerText(rebalance?.trigger);
    expect(t.text).toBe('cron: day of week sat, hour 2, minute 0');
    expect(t.raw).toBe(rebalance?.trigger);
    expect(triggerText("cron[month='*', day='*', hour='*', minute='*']").text).toBe('cron: every minute');
  });

  it('reads days, odd periods, no trigger and anything else', () => {
    expect(triggerText('interval[1 day, 2:30:00]').text).toBe('every 1 d 2 h 30 min');
    expect(triggerText('interval[2 days, 0:00:00]').text).toBe('every 2 d');
    expect(triggerText('interval[0:00:07.500000]').text).toBe('every 7 s');
    expect(triggerText(null)).toEqual({ text: 'off', raw: '' });
    expect(triggerText('date[2026-11-22 10:00:00 UTC]').text).toBe('date[2026-11-22 10:00:00 UTC]');
    expect(everyText(0)).toBe('—');
    expect(everyText(3600)).toBe('every 1 h');
  });
});

describe('next and last runs', () => {
  const job = JOBS[0];

  it('gives the next run, or why there is none', () => {
    expect(nextRunText({ ...job, next_run: '2026-11-22T10:00:00Z' }, 'scheduled')).toBe(dateTime('2026-11-22T10:00:00Z'));
    expect(nextRunText({ ...job, next_run: null }, 'stopped')).toBe('not scheduled: the scheduler is stopped');
    expect(nextRunText({ ...job, next_run: null }, 'on-demand')).toBe('not scheduled: the scheduler runs only jobs asked for');
    expect(nextRunText({ ...job, next_run: null }, null)).toBe('not scheduled');
    expect(nextRunText({ ...job, enabled: false, next_run: null }, 'scheduled')).toBe('off in the service’s configuration');
  });

  it('tells a scheduler that runs only asked-for jobs from one that runs the schedules', () => {
    // Recorded from a service started with periodic=False: health says running, and no job has a next run.
    const health = fixture<Health>('health.json');
    expect(health.scheduler).toBe('running');
    expect(JOBS.every((j) => j.next_run === null)).toBe(true);
    expect(schedulerState(health.scheduler, JOBS)).toBe('on-demand');
    const scheduled = JOBS.map((j, i) => ({ ...j, next_run: `2026-11-22T10:0${i}:00Z` }));
    expect(schedulerState('running', scheduled)).toBe('scheduled');
    // A job turned off has no next run under any scheduler: it does not make the others on-demand.
    expect(schedulerState('running', [{ ...scheduled[0], enabled: false, next_run: null }, ...scheduled.slice(1)])).toBe('scheduled');
    expect(schedulerState('running', JOBS.map((j) => ({ ...j, enabled: false })))).toBe('scheduled');
    expect(schedulerState('stopped', scheduled)).toBe('stopped');
    expect(schedulerState(undefined, JOBS)).toBeNull();
    expect(schedulerState('running', undefined)).toBe('scheduled');
  });

  it('says how long a finished run took', () => {
    const run = { started: '2026-11-22T10:00:00.000Z', finished: '2026-11-22T10:00:00.043Z', outcome: 'succeeded', message: '' };
    expect(runDuration(run)).toBe('0.04 s');
    expect(runDuration({ ...run, finished: '2026-11-22T10:00:12.400Z' })).toBe('12 s');
    expect(runDuration({ ...run, finished: '2026-11-22T10:05:00Z' })).toBe('5 min');
    expect(runDuration({ ...run, finished: null })).toBeNull();
    expect(runDuration(null)).toBeNull();
  });
});

describe('the rebalance window', () => {
  it('reads in one line, with the next window', () => {
    const text = windowText(WINDOW);
    expect(text).toContain(`cron ${WINDOW.cron} (${WINDOW.timezone}) for ${WINDOW.duration}`);
    expect(text).toContain(`at most ${WINDOW.max_moves} moves and ${WINDOW.max_gb} GB`);
    expect(text).toContain(`next ${dateTime(WINDOW.next_window?.start)} to ${dateTime(WINDOW.next_window?.end)} your time`);
    expect(windowText({ ...WINDOW, enabled: false })).toMatch(/^off/);
  });

  it('sends only the fields that changed, numbers as numbers', () => {
    const form = windowForm(WINDOW);
    expect(windowChanges(WINDOW, form)).toEqual({});
    expect(windowChanges(WINDOW, { ...form, max_moves: ' 12 ', cron: '30 1 * * sun ' })).toEqual({ max_moves: 12, cron: '30 1 * * sun' });
    expect(windowChanges(WINDOW, { ...form, enabled: false })).toEqual({ enabled: false });
    // The same number typed differently is no change.
    expect(windowChanges(WINDOW, { ...form, max_gb: `${WINDOW.max_gb}.0` })).toEqual({});
  });

  it('sends what is not a number as typed, for the service to name the field', () => {
    expect(windowChanges(WINDOW, { ...windowForm(WINDOW), max_gb: 'lots' })).toEqual({ max_gb: 'lots' });
    expect(windowChanges(WINDOW, { ...windowForm(WINDOW), max_moves: '' })).toEqual({ max_moves: '' });
  });

  it('puts each of the service’s problems on its field, and lists the others', () => {
    const { problems } = fixture<{ problems: Problem[] }>('window_problems.json');
    expect(problems.length).toBe(3);
    for (const field of ['cron', 'timezone', 'duration']) {
      expect(problemsFor(problems, field)).toEqual(problems.filter((p) => p.field === field).map((p) => p.message));
      expect(problemsFor(problems, field)).toHaveLength(1);
    }
    expect(problemsFor(problems, 'max_gb')).toEqual([]);
    expect(otherProblems(problems)).toEqual([]);
    expect(otherProblems([...problems, { field: 'speed', message: 'unknown field' }])).toEqual([{ field: 'speed', message: 'unknown field' }]);
    // A field under a path (as the configuration names them) lands on its field too.
    expect(problemsFor([{ field: 'schedules.rebalance.cron', message: 'bad' }], 'cron')).toEqual(['bad']);
  });
});

describe('a run asked for with Run now', () => {
  const started = fixture<JobRun>('job_run_started.json');
  const ended = fixture<JobRun>('job_run.json');

  it('is shown started, then with its outcome and how long it took', () => {
    expect(started.outcome).toBe('running');
    expect(runNotice('Collect', started)).toEqual({ kind: 'info', text: `Collect: run ${started.id} started at ${dateTime(started.started)}, running…` });
    expect(ended.id).toBe(started.id);
    expect(runNotice('Collect', ended)).toEqual({ kind: 'success', text: `Collect: run ${ended.id} succeeded in ${runDuration(ended)}.` });
    expect(runNotice('Collect', { ...ended, outcome: 'failed', message: 'vCenter lab: timed out' })).toEqual({
      kind: 'danger',
      text: `Collect: run ${ended.id} failed: vCenter lab: timed out.`,
    });
    expect(runNotice('Collect', { ...ended, outcome: 'skipped', message: 'no pool trees' }).kind).toBe('warning');
  });

  it('is asked about soon at first, then at most every 2 s', () => {
    expect([0, 1, 2, 3, 4, 10].map(runPollDelay)).toEqual([250, 500, 1000, 2000, 2000, 2000]);
  });
});

describe('the window changed through Basil', () => {
  it('lists the changed fields in the form’s order', () => {
    const changed = fixture<Schedules>('schedules_changed.json').rebalance?.changed;
    expect(changed?.fields).toEqual({ cron: '30 1 * * sun', max_moves: 12 });
    expect(changedFieldsText(changed?.fields ?? {})).toBe('cron 30 1 * * sun, max_moves 12');
    expect(changedFieldsText({ max_gb: 50, enabled: false, duration: '2h' })).toBe('enabled false, duration 2h, max_gb 50');
    expect(WINDOW.changed).toBeNull(); // recorded before any change: basil.yaml's window
  });
});

describe('trigger words', () => {
  it('reads the service’s interval in seconds in larger units', () => {
    expect(triggerText('every 300 s').text).toBe('every 5 min');
    expect(triggerText('every 20 s').text).toBe('every 20 s');
    expect(triggerText("cron '0 2 * * *' in UTC, for 240 min").text).toBe("cron '0 2 * * *' in UTC, for 240 min");
  });
});
