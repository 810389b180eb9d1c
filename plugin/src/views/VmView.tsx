// The VM monitor tab: per virtual disk its workload model (OIO, IO size, read %, random % and their
// 90th percentiles over time, and the load L of BASIL eq. 1), its pool, and the dynamic reservation,
// limit and shares the SRP loop gives it with its entitlement.

import { useState } from 'react';
import type { DiskDetail, DiskModelSeries, VmDetail } from '../api/types';
import { LineChart } from '../charts/Charts';
import { seriesColor, timeSeries } from '../shape/charts';
import { compact, iops, limit, pct } from '../shape/format';
import { HoursPicker, LoadGate, Section, Stat, useApp, useLoad } from './common';

const PARAMS = [
  { key: 'oio', title: 'Outstanding IOs', unit: '' },
  { key: 'io_size_kb', title: 'IO size', unit: ' KB' },
  { key: 'read_pct', title: 'Read', unit: ' %' },
  { key: 'random_pct', title: 'Random', unit: ' %' },
] as const;

function DiskCharts({ disk, hours }: { disk: DiskDetail; hours: number }) {
  const { api } = useApp();
  const model = useLoad<DiskModelSeries>(() => api.diskModel(disk.id, hours), `dm:${disk.id}:${hours}`, 60_000);
  return (
    <LoadGate loaded={model}>
      {(m) => (
        <>
          <div className="basil-param-grid">
            {PARAMS.map((p, i) => (
              <LineChart
                key={p.key}
                title={`${disk.instance}: ${p.title}`}
                height={150}
                yLabel={`${p.title}${p.unit}`}
                series={[
                  { name: 'sample', points: timeSeries(m.points, (x) => x[p.key]), color: seriesColor(i) },
                  { name: '90th percentile', points: timeSeries(m.p90, (x) => x[p.key]), color: seriesColor(i), dashed: true },
                ]}
                testId={`param-${p.key}`}
              />
            ))}
            <LineChart
              title={`${disk.instance}: load L`}
              height={150}
              yLabel="load L (eq. 1)"
              series={[{ name: 'L of the 90th percentiles', points: timeSeries(m.p90, (x) => x.L), color: seriesColor(5) }]}
              testId="param-L"
            />
          </div>
        </>
      )}
    </LoadGate>
  );
}

function DiskCard({ disk, hours }: { disk: DiskDetail; hours: number }) {
  const w = disk.model;
  const s = disk.srp;
  return (
    <Section title={`${disk.label ?? 'Disk'} (${disk.instance})`} testId={`disk-${disk.instance}`}>
      <div className="basil-stats">
        <Stat label="datastore" value={disk.datastore_name ?? disk.datastore} />
        <Stat label="size" value={`${compact(disk.size_gb)} GB`} />
        <Stat label="pool" value={disk.pool ?? 'none'} testId="disk-pool" />
        <Stat label="OIO (p90)" value={compact(w?.oio)} />
        <Stat label="IO size (p90)" value={w ? `${compact(w.io_size_kb)} KB` : '—'} />
        <Stat label="read" value={pct(w?.read_pct)} />
        <Stat label="random" value={pct(w?.random_pct)} />
        <Stat label="load L" value={compact(w?.L)} testId="disk-L" />
      </div>
      {s ? (
        <div className="basil-stats basil-srp" data-testid="disk-srp">
          <Stat label="reservation" value={`${iops(s.reservation)} IOPS`} testId="srp-reservation" />
          <Stat label="limit" value={s.limit < 0 ? 'unlimited' : `${limit(s.limit)} IOPS`} testId="srp-limit" />
          <Stat label="shares" value={compact(s.shares)} testId="srp-shares" />
          <Stat label="entitlement" value={`${iops(s.entitlement)} IOPS`} testId="srp-entitlement" />
          <Stat label="demand" value={`${iops(s.demand)} IOPS`} />
        </div>
      ) : (
        <p className="basil-muted">No Storage Resource Pool sets this disk's IO allocation.</p>
      )}
      <DiskCharts disk={disk} hours={hours} />
    </Section>
  );
}

export function VmView({ id }: { id: string }) {
  const { api } = useApp();
  const [hours, setHours] = useState(6);
  const vm = useLoad<VmDetail>(() => api.vm(id), `vm:${id}`, 30_000);
  return (
    <div data-testid="vm-view">
      <LoadGate loaded={vm}>
        {(v) => (
          <>
            <div className="basil-title-row">
              <h2 className="basil-h2" data-testid="view-title">
                {v.name}
              </h2>
              {v.power_state && <span className="label">{v.power_state}</span>}
              {v.host && <span className="basil-muted">on {v.host}</span>}
              {(v.pools ?? []).map((p) => (
                <span key={p} className="label label-info" data-testid="vm-pool">
                  pool {p}
                </span>
              ))}
              <HoursPicker hours={hours} onChange={setHours} />
            </div>
            {v.disks.length === 0 && <p className="basil-muted">This VM has no virtual disks.</p>}
            {v.disks.map((d) => (
              <DiskCard key={d.id} disk={d} hours={hours} />
            ))}
          </>
        )}
      </LoadGate>
    </div>
  );
}
