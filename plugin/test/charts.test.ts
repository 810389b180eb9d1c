import { describe, expect, it } from 'vitest';
import {
  extent,
  fittedLine,
  historySeries,
  linearScale,
  linePath,
  niceTicks,
  scatterDomains,
  SERIES_COLORS,
  seriesColor,
  timeLabel,
  timeSeries,
  timeTicks,
  zeroBasedDomain,
} from '../src/shape/charts';
import type { DatastoreDetail, ModelPoint, PodHistory, PodSummary } from '../src/api/types';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fixture } from './helpers';

describe('scales and ticks', () => {
  it('maps a domain onto a range and back', () => {
    const s = linearScale([0, 10], [50, 150]);
    expect(s(0)).toBe(50);
    expect(s(5)).toBe(100);
    expect(s.invert(125)).toBeCloseTo(7.5);
  });

  it('widens a flat domain so a constant series still has an axis', () => {
    const s = linearScale([4, 4], [0, 100]);
    expect(s.domain[0]).toBeLessThan(4);
    expect(s.domain[1]).toBeGreaterThan(4);
    expect(s(4)).toBeCloseTo(50);
  });

  it.each([
    [0, 4.15, 5, [0, 1, 2, 3, 4]],
    [0, 0.69, 4, [0, 0.2, 0.4, 0.6]],
    [12, 58, 5, [20, 30, 40, 50]],
  ])('niceTicks(%s, %s) are round steps', (lo, hi, n, want) => {
    expect(niceTicks(lo, hi, n)).toEqual(want);
  });

  it('starts load, latency and IOPS axes at zero and ends them on a round value above the data', () => {
    expect(zeroBasedDomain([0.5, 4.15, null, undefined])).toEqual([0, 6]); // ticks 0, 2, 4 and one more step
    expect(zeroBasedDomain([])).toEqual([0, 1]);
    expect(extent([null, Number.NaN])).toBeNull();
  });

  it('places time ticks on round local times inside the span', () => {
    const t0 = Date.parse('2026-11-22T04:03:00Z');
    const t1 = Date.parse('2026-11-22T10:00:00Z');
    const ticks = timeTicks(t0, t1, 6);
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(ticks.every((t) => t >= t0 && t <= t1)).toBe(true);
    const steps = new Set(ticks.slice(1).map((t, i) => t - ticks[i]));
    expect(steps.size).toBe(1);
    expect(new Date(ticks[0]).getMinutes()).toBe(0);
  });

  it('labels both ends of a span too short for a round time, to the second', () => {
    const t0 = Date.parse('2026-11-22T03:28:01Z');
    const t1 = t0 + 6_000;
    expect(timeTicks(t0, t1, 6)).toEqual([t0, t1]);
    expect(timeLabel(t1, t1 - t0)).toMatch(/^\d\d:\d\d:07$/);
    expect(timeLabel(t1, 6 * 3600_000)).toMatch(/^\d\d:\d\d$/);
  });
});

describe('series shaping', () => {
  it('sorts points by time and keeps unknown values as gaps', () => {
    const s = timeSeries(
      [
        { t: '2026-11-22T10:05:00Z', N: 2 },
        { t: 'garbage', N: 9 },
        { t: '2026-11-22T10:00:00Z', N: null },
      ],
      (p) => p.N,
    );
    expect(s.map((p) => p.y)).toEqual([null, 2]);
  });

  it('draws a path that lifts the pen over a gap', () => {
    const x = linearScale([0, 3], [0, 30]);
    const y = linearScale([0, 10], [100, 0]);
    const d = linePath(
      [
        { x: 0, y: 0 },
        { x: 1, y: 10 },
        { x: 2, y: null },
        { x: 3, y: 5 },
      ],
      x,
      y,
    );
    expect(d).toBe('M0.0,100.0L10.0,0.0M30.0,50.0');
  });

  it('turns pod history into the imbalance and one named series per datastore, most loaded first', () => {
    const h = fixture<PodHistory>('pod_history.json');
    const pod = fixture<PodSummary[]>('pods.json')[0];
    const s = historySeries(h.points, pod.datastores);
    expect(s.imbalance.map((p) => p.y)).toEqual(h.points.map((p) => p.imbalance));
    expect(s.datastores.map((d) => d.id).sort()).toEqual(pod.datastores.map((d) => d.id).sort());
    const last = h.points[h.points.length - 1].normalized_load;
    const order = Object.keys(last).sort((a, b) => (last[b] ?? 0) - (last[a] ?? 0));
    expect(s.datastores.map((d) => d.id)).toEqual(order);
    expect(s.datastores[0].name).toBe(pod.datastores.find((d) => d.id === order[0])?.name);
    expect(s.datastores[0].points).toHaveLength(h.points.length);
  });
});

describe('device model line', () => {
  it('runs from the intercept with the fitted slope, and P is 1/slope', () => {
    const line = fittedLine(0.704, 3.1, 60);
    expect(line).not.toBeNull();
    expect(line?.y0).toBe(3.1);
    expect(line?.y1).toBeCloseTo(3.1 + 0.704 * 60);
    expect(line?.P).toBeCloseTo(1 / 0.704);
  });

  it('draws no line for a missing, zero or negative slope (no usable model)', () => {
    expect(fittedLine(null, 3, 10)).toBeNull();
    expect(fittedLine(0, 3, 10)).toBeNull();
    expect(fittedLine(-0.2, 3, 10)).toBeNull();
  });

  it('sizes the scatter to hold every recorded point and the fitted line', () => {
    const pts = fixture<ModelPoint[]>('datastore_points.json');
    const model = fixture<DatastoreDetail>('datastore.json').model;
    const line = fittedLine(model?.slope_ms_per_oio, model?.intercept_ms, Math.max(...pts.map((p) => p.oio)));
    expect(line?.P).toBeCloseTo(model?.P ?? 0);
    const d = scatterDomains(pts, line);
    expect(d.x[0]).toBe(0);
    expect(d.y[0]).toBe(0);
    expect(Math.max(...pts.map((p) => p.oio))).toBeLessThanOrEqual(d.x[1]);
    expect(Math.max(...pts.map((p) => p.latency_ms))).toBeLessThanOrEqual(d.y[1]);
    expect(line && line.y1).toBeLessThanOrEqual(d.y[1]);
  });
});

describe('series colours', () => {
  it('follow the theme through a CSS variable, with the light hue as fallback, cycling', () => {
    expect(seriesColor(0)).toBe(`var(--basil-series-0, ${SERIES_COLORS[0]})`);
    expect(seriesColor(SERIES_COLORS.length + 2)).toBe(seriesColor(2));
    expect(seriesColor(-1)).toBe(seriesColor(SERIES_COLORS.length - 1));
  });
});

describe('theme palettes in styles.css', () => {
  const css = readFileSync(resolve(import.meta.dirname, '../src/styles.css'), 'utf-8');
  const block = (selector: string) => {
    const start = css.indexOf(`${selector} {`);
    expect(start).toBeGreaterThanOrEqual(0);
    return css.slice(start, css.indexOf('}', start));
  };

  it('define every series colour and the "now" line for the light and the dark theme', () => {
    for (const selector of ['[cds-theme]', "[cds-theme~='dark']"]) {
      const text = block(selector);
      for (let k = 0; k < SERIES_COLORS.length; k += 1) expect(text).toMatch(new RegExp(`--basil-series-${k}: #[0-9a-f]{6};`));
      expect(text).toMatch(/--basil-now: #[0-9a-f]{6};/);
    }
  });
});
