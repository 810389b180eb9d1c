// Pure geometry for the plugin's small SVG charts: scales, readable ticks, paths with gaps, and the
// device model's fitted line (BASIL §4: latency = intercept + slope·OIO over read OIO, P = 1/slope).

import { isoToMs } from './format';

export interface Scale {
  (v: number): number;
  domain: [number, number];
  range: [number, number];
  invert(p: number): number;
}

export function linearScale(domain: [number, number], range: [number, number]): Scale {
  let [d0, d1] = domain;
  if (d0 === d1) {
    // A flat series still needs a visible axis: widen it around its one value.
    const pad = d0 === 0 ? 1 : Math.abs(d0) * 0.1;
    d0 -= pad;
    d1 += pad;
  }
  const [r0, r1] = range;
  const k = (r1 - r0) / (d1 - d0);
  const scale = ((v: number) => r0 + (v - d0) * k) as Scale;
  scale.domain = [d0, d1];
  scale.range = [r0, r1];
  scale.invert = (p: number) => d0 + (p - r0) / k;
  return scale;
}

export function extent(values: Iterable<number | null | undefined>): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo === Infinity ? null : [lo, hi];
}

/** About `count` round tick values (1, 2 or 5 × 10^k apart) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [];
  if (lo === hi) return [lo];
  if (lo > hi) [lo, hi] = [hi, lo];
  const raw = (hi - lo) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const first = Math.ceil(lo / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let v = first; v <= hi + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  return ticks;
}

/** A y domain from zero (loads, latencies and IOPS are never negative) up to a round value. */
export function zeroBasedDomain(values: Iterable<number | null | undefined>, minTop = 0): [number, number] {
  const e = extent(values);
  const top = Math.max(e ? e[1] : 0, minTop);
  if (top <= 0) return [0, 1];
  const ticks = niceTicks(0, top, 4);
  const last = ticks[ticks.length - 1] ?? top;
  return [0, last < top ? last + (ticks[1] ?? top) : last];
}

const MINUTE = 60_000;
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080].map((m) => m * MINUTE);

/** Tick times at a round interval (5 min, 1 h, 6 h, 1 d, ...) for a time axis spanning [t0, t1]. */
export function timeTicks(t0: number, t1: number, count = 6): number[] {
  if (!(t1 > t0)) return Number.isFinite(t0) ? [t0] : [];
  const raw = (t1 - t0) / Math.max(1, count);
  const step = TIME_STEPS.find((s) => s >= raw) ?? TIME_STEPS[TIME_STEPS.length - 1];
  // Round in local time so that "06:00" ticks fall on the hour the reader sees.
  const offset = new Date(t0).getTimezoneOffset() * MINUTE;
  const first = Math.ceil((t0 - offset) / step) * step + offset;
  const out: number[] = [];
  for (let t = first; t <= t1; t += step) out.push(t);
  // A span shorter than a minute has no round time inside it: label its two ends instead.
  return out.length > 0 ? out : [t0, t1];
}

export function timeLabel(t: number, spanMs: number): string {
  const d = new Date(t);
  const hm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  if (spanMs < 5 * MINUTE) return `${hm}:${String(d.getSeconds()).padStart(2, '0')}`;
  if (spanMs <= 36 * 60 * MINUTE) return hm;
  return `${d.getMonth() + 1}/${d.getDate()} ${hm}`;
}

export interface XY {
  x: number;
  y: number | null;
}

/** An SVG path through the points, with a gap wherever y is unknown. */
export function linePath(points: XY[], x: Scale, y: Scale): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (p.y === null || !Number.isFinite(p.y) || !Number.isFinite(p.x)) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`;
    pen = true;
  }
  return d;
}

/** Series of {t, value} from API points, time parsed, unreadable times dropped, sorted by time. */
export function timeSeries<T extends { t: string }>(points: T[], value: (p: T) => number | null | undefined): XY[] {
  const out: XY[] = [];
  for (const p of points) {
    const x = isoToMs(p.t);
    if (x === null) continue;
    const v = value(p);
    out.push({ x, y: typeof v === 'number' && Number.isFinite(v) ? v : null });
  }
  out.sort((a, b) => a.x - b.x);
  return out;
}

export interface FittedLine {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  P: number | null;
}

/**
 * The device model's line over the OIO range shown: latency = intercept + slope·OIO, and P = 1/slope,
 * the device's performance metric (BASIL §4). Null without a usable (positive) slope.
 */
export function fittedLine(
  slope: number | null | undefined,
  intercept: number | null | undefined,
  oioMax: number,
): FittedLine | null {
  if (typeof slope !== 'number' || !Number.isFinite(slope) || slope <= 0) return null;
  const b = typeof intercept === 'number' && Number.isFinite(intercept) ? intercept : 0;
  return { x0: 0, y0: b, x1: oioMax, y1: b + slope * oioMax, P: 1 / slope };
}

/** Axis ranges for the OIO-latency scatter: both from zero, room for the points and the line. */
export function scatterDomains(
  points: { oio: number; latency_ms: number }[],
  line: FittedLine | null,
): { x: [number, number]; y: [number, number] } {
  const x = zeroBasedDomain(points.map((p) => p.oio), 1);
  const ys = points.map((p) => p.latency_ms);
  if (line) ys.push(line.y0, line.y0 + (line.y1 - line.y0) * (x[1] / (line.x1 || 1)));
  return { x, y: zeroBasedDomain(ys, 1) };
}

/**
 * The light theme's series hues (Clarity's data-visualisation colours). Each theme sets its own in
 * styles.css (--basil-series-0 … 7): these darker hues fall under 3:1 against the dark theme's cards.
 */
export const SERIES_COLORS = ['#0072a3', '#e57200', '#5e8e00', '#8939ad', '#c21d00', '#00968f', '#b5890a', '#4a5cc1'];

/** The i-th series colour as a CSS value that follows the theme (falling back to the light hue). */
export function seriesColor(i: number): string {
  const k = ((i % SERIES_COLORS.length) + SERIES_COLORS.length) % SERIES_COLORS.length;
  return `var(--basil-series-${k}, ${SERIES_COLORS[k]})`;
}

export interface NamedSeries {
  id: string;
  name: string;
  points: XY[];
}

/**
 * A pod's history as chart series: the imbalance, and one normalized-load series per datastore
 * (named from `datastores`, most loaded first by their latest point).
 */
export function historySeries(
  points: { t: string; imbalance: number | null; normalized_load: Record<string, number | null> }[],
  datastores: { id: string; name: string }[],
): { imbalance: XY[]; datastores: NamedSeries[] } {
  const imbalance = timeSeries(points, (p) => p.imbalance);
  const ids = new Set<string>();
  for (const p of points) for (const id of Object.keys(p.normalized_load ?? {})) ids.add(id);
  const series = [...ids].map((id) => ({
    id,
    name: datastores.find((d) => d.id === id)?.name ?? id,
    points: timeSeries(points, (p) => p.normalized_load?.[id] ?? null),
  }));
  const last = (s: NamedSeries) => s.points.filter((p) => p.y !== null).at(-1)?.y ?? -Infinity;
  series.sort((a, b) => last(b) - last(a) || a.name.localeCompare(b.name));
  return { imbalance, datastores: series };
}
