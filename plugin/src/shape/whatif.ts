// A what-if answer as table rows: each disk's prediction beside what it measures now.

import type { WhatIfAnswer, WhatIfWorkload } from '../api/types';

/** The controller and unit of a disk id (`vm-43:scsi0:1` → `scsi0:1`). */
export function diskUnit(id: string): string {
  const parts = id.split(':');
  return parts.length >= 3 ? parts.slice(-2).join(':') : id;
}

export interface WhatIfRow {
  name: string;
  group: string | null;
  moved: boolean;
  predicted: WhatIfWorkload;
  /** What the disk measures where it runs now (null when the answer has no input for it). */
  input: { iops: number; read_latency_ms: number; write_latency_ms: number } | null;
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
      };
    })
    .sort((a, b) => order(a.name) - order(b.name));
}
