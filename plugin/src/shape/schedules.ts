// Reading the service's jobs and rebalance window: triggers in words, why a job has no next run, and
// which fields an edit of the window changes (only those are sent, so the audit names just them).

import type { Job, JobRun, Problem, RebalanceWindow } from '../api/types';
import { DASH, dateTime, isoToMs } from './format';

/** A period in words: "every 20 s", "every 5 min", "every 1 h 30 min", "every 2 d". */
export function everyText(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds <= 0) return DASH;
  const parts: string[] = [];
  let rest = Math.round(seconds);
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['min', 60],
    ['s', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n} ${unit}`);
    rest -= n * size;
  }
  return `every ${parts.join(' ')}`;
}

// APScheduler's cron fields and the values that mean "any" for each (a field listing all of them).
const CRON_FULL: Record<string, number> = { month: 12, day: 31, hour: 24, minute: 60, second: 60, day_of_week: 7 };
const CRON_ORDER = ['month', 'day', 'day_of_week', 'hour', 'minute'];

function isAny(field: string, value: string): boolean {
  if (value === '*' || value === '?') return true;
  const size = CRON_FULL[field];
  return size !== undefined && value.split(',').length === size;
}

/**
 * A job's trigger as the service prints it (APScheduler's `interval[0:00:20]`,
 * `cron[month='1,…,12', day_of_week='sat', hour='2', minute='0']`) in words; `raw` keeps the original
 * for a tooltip. No trigger: the job is off.
 */
export function triggerText(trigger: string | null | undefined): { text: string; raw: string } {
  if (!trigger) return { text: 'off', raw: '' };
  const interval = /^interval\[(?:(\d+) days?, )?(\d+):(\d{2}):(\d{2})(?:\.\d+)?\]$/.exec(trigger);
  if (interval) {
    const [, d, h, m, s] = interval;
    return { text: everyText(Number(d ?? 0) * 86_400 + Number(h) * 3_600 + Number(m) * 60 + Number(s)), raw: trigger };
  }
  // The service's own words for an interval ("every 300 s"), in the units a person reads.
  const words = /^every (\d+(?:\.\d+)?) s$/.exec(trigger);
  if (words) return { text: everyText(Number(words[1])), raw: trigger };
  const cron = /^cron\[(.*)\]$/.exec(trigger);
  if (cron) {
    const fields = new Map<string, string>();
    for (const f of cron[1].matchAll(/(\w+)='([^']*)'/g)) fields.set(f[1], f[2]);
    const shown = CRON_ORDER.filter((k) => fields.has(k) && !isAny(k, fields.get(k) ?? '')).map(
      (k) => `${k.replace(/_/g, ' ')} ${fields.get(k) ?? ''}`,
    );
    return { text: shown.length > 0 ? `cron: ${shown.join(', ')}` : 'cron: every minute', raw: trigger };
  }
  return { text: trigger, raw: trigger };
}

/**
 * What the service's scheduler does: runs the configured schedules (`scheduled`), runs only the jobs
 * asked for (`on-demand`: a service started with `periodic=False`), or nothing (`stopped`); null
 * while unknown. `/health` says `running` for both of the first two, so the jobs tell them apart: a
 * scheduler that runs the schedules gives every enabled job a next run, one that runs only asked-for
 * jobs gives none.
 */
export type SchedulerState = 'scheduled' | 'on-demand' | 'stopped';

export function schedulerState(
  health: string | null | undefined,
  jobs: Pick<Job, 'enabled' | 'next_run'>[] | undefined,
): SchedulerState | null {
  if (health === 'stopped') return 'stopped';
  if (health !== 'running') return null;
  const enabled = (jobs ?? []).filter((j) => j.enabled !== false);
  if (enabled.length > 0 && enabled.every((j) => !j.next_run)) return 'on-demand';
  return 'scheduled';
}

/**
 * When a job runs next, or why it has no next run: turned off in the configuration, the service's
 * scheduler is not running, or it runs only the jobs asked for (jobs then run only when started by hand).
 */
export function nextRunText(job: Pick<Job, 'enabled' | 'next_run'>, scheduler: SchedulerState | null): string {
  if (job.enabled === false) return 'off in the service’s configuration';
  if (job.next_run) return dateTime(job.next_run);
  if (scheduler === 'stopped') return 'not scheduled: the scheduler is stopped';
  if (scheduler === 'on-demand') return 'not scheduled: the scheduler runs only jobs asked for';
  return 'not scheduled';
}

/** How long a finished run took ("0.04 s", "12 s", "3 min"), or null while it runs. */
export function runDuration(run: { started?: string | null; finished?: string | null } | null | undefined): string | null {
  const a = isoToMs(run?.started);
  const b = isoToMs(run?.finished);
  if (a === null || b === null || b < a) return null;
  const s = (b - a) / 1000;
  if (s < 1) return `${s.toFixed(2)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  return `${Math.round(s / 60)} min`;
}

/** How a run of a job asked for with "Run now" is going, in one line, and how the alert should look. */
export interface RunNotice {
  kind: 'info' | 'success' | 'warning' | 'danger';
  text: string;
}

export function runNotice(jobName: string, run: JobRun): RunNotice {
  const which = run.id !== undefined ? `run ${run.id}` : 'the run';
  const message = run.message ? `: ${run.message}` : '';
  switch (run.outcome) {
    case 'running':
      return {
        kind: 'info',
        text: `${jobName}: ${which} started${run.started ? ` at ${dateTime(run.started)}` : ''}, running…`,
      };
    case 'succeeded': {
      const took = runDuration(run);
      return { kind: 'success', text: `${jobName}: ${which} succeeded${took ? ` in ${took}` : ''}${message}.` };
    }
    case 'skipped':
      return { kind: 'warning', text: `${jobName}: ${which} was skipped${message}.` };
    case 'failed':
      return { kind: 'danger', text: `${jobName}: ${which} failed${message}.` };
    default:
      return { kind: 'info', text: `${jobName}: ${which} ${run.outcome}${message}.` };
  }
}

/** How long to wait before asking again how a run is going: soon at first (most runs are short), then
 * less often, at most every 2 s. */
export function runPollDelay(attempt: number): number {
  return Math.min(2000, 250 * 2 ** Math.max(0, attempt));
}

/** The rebalance window in one line: when, how long, the budget and the next window. */
export function windowText(w: RebalanceWindow): string {
  if (w.enabled === false) return `off (budget ${w.max_moves} moves, ${w.max_gb} GB when on)`;
  // The next window in this browser's time, which is not the window's own time zone in general.
  const next = w.next_window
    ? `; next ${dateTime(w.next_window.start)} to ${dateTime(w.next_window.end)} your time`
    : '';
  return `cron ${w.cron} (${w.timezone}) for ${w.duration}, at most ${w.max_moves} moves and ${w.max_gb} GB${next}`;
}

/** The window form's fields, as typed. */
export interface WindowForm {
  enabled: boolean;
  cron: string;
  timezone: string;
  duration: string;
  max_moves: string;
  max_gb: string;
}

export type WindowField = keyof WindowForm;

export const WINDOW_FIELDS: WindowField[] = ['enabled', 'cron', 'timezone', 'duration', 'max_moves', 'max_gb'];

/** The fields of the window changed through Basil (`rebalance.changed.fields`) in one line, in the
 * form's order: "cron 30 1 * * sun, max_moves 12". */
export function changedFieldsText(fields: Record<string, unknown>): string {
  const order = (k: string) => {
    const i = (WINDOW_FIELDS as string[]).indexOf(k);
    return i < 0 ? WINDOW_FIELDS.length : i;
  };
  return Object.keys(fields)
    .sort((a, b) => order(a) - order(b) || a.localeCompare(b))
    .map((k) => `${k} ${typeof fields[k] === 'string' ? (fields[k] as string) : JSON.stringify(fields[k])}`)
    .join(', ');
}

export function windowForm(w: RebalanceWindow): WindowForm {
  return {
    enabled: w.enabled !== false,
    cron: w.cron,
    timezone: w.timezone,
    duration: w.duration,
    max_moves: String(w.max_moves),
    max_gb: String(w.max_gb),
  };
}

export type WindowChange = Partial<{ enabled: boolean; cron: string; timezone: string; duration: string; max_moves: number | string; max_gb: number | string }>;

function asNumber(text: string): number | string {
  const t = text.trim();
  return t !== '' && Number.isFinite(Number(t)) ? Number(t) : text;
}

/**
 * The fields of `form` that differ from the window in force. Numbers typed as numbers are sent as
 * such; anything else is sent as typed, for the service to name the field it refuses.
 */
export function windowChanges(current: RebalanceWindow, form: WindowForm): WindowChange {
  const out: WindowChange = {};
  if (form.enabled !== (current.enabled !== false)) out.enabled = form.enabled;
  if (form.cron.trim() !== current.cron) out.cron = form.cron.trim();
  if (form.timezone.trim() !== current.timezone) out.timezone = form.timezone.trim();
  if (form.duration.trim() !== current.duration) out.duration = form.duration.trim();
  for (const k of ['max_moves', 'max_gb'] as const) {
    const v = asNumber(form[k]);
    if (v !== current[k]) out[k] = v;
  }
  return out;
}

/** The messages of the service's problems that name `field` (as `field` or `….field`). */
export function problemsFor(problems: Problem[], field: string): string[] {
  return problems.filter((p) => p.field === field || p.field.endsWith(`.${field}`)).map((p) => p.message);
}

/** Problems naming none of the form's fields, to show above it. */
export function otherProblems(problems: Problem[], fields: readonly string[] = WINDOW_FIELDS): Problem[] {
  return problems.filter((p) => !fields.some((f) => p.field === f || p.field.endsWith(`.${f}`)));
}
