// A what-if answer as an administrator reads it: each disk's prediction beside what it measures now
// (with what interleaving and destaging add, its flags and how far to trust it), the datastore's
// figures beside the paper's (Casale et al.) and where each device parameter came from.

import type { WhatIfAnswer, WhatIfWorkload } from '../api/types';
import { compact, DASH, iops, ms, pct } from './format';

/** The controller and unit of a disk id (`vm-43:scsi0:1` → `scsi0:1`). */
export function diskUnit(id: string): string {
  const parts = id.split(':');
  return parts.length >= 3 ? parts.slice(-2).join(':') : id;
}

/** Below this an added latency is float dust (a microsecond), not something to show. */
export const ADDED_MS_SHOWN = 0.001;
/** A fork-join factor from this on is shown as a flag (1: the read fits one stripe unit). */
export const SPLIT_SHOWN = 1.01;

export interface Added {
  kind: 'positioning' | 'destage';
  ms: number;
  /** What it is, for a tooltip. */
  title: string;
}

export interface Flag {
  kind: 'sequential' | 'split' | 'write-cached' | 'write-waits' | 'write-through';
  label: string;
  title: string;
}

export interface Confidence {
  /** Measured alone: its figures are its own, the estimate is as good as the model. */
  alone: boolean;
  /** "measured alone", "never measured alone". */
  level: string;
  /** Why, when the service says (the part after the colon). */
  reason: string | null;
}

export interface WhatIfRow {
  name: string;
  group: string | null;
  moved: boolean;
  predicted: WhatIfWorkload;
  /** What the disk measures where it runs now (null when the answer has no input for it). */
  input: { iops: number; read_latency_ms: number; write_latency_ms: number } | null;
  /** The positioning (Δ) and destage ms added to each IO, those that are not zero. */
  added: Added[];
  flags: Flag[];
  confidence: Confidence;
}

/** A latency difference with its sign: `+0.42 ms`, `−0.10 ms`. */
export function signedMs(v: number | null | undefined): string {
  if (typeof v !== 'number' || !Number.isFinite(v)) return DASH;
  return `${v < 0 ? '−' : '+'}${ms(Math.abs(v))}`;
}

/** The ms interleaving adds to a disk's IOs: positioning of its broken sequential runs, and the
 * stretch of the devices' destage load; each only when it is not zero. */
export function addedLatency(w: WhatIfWorkload): Added[] {
  const out: Added[] = [];
  const shown = (v: number | null | undefined): v is number => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) >= ADDED_MS_SHOWN;
  if (shown(w.positioning_added_ms)) {
    out.push({
      kind: 'positioning',
      ms: w.positioning_added_ms,
      title: "positioning: its sequential runs broken by the other disks' streams (Δ, added to each IO)",
    });
  }
  if (shown(w.destage_added_ms)) {
    out.push({ kind: 'destage', ms: w.destage_added_ms, title: "destage: the devices' added time writing cached writes back (added to its reads)" });
  }
  return out;
}

export function diskFlags(w: WhatIfWorkload): Flag[] {
  const out: Flag[] = [];
  if (w.sequential) out.push({ kind: 'sequential', label: 'sequential', title: 'at most 25 % random IO: pays positioning when other streams interleave' });
  if (typeof w.fork_join === 'number' && Number.isFinite(w.fork_join) && w.fork_join >= SPLIT_SHOWN) {
    out.push({
      kind: 'split',
      label: `split ×${compact(w.fork_join)}`,
      title: 'its reads span several stripe units: each waits for the slowest of those devices, this many times what a one-unit read adds',
    });
  }
  if (w.write_cached) {
    out.push({
      kind: 'write-cached',
      label: 'cached writes',
      title: 'writes acknowledged by the write-back cache: their latency is kept, their destaging loads the devices',
    });
  }
  if (w.write_through) {
    out.push({
      kind: 'write-through',
      label: 'writes go through',
      title: 'a disk measured with the write cache full is beside it: its cached writes go through to the devices, with the RAID write penalty',
    });
  } else if (w.write_waits) {
    out.push({
      kind: 'write-waits',
      label: 'writes wait',
      title: 'the write cache is full: its cached writes wait for the cache to take them, at the rate the devices destage',
    });
  }
  return out;
}

/** The service's confidence sentence split into its level and its reason. */
export function confidenceOf(sentence: string): Confidence {
  const k = sentence.indexOf(': ');
  const level = (k < 0 ? sentence : sentence.slice(0, k)).trim();
  const reason = k < 0 ? null : sentence.slice(k + 2).trim() || null;
  return { alone: level.startsWith('measured alone'), level, reason };
}

/** The moved disks first (in the order asked), then the disks already on the datastore. */
export function whatIfRows(answer: WhatIfAnswer): WhatIfRow[] {
  const inputs = new Map(answer.inputs.map((i) => [i.name, i]));
  const order = (name: string) => {
    const k = answer.moved.indexOf(name);
    return k < 0 ? answer.moved.length : k;
  };
  return answer.workloads
    .map((w) => {
      const i = inputs.get(w.name);
      return {
        name: w.name,
        group: w.group ?? i?.group ?? null,
        moved: answer.moved.includes(w.name),
        predicted: w,
        input: i ? { iops: i.read_iops + i.write_iops, read_latency_ms: i.read_latency_ms, write_latency_ms: i.write_latency_ms } : null,
        added: addedLatency(w),
        flags: diskFlags(w),
        confidence: confidenceOf(w.confidence),
      };
    })
    .sort((a, b) => order(a.name) - order(b.name));
}

const percent = (share: number | null | undefined) => pct(typeof share === 'number' ? share * 100 : null);

export interface SummaryLine {
  key: 'mix' | 'iops' | 'parallelism' | 'positioning' | 'stripe' | 'write-cost' | 'destage-cost' | 'destage' | 'queue';
  label: string;
  /** The predicted figure (or the parameter used). */
  value: string;
  /** The paper's figure or another one to read beside it. */
  beside: string | null;
  /** Where the figure came from. */
  source: string | null;
  warn: boolean;
}

/** The datastore's lines: mix and IOPS predicted beside the paper's eq. 1–4, then the device
 * parameters the prediction used (m, t_pos, k, c, ΔU, max_conn), each with its source. */
export function whatIfSummary(a: WhatIfAnswer): SummaryLine[] {
  const lines: SummaryLine[] = [
    {
      key: 'mix',
      label: 'Read / write mix',
      value: `${percent(a.read_mix)} / ${percent(a.write_mix)}`,
      beside: a.paper_read_mix === undefined ? null : `eq. 1–2 (isolation throughputs): ${percent(a.paper_read_mix)} / ${percent(a.paper_write_mix)}`,
      source: null,
      warn: false,
    },
    {
      key: 'iops',
      label: 'Read / write IOPS',
      value: `${iops(a.read_iops)} / ${iops(a.write_iops)}`,
      beside: a.paper_read_iops === undefined ? null : `eq. 3–4: ${iops(a.paper_read_iops)} / ${iops(a.paper_write_iops)}`,
      source: null,
      warn: false,
    },
  ];
  if (a.parallelism !== undefined) {
    lines.push({
      key: 'parallelism',
      label: 'm, requests served at once',
      value: compact(a.parallelism),
      beside: null,
      source: a.parallelism_source ?? null,
      warn: false,
    });
  }
  if (a.positioning_ms !== undefined) {
    lines.push({
      key: 'positioning',
      label: 't_pos, a random positioning',
      value: a.positioning_ms === null ? 'not corrected' : ms(a.positioning_ms),
      beside: null,
      source: a.positioning_source ?? null,
      warn: false,
    });
  }
  if (a.stripe_kb !== undefined) {
    lines.push({
      key: 'stripe',
      label: 'stripe unit',
      value: a.stripe_kb === null ? 'IO sizes not used' : `${compact(a.stripe_kb)} KB`,
      beside: null,
      source: a.stripe_kb === null ? null : (a.stripe_source ?? null),
      warn: false,
    });
  }
  if (a.write_cost !== undefined) {
    lines.push({
      key: 'write-cost',
      label: 'k, device writes per destaged write',
      value: a.write_cost === null ? 'cached writes free' : typeof a.write_cost === 'number' && Number.isInteger(a.write_cost) ? String(a.write_cost) : compact(a.write_cost),
      beside: a.write_cache_ms === undefined ? null : a.write_cache_ms === null ? 'no write taken as cached' : `writes ≤ ${ms(a.write_cache_ms)} alone taken as cached`,
      source: a.write_cost_source ?? null,
      warn: false,
    });
  }
  if (a.destage_ms !== undefined) {
    lines.push({
      key: 'destage-cost',
      label: 'c, device time per destaged write',
      value: a.destage_ms === null ? 'none (no t_pos)' : ms(a.destage_ms),
      beside: null,
      source: a.destage_source ?? null,
      warn: false,
    });
  }
  if (a.destage_util !== undefined) {
    const saturated = a.destage_saturated === true;
    lines.push({
      key: 'destage',
      label: 'ΔU, added destage utilisation',
      value: typeof a.destage_util === 'number' ? `${a.destage_util < 0 ? '−' : '+'}${compact(Math.abs(a.destage_util) * 100)} %` : DASH,
      beside:
        fullWhereMeasured(a).length > 0
          ? 'the write cache was full or at its limit where measured'
          : saturated
            ? a.cache_full === true
              ? 'at its bound: the write cache is full'
              : 'at its bound: the write cache would fill'
            : null,
      source: null,
      warn: saturated || fullWhereMeasured(a).length > 0,
    });
  }
  lines.push({
    key: 'queue',
    label: 'max_conn, write share, overhead',
    value: `${compact(a.max_conn)} · ${compact(a.write_share)} · ${compact(a.overhead_factor)}`,
    beside: null,
    source: a.max_conn_source,
    warn: false,
  });
  return lines;
}

/** The disks measured with the write cache full or at its limit, as the answer names them. */
export function fullWhereMeasured(a: WhatIfAnswer): string[] {
  return [...(a.full_where_measured ?? []), ...(a.edge_where_measured ?? [])];
}

/** The warning of a write cache that was full, or at its limit, where a disk was measured (null
 * when none was). */
function fullCacheWarning(a: WhatIfAnswer): string | null {
  const full = a.full_where_measured ?? [];
  const edge = a.edge_where_measured ?? [];
  if (full.length === 0 && edge.length === 0) return null;
  const through = a.workloads.filter((w) => w.write_through === true).map((w) => w.name);
  const parts: string[] = [];
  if (full.length > 0) {
    parts.push(
      `The write cache was already full where ${full.join(', ')} ran: ${full.length === 1 ? 'its' : 'their'} writes were ` +
        'slower than a cache hit, so here they count as writes to the devices.',
    );
  }
  if (edge.length > 0) {
    parts.push(
      `The write cache was at its limit where ${edge.join(', ')} ran: ${edge.length === 1 ? 'its' : 'their'} cached writes ` +
        'were slower than two cache hits, so beside the other disks here it fills.',
    );
  }
  if (through.length > 0) {
    parts.push(`The cached writes of ${through.join(', ')} go through to the devices with the RAID write penalty.`);
  }
  return parts.join(' ');
}

/** The warning of a cache full where a disk was measured (then writes go through rather than wait
 * for admission, and that is the whole story), or of a saturated destage (null when the cache keeps
 * up). */
export function destageWarning(a: WhatIfAnswer): string | null {
  return fullCacheWarning(a) ?? saturatedWarning(a);
}

function saturatedWarning(a: WhatIfAnswer): string | null {
  if (a.destage_saturated !== true) return null;
  if (a.cache_full === true && !(typeof a.admission_wait_ms === 'number' && a.admission_wait_ms > 0)) {
    // The full cache's steady state: nothing is destaged in the background, every cached write
    // goes through to the devices (the service since task wif6).
    const demand = typeof a.destage_demand === 'number' ? ` (${pct(a.destage_demand * 100)} more of their time)` : '';
    const through = a.workloads.filter((w) => w.write_through === true).map((w) => w.name);
    const who = through.length > 0 ? `the cached writes of ${through.join(', ')}` : 'the cached writes';
    return (
      `The devices cannot destage the cached writes as fast as they would come${demand}: the write cache fills and stays full, ` +
      `so ${who} go through to the devices with the RAID write penalty. ` +
      'The predicted latencies are that steady state; until the cache has filled (how long is not known) writes are still cache hits.'
    );
  }
  if (a.cache_full === true) {
    const demand = typeof a.destage_demand === 'number' ? ` (${pct(a.destage_demand * 100)} more of their time)` : '';
    const admitted = typeof a.admitted_write_iops === 'number' ? `, ${iops(a.admitted_write_iops)} IO/s of them admitted` : '';
    return (
      `The devices cannot destage the cached writes as fast as they would come${demand}: the write cache fills, ` +
      `and cached writes wait about ${ms(a.admission_wait_ms ?? null)} each for it${admitted}. ` +
      "The writers' predicted latencies include that wait; how long the cache takes to fill is not known."
    );
  }
  return (
    `Destaging the cached writes would take ${pct(typeof a.destage_util === 'number' ? a.destage_util * 100 : null)} more of the devices' time, ` +
    'the bound: the write cache would fill and writes would wait for the devices, which the prediction does not model. ' +
    'Expect latencies worse than shown.'
  );
}
