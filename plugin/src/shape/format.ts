// How numbers and times read in the plugin: a dash for what is unknown, units attached, and few digits.

export const DASH = '—';

function known(v: number | null | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

export function num(v: number | null | undefined, digits = 2): string {
  if (!known(v)) return DASH;
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Significant figures that suit the value's size: 0.0123, 1.23, 12.3, 1,234. */
export function compact(v: number | null | undefined): string {
  if (!known(v)) return DASH;
  const a = Math.abs(v);
  // Differences of sums (a datastore emptied by a move) leave float dust such as -4.5e-13.
  if (a < 1e-9) return '0';
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}

export function ms(v: number | null | undefined): string {
  return known(v) ? `${compact(v)} ms` : DASH;
}

export function iops(v: number | null | undefined): string {
  return known(v) ? Math.round(v).toLocaleString('en-US') : DASH;
}

export function gb(v: number | null | undefined): string {
  if (!known(v)) return DASH;
  return v >= 1024 ? `${(v / 1024).toFixed(1)} TB` : `${compact(v)} GB`;
}

export function pct(v: number | null | undefined, digits = 0): string {
  return known(v) ? `${v.toFixed(digits)} %` : DASH;
}

/** A vSphere IO limit: -1 (or absent) means unlimited. */
export function limit(v: number | null | undefined): string {
  if (!known(v) || v < 0) return 'unlimited';
  return iops(v);
}

export function isoToMs(t: string | null | undefined): number | null {
  if (!t) return null;
  const v = Date.parse(t);
  return Number.isNaN(v) ? null : v;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** A timestamp as local date and time, minutes precision (2026-11-22 14:05). */
export function dateTime(t: string | null | undefined): string {
  const v = isoToMs(t);
  if (v === null) return DASH;
  const d = new Date(v);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** How long ago, for "last collection 2 min ago". */
export function ago(t: string | null | undefined, now: number = Date.now()): string {
  const v = isoToMs(t);
  if (v === null) return DASH;
  const s = Math.round((now - v) / 1000);
  if (s < 0) return 'in the future';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** A timestamp in full for a tooltip: local date, time to the second and the UTC offset. */
export function absolute(t: string | null | undefined): string {
  const v = isoToMs(t);
  if (v === null) return DASH;
  const d = new Date(v);
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  const tz = `UTC${sign}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${dateTime(t)}:${pad(d.getSeconds())} ${tz}`;
}

/** How far a timestamp is from `now`, both ways: "just now", "5 min ago", "in 2 h". */
export function relative(t: string | null | undefined, now: number): string {
  const v = isoToMs(t);
  if (v === null) return DASH;
  const s = Math.round((now - v) / 1000);
  const a = Math.abs(s);
  if (a < 10) return 'just now';
  let span: string;
  if (a < 60) span = `${a} s`;
  else if (a < 3600) span = `${Math.round(a / 60)} min`;
  else if (a < 86400) span = `${Math.round(a / 3600)} h`;
  else span = `${Math.round(a / 86400)} d`;
  return s > 0 ? `${span} ago` : `in ${span}`;
}
