// Small SVG charts drawn from the geometry in shape/charts.ts; colours come from CSS variables so that
// they follow the light and dark themes.

import { type RefObject, useEffect, useId, useRef, useState } from 'react';
import type { FittedLine, XY } from '../shape/charts';
import {
  extent,
  linearScale,
  linePath,
  niceTicks,
  scatterDomains,
  seriesColor,
  timeLabel,
  timeTicks,
  zeroBasedDomain,
} from '../shape/charts';
import { compact } from '../shape/format';

const DEFAULT_WIDTH = 640;
const MARKER_LIMIT = 40;
const M = { top: 12, right: 16, bottom: 28, left: 62 };
/** Room above the plot for the y axis's title. */
const TITLE_SPACE = 12;

/**
 * The pixel width of the chart's box, followed as it resizes, so that charts draw at 1:1 and their
 * text keeps its size (a scaled viewBox would blow 11 px labels up on a wide screen).
 */
function useWidth(): [RefObject<HTMLElement | null>, number] {
  const ref = useRef<HTMLElement | null>(null);
  const [width, setWidth] = useState(DEFAULT_WIDTH);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return undefined;
    const measure = () => {
      const w = Math.round(el.getBoundingClientRect().width);
      if (w > 200) setWidth(w);
    };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

export interface Series {
  name: string;
  points: XY[];
  color?: string;
  dashed?: boolean;
}

interface LineChartProps {
  title: string;
  series: Series[];
  height?: number;
  yLabel?: string;
  yFormat?: (v: number) => string;
  /** A horizontal reference line, dashed with its label: a threshold (red) or the value now (grey). */
  reference?: { value: number; label: string; tone?: 'threshold' | 'now' };
  /** What an empty chart says instead of a line. */
  emptyText?: string;
  testId?: string;
}

/** Said where a chart has nothing to draw: why, when the caller knows, rather than a bare "no data". */
const NO_DATA = 'No data in this time range yet';

function Empty({
  title,
  height,
  testId,
  boxRef,
  text = NO_DATA,
}: {
  title: string;
  height: number;
  testId?: string;
  boxRef?: RefObject<HTMLElement | null>;
  text?: string;
}) {
  return (
    <div
      className="basil-chart basil-chart-empty"
      style={{ height }}
      data-testid={testId}
      role="img"
      aria-label={`${title}: ${text}`}
      ref={boxRef as RefObject<HTMLDivElement | null>}
    >
      <span className="basil-chart-empty-text">{text}</span>
    </div>
  );
}

/** Horizontal grid lines with their value labels on the left axis (shared by the charts). */
function YGrid({
  ticks,
  y,
  width,
  format,
}: {
  ticks: number[];
  y: (v: number) => number;
  width: number;
  format: (v: number) => string;
}) {
  return (
    <>
      {ticks.map((v) => (
        <g key={`y${v}`}>
          <line className="basil-grid" x1={M.left} x2={width - M.right} y1={y(v)} y2={y(v)} />
          <text className="basil-axis" x={M.left - 6} y={y(v)} dy="0.32em" textAnchor="end">
            {format(v)}
          </text>
        </g>
      ))}
    </>
  );
}

export function LineChart({ title, series, height = 200, yLabel, yFormat = compact, reference, emptyText, testId }: LineChartProps) {
  const titleId = useId();
  const [box, W] = useWidth();
  const xs = extent(series.flatMap((s) => s.points.map((p) => p.x)));
  if (!xs) return <Empty title={title} height={height} testId={testId} boxRef={box} text={emptyText} />;
  const ys = series.flatMap((s) => s.points.map((p) => p.y));
  if (reference) ys.push(reference.value);
  const yDomain = zeroBasedDomain(ys);
  // The y axis's title is written level above the plot (a rotated title is hard to read on small charts).
  const top = yLabel ? M.top + TITLE_SPACE : M.top;
  const x = linearScale(xs, [M.left, W - M.right]);
  const y = linearScale(yDomain, [height - M.bottom, top]);
  const xt = timeTicks(xs[0], xs[1], Math.max(2, Math.floor(W / 110)));
  const yt = niceTicks(yDomain[0], yDomain[1], 4);
  return (
    <figure className="basil-chart" data-testid={testId} ref={box}>
      <svg viewBox={`0 0 ${W} ${height}`} width={W} height={height} role="img" aria-labelledby={titleId}>
        <title id={titleId}>{title}</title>
        <YGrid ticks={yt} y={y} width={W} format={yFormat} />
        {xt.map((t) => (
          <text key={`x${t}`} className="basil-axis" x={x(t)} y={height - M.bottom + 16} textAnchor="middle">
            {timeLabel(t, xs[1] - xs[0])}
          </text>
        ))}
        <line className="basil-axis-line" x1={M.left} x2={W - M.right} y1={height - M.bottom} y2={height - M.bottom} />
        {yLabel && (
          <text className="basil-axis basil-axis-title" x={4} y={12} textAnchor="start" data-testid={testId ? `${testId}-ytitle` : undefined}>
            {yLabel}
          </text>
        )}
        {reference && (
          <g className={reference.tone === 'now' ? 'basil-reference-now' : undefined} data-testid={testId ? `${testId}-reference` : undefined}>
            <line className="basil-reference" x1={M.left} x2={W - M.right} y1={y(reference.value)} y2={y(reference.value)} />
            <text className="basil-axis basil-reference-label" x={W - M.right} y={y(reference.value) - 4} textAnchor="end">
              {reference.label}
            </text>
          </g>
        )}
        {series.map((s, i) => {
          const known = s.points.filter((p) => p.y !== null);
          return (
            <g key={s.name}>
              <path
                d={linePath(s.points, x, y)}
                fill="none"
                style={{ stroke: s.color ?? seriesColor(i) }}
                strokeWidth={2}
                strokeDasharray={s.dashed ? '5 4' : undefined}
                data-series={s.name}
              />
              {/* Few points (a model refitted a handful of times) read better as dots on the line. */}
              {known.length <= MARKER_LIMIT &&
                known.map((p) => (
                  <circle key={p.x} cx={x(p.x)} cy={y(p.y as number)} r={3} style={{ fill: s.color ?? seriesColor(i) }} data-point={s.name} />
                ))}
            </g>
          );
        })}
      </svg>
      {series.length > 1 && (
        <figcaption className="basil-legend">
          {series.map((s, i) => (
            <span key={s.name} className="basil-legend-item">
              <i className={s.dashed ? 'basil-dashed' : undefined} style={{ background: s.color ?? seriesColor(i), color: s.color ?? seriesColor(i) }} />
              {s.name}
            </span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}

interface ScatterProps {
  title: string;
  points: { oio: number; latency_ms: number; t?: string }[];
  line: FittedLine | null;
  height?: number;
  emptyText?: string;
  testId?: string;
}

/** The device model: read OIO against latency, one dot per sample, and the fitted line with its P. */
export function ModelScatter({ title, points, line, height = 260, emptyText, testId }: ScatterProps) {
  const titleId = useId();
  const [box, fullWidth] = useWidth();
  // A scatter wider than it is useful stretches the slope the reader is meant to judge.
  const W = Math.min(fullWidth, 720);
  if (points.length === 0 && !line) return <Empty title={title} height={height} testId={testId} boxRef={box} text={emptyText} />;
  const d = scatterDomains(points, line);
  const x = linearScale(d.x, [M.left, W - M.right]);
  const y = linearScale(d.y, [height - M.bottom - 8, M.top + TITLE_SPACE]);
  const xt = niceTicks(d.x[0], d.x[1], Math.max(3, Math.floor(W / 90)));
  const yt = niceTicks(d.y[0], d.y[1], 4);
  const x1 = d.x[1];
  const lineEnd = line ? line.y0 + ((line.y1 - line.y0) * x1) / (line.x1 || 1) : 0;
  return (
    <figure className="basil-chart" data-testid={testId} ref={box}>
      <svg viewBox={`0 0 ${W} ${height}`} width={W} height={height} role="img" aria-labelledby={titleId}>
        <title id={titleId}>{title}</title>
        <YGrid ticks={yt} y={y} width={W} format={compact} />
        {xt.map((v) => (
          <text key={`x${v}`} className="basil-axis" x={x(v)} y={height - M.bottom + 8} textAnchor="middle">
            {compact(v)}
          </text>
        ))}
        <line className="basil-axis-line" x1={M.left} x2={W - M.right} y1={height - M.bottom - 8} y2={height - M.bottom - 8} />
        <text className="basil-axis" x={(M.left + W - M.right) / 2} y={height - 4} textAnchor="middle">
          outstanding IOs (read OIO)
        </text>
        <text className="basil-axis basil-axis-title" x={4} y={12} textAnchor="start">
          latency (ms)
        </text>
        {points.map((p, i) => (
          <circle key={i} className="basil-dot" cx={x(p.oio)} cy={y(p.latency_ms)} r={3} data-oio={p.oio} />
        ))}
        {line && (
          <g data-testid={testId ? `${testId}-line` : undefined}>
            <line className="basil-fit" x1={x(0)} y1={y(line.y0)} x2={x(x1)} y2={y(lineEnd)} />
            <text className="basil-fit-label" x={W - M.right} y={Math.max(M.top + 10, y(lineEnd) - 6)} textAnchor="end">
              P = {compact(line.P)} (slope {compact(1 / (line.P ?? 1))} ms/OIO)
            </text>
          </g>
        )}
      </svg>
    </figure>
  );
}

interface BarsProps {
  title: string;
  bars: { name: string; before: number | null; after: number | null }[];
  testId?: string;
}

/** Before/after horizontal bars, one pair per datastore: a recommendation's predicted effect on N. */
export function BeforeAfterBars({ title, bars, testId }: BarsProps) {
  const titleId = useId();
  const [box, fullWidth] = useWidth();
  const W = Math.min(fullWidth, 720);
  const row = 30;
  const height = M.top + bars.length * row + 4;
  const left = 150;
  const max = zeroBasedDomain(bars.flatMap((b) => [b.before, b.after]))[1];
  const x = linearScale([0, max], [left, W - M.right - 40]);
  return (
    <figure className="basil-chart basil-chart-bars" data-testid={testId} ref={box}>
      <svg viewBox={`0 0 ${W} ${height}`} width={W} height={height} role="img" aria-labelledby={titleId}>
        <title id={titleId}>{title}</title>
        {bars.map((b, i) => {
          const top = M.top + i * row;
          return (
            <g key={b.name}>
              <text className="basil-axis basil-bar-name" x={left - 8} y={top + 12} textAnchor="end">
                {b.name}
              </text>
              <rect className="basil-bar-before" x={left} y={top} height={10} width={Math.max(0, x(b.before ?? 0) - left)} />
              <rect className="basil-bar-after" x={left} y={top + 12} height={10} width={Math.max(0, x(b.after ?? 0) - left)} />
              <text className="basil-axis" x={x(Math.max(b.before ?? 0, b.after ?? 0)) + 6} y={top + 16}>
                {compact(b.before)} → {compact(b.after)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption className="basil-legend">
        <span className="basil-legend-item">
          <i className="basil-bar-before" /> now
        </span>
        <span className="basil-legend-item">
          <i className="basil-bar-after" /> after the moves
        </span>
      </figcaption>
    </figure>
  );
}

/** An inline bar for a table cell (normalized load relative to the pod's highest). */
export function InlineBar({ share, tone = 'info' }: { share: number; tone?: 'info' | 'warn' | 'over' }) {
  return (
    <span className={`basil-inline-bar basil-inline-bar-${tone}`} aria-hidden="true">
      <span style={{ width: `${Math.round(Math.min(1, Math.max(0, share)) * 100)}%` }} />
    </span>
  );
}
