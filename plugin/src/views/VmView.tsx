// The VM monitor tab: per virtual disk its workload model (OIO, IO size, read %, random % and their
// 90th percentiles over time, and the load L of BASIL eq. 1), its pool, and the dynamic reservation,
// limit and shares the SRP loop gives it with its entitlement; above them, the SRP reservation its
// uploaded request trace needs for a latency target (VmReservation.tsx).

import { useState } from 'react';
import type { DiskDetail, DiskModelSeries, Entitlements, VmDetail, VmPoolRef } from '../api/types';
import { LineChart } from '../charts/Charts';
import { seriesColor, timeSeries } from '../shape/charts';
import { compact, iops, limit, ms, pct } from '../shape/format';
import { diskEntitlement } from '../shape/pools';
import { Alert, datastoreHash, ErrorAlert, HoursPicker, LoadGate, NotFound, ObjectLink, Section, Stat, useApp, useLoad, When } from './common';
import { VmReservationPanel } from './VmReservation';

const PARAMS = [
  { key: 'oio', title: 'Outstanding IOs', unit: '' },
  { key: 'io_size_kb', title: 'IO size', unit: 'KB' },
  { key: 'read_pct', title: 'Reads', unit: '%' },
  { key: 'random_pct', title: 'Random IOs', unit: '%' },
] as const;

function DiskCharts({ disk, hours }: { disk: DiskDetail; hours: number }) {
  const { api } = useApp();
  const model = useLoad<DiskModelSeries>(() => api.diskModel(disk.id, hours), `dm:${disk.id}:${hours}`, 60_000);
  return (
    <LoadGate loaded={model}>
      {(m) => (
        <div className="basil-param-grid">
          {PARAMS.map((p, i) => (
            <LineChart
              key={p.key}
              title={`${disk.instance}: ${p.title} (90th percentile)`}
              height={150}
              yLabel={`${p.title} (90th percentile${p.unit ? `, ${p.unit}` : ''}) over time`}
              series={[{ name: `${p.title} p90`, points: timeSeries(m.points, (x) => x[p.key]), color: seriesColor(i) }]}
              emptyText="No workload model fitted in this time range"
              testId={`param-${p.key}`}
            />
          ))}
          <LineChart
            title={`${disk.instance}: load L`}
            height={150}
            yLabel="Load L (BASIL eq. 1) over time"
            series={[{ name: 'L', points: timeSeries(m.points, (x) => x.L), color: seriesColor(5) }]}
            emptyText="No workload model fitted in this time range"
            testId="param-L"
          />
        </div>
      )}
    </LoadGate>
  );
}

function DiskCard({ disk, hours, trees, entitlements }: { disk: DiskDetail; hours: number; trees: VmPoolRef[]; entitlements: Entitlements[] }) {
  const w = disk.model;
  const io = disk.io;
  const srp = diskEntitlement(disk.id, entitlements);
  const tree = srp?.tree ?? trees.find((t) => t.datastore === disk.datastore_name || t.datastore === disk.datastore)?.pool_tree ?? null;
  const applied = srp?.applied ?? disk.applied ?? null;
  return (
    <Section title={`${disk.label ?? 'Disk'} (${disk.instance})`} testId={`disk-${disk.instance}`}>
      <div className="basil-stats">
        <Stat
          label="datastore"
          value={
            <ObjectLink hash={datastoreHash(disk.datastore)} testId="disk-datastore-link">
              {disk.datastore_name ?? disk.datastore}
            </ObjectLink>
          }
        />
        <Stat label="size" value={`${compact(disk.size_gb)} GB`} />
        <Stat label="pool tree" value={tree ?? 'none'} testId="disk-pool" />
        <Stat label="OIO (p90)" value={compact(w?.oio)} />
        <Stat label="IO size (p90)" value={w ? `${compact(w.io_size_kb)} KB` : '—'} />
        <Stat label="read (p90)" value={pct(w?.read_pct)} />
        <Stat label="random (p90)" value={pct(w?.random_pct)} />
        <Stat label="load L" value={compact(w?.L)} testId="disk-L" />
        {disk.latest && <Stat label="now" value={`${iops(disk.latest.iops)} IOPS, ${ms(disk.latest.latency_ms)}`} />}
      </div>
      {(w?.flags ?? []).length > 0 && <Alert kind="warning">The workload model is less reliable here: {(w?.flags ?? []).join(', ')}.</Alert>}
      <div className="basil-stats basil-srp" data-testid="disk-srp">
        <Stat label="reservation (vCenter)" value={io ? `${iops(io.reservation)} IOPS` : '—'} testId="srp-reservation" />
        <Stat label="limit (vCenter)" value={io ? (io.limit < 0 ? 'unlimited' : `${limit(io.limit)} IOPS`) : '—'} testId="srp-limit" />
        <Stat label="shares (vCenter)" value={io ? `${compact(io.shares)}${io.shares_level && io.shares_level !== 'custom' ? ` (${io.shares_level})` : ''}` : '—'} testId="srp-shares" />
        <Stat label="entitlement" value={srp ? `${iops(srp.ent.entitlement)} IOPS` : '—'} testId="srp-entitlement" />
        <Stat label="demand" value={srp ? `${iops(srp.ent.demand)} IOPS` : '—'} />
        <Stat
          label="last issued by Basil"
          value={
            applied ? (
              <>
                {applied.outcome ?? 'ok'} <When t={applied.issued_at} />
              </>
            ) : (
              'never'
            )
          }
          testId="srp-applied"
        />
      </div>
      {!srp && <p className="basil-muted">No Storage Resource Pool divides this disk's datastore for it: its settings are vCenter's own.</p>}
      {w ? (
        <DiskCharts disk={disk} hours={hours} />
      ) : (
        <p className="basil-muted" data-testid="no-model">
          No workload model yet: the disk has done too little IO to fit one.
        </p>
      )}
    </Section>
  );
}

export function VmView({ id }: { id: string }) {
  const { api } = useApp();
  const [hours, setHours] = useState(6);
  const vm = useLoad<VmDetail>(() => api.vm(id), `vm:${id}`, 30_000);
  const trees = vm.data?.pools ?? [];
  const treeKey = trees.map((t) => t.pool_tree).join(',');
  const ents = useLoad<Entitlements[]>(
    () => Promise.all(trees.map((t) => api.entitlements(t.pool_tree))),
    `vm-ent:${id}:${treeKey}`,
    30_000,
  );
  if (!vm.data && vm.error?.status === 404) {
    return (
      <div data-testid="vm-view">
        <NotFound what="VM" id={id} error={vm.error} listHash="#/vms" listLabel="VMs" />
      </div>
    );
  }
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
              {(v.host_name ?? v.host) && <span className="basil-muted">on {v.host_name ?? v.host}</span>}
              {(v.pools ?? []).map((p) => (
                <span key={p.pool_tree} className="label label-info" data-testid="vm-pool">
                  pool tree {p.pool_tree} on{' '}
                  {v.disks.find((d) => d.datastore === p.datastore)?.datastore_name ?? p.datastore}
                </span>
              ))}
              <HoursPicker hours={hours} onChange={setHours} />
            </div>
            <ErrorAlert error={ents.error} />
            <VmReservationPanel id={v.id} />
            {v.disks.length === 0 && <p className="basil-muted">This VM has no virtual disks.</p>}
            {v.disks.map((d) => (
              <DiskCard key={d.id} disk={d} hours={hours} trees={v.pools ?? []} entitlements={ents.data ?? []} />
            ))}
          </>
        )}
      </LoadGate>
    </div>
  );
}
