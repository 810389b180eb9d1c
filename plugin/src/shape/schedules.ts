// Reading the service's jobs and rebalance window: triggers in words, why a job has no next run, and
// which fields an edit of the window changes (only those are sent, so the audit names just them).

import type { Job, Problem, RebalanceWindow } from '../api/types';
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
 * When a job runs next, or why it has no next run: turned off in the configuration, or the service's
 * scheduler is not running (jobs then run only when started by hand).
 */
export function nextRunText(job: Pick<Job, 'enabled' | 'next_run'>, schedulerRunning: boolean | null): string {
  if (job.enabled === false) return 'off in the service’s configuration';
  if (job.next_run) return dateTime(job.next_run);
  if (schedulerRunning === false) return 'not scheduled: the scheduler is stopped';
  return 'not scheduled';
}

/** How long a finished run took ("0.04 s", "12 s", "3 min"), or null while it runs. */
export function runDuration(run: Job['last_run']): string | null {
  const a = isoToMs(run?.started);
  const b = isoToMs(run?.finished);
  if (a === null || b === null || b < a) return null;
  const s = (b - a) / 1000;
  if (s < 1) return `${s.toFixed(2)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  return `${Math.round(s / 60)} min`;
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
