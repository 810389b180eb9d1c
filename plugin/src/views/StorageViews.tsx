// The monitor tabs of a datastore and of a datastore cluster (a pod): normalized load over time, the
// device model as an OIO-latency scatter with its fitted line and P, and the pod's recommendation.

import { useState } from 'react';
import type { DatastoreDetail, LoadPoint, ModelPoint, PodDetail, PodHistory } from '../api/types';
import { LineChart, ModelScatter } from '../charts/Charts';
import { fittedLine, historySeries, timeSeries } from '../shape/charts';
import { compact, gb, iops, ms } from '../shape/format';
import { datastoreFlags, imbalanceStatus, N_NOW_MEANING, nowAgainstLastRun } from '../shape/overview';
import { HoursPicker, LoadGate, NotFound, Section, Stat, useApp, useLoad, When } from './common';
import { DatastoreTable, ImbalanceBadge, STATUS_TEXT } from './PodsOverview';
import { PredictionPanel, RecommendationPanel } from './Recommendations';
import { DatastoreDisks, WhatIfDialog } from './WhatIf';

const NO_RUNS = 'No model run in this time range yet: N is recorded each time the model job runs.';

export function DeviceModelPanel({ datastoreId, hours }: { datastoreId: string; hours: number }) {
  const { api } = useApp();
  const ds = useLoad<DatastoreDetail>(() => api.datastore(datastoreId), `ds:${datastoreId}`, 60_000);
  const pts = useLoad<ModelPoint[]>(() => api.datastorePoints(datastoreId, hours), `pts:${datastoreId}:${hours}`, 60_000);
  return (
    <Section title="Device model: latency against outstanding IOs" testId="device-model">
      <LoadGate loaded={ds}>
        {(d) => {
          const points = pts.data ?? [];
          const oioMax = Math.max(1, ...points.map((p) => p.oio));
          const line = fittedLine(d.model?.slope_ms_per_oio, d.model?.intercept_ms, oioMax);
          return (
            <>
              <div className="basil-stats">
                <Stat label="P = 1/slope" value={compact(d.model?.P ?? d.P)} testId="model-P" />
                <Stat label="slope" value={d.model?.slope_ms_per_oio != null ? `${compact(d.model.slope_ms_per_oio)} ms/OIO` : '—'} />
                <Stat label="intercept" value={ms(d.model?.intercept_ms)} />
                <Stat label="fit r²" value={compact(d.model?.r2)} />
                <Stat label="samples used" value={d.model?.points_used ?? '—'} />
                <Stat label="status" value={d.model?.status ?? d.model_status} />
                <Stat label="fitted" value={<When t={d.model?.fitted_at} fallback="—" />} />
              </div>
              {d.model?.summary && <p data-testid="model-summary">{d.model.summary}</p>}
              <ModelScatter
                title={`${d.name}: read latency against read OIO`}
                points={points}
                line={line}
                emptyText="No samples in this time range and no fitted model: the collect job records one every 20 s while the datastore does IO."
                testId="model-scatter"
              />
              <p className="basil-muted basil-help">
                Each dot is one 20-second sample of the datastore (read OIO summed over hosts, latency weighted by IOPS);
                the line is the least-squares fit BASIL uses. A steeper line means a slower device: P = 1/slope.
              </p>
            </>
          );
        }}
      </LoadGate>
    </Section>
  );
}

export function DatastoreView({ id }: { id: string }) {
  const { api, open } = useApp();
  const [hours, setHours] = useState(6);
  const [whatIf, setWhatIf] = useState(false);
  const ds = useLoad<DatastoreDetail>(() => api.datastore(id), `dsv:${id}`, 30_000);
  const load = useLoad<LoadPoint[]>(() => api.datastoreLoad(id, hours), `load:${id}:${hours}`, 60_000);
  const podName = ds.data?.pod ?? null;
  const pod = useLoad<PodDetail | null>(
    () => (podName ? api.pod(podName) : Promise.resolve(null)),
    `dspod:${podName ?? ''}`,
    30_000,
  );
  if (!ds.data && ds.error?.status === 404) {
    return (
      <div data-testid="datastore-view">
        <NotFound what="datastore" id={id} error={ds.error} listHash="#/datastores" listLabel="datastores" />
      </div>
    );
  }
  return (
    <div data-testid="datastore-view">
      <LoadGate loaded={ds}>
        {(d) => (
          <>
            <div className="basil-title-row">
              <h2 className="basil-h2" data-testid="view-title">
                {d.name}
              </h2>
              {d.pod && (
                <button type="button" className="btn btn-sm btn-link" onClick={() => open(`#/pod/${encodeURIComponent(d.pod ?? '')}`)}>
                  pod {d.pod}
                </button>
              )}
              {datastoreFlags(d).map((f) => (
                <span key={f} className="label label-warning">
                  {f}
                </span>
              ))}
              <button type="button" className="btn btn-sm btn-outline" data-testid="whatif-open" onClick={() => setWhatIf(true)}>
                What if…
              </button>
              <HoursPicker hours={hours} onChange={setHours} />
            </div>
            {whatIf && <WhatIfDialog datastoreId={d.id} datastoreName={d.name} pod={d.pod} onClose={() => setWhatIf(false)} />}
            <div className="basil-stats">
              <Stat label="N now (current placement)" value={compact(d.normalized_load)} testId="stat-N" hint={N_NOW_MEANING} />
              <Stat label="ΣL" value={compact(d.load_sum_L)} />
              <Stat label="P" value={compact(d.P)} />
              <Stat label="latency" value={ms(d.latency_ms)} />
              <Stat label="IOPS" value={`${iops(d.iops)} (${iops(d.read_iops)} r / ${iops(d.write_iops)} w)`} />
              <Stat label="free" value={`${gb(d.free_gb)} of ${gb(d.capacity_gb)}`} />
            </div>
            <div className="basil-two-col">
              <Section title="Normalized load N at each model run" testId="load-chart-section">
                <LoadGate loaded={load}>
                  {(pts) => {
                    const runs = nowAgainstLastRun(d.normalized_load, pts);
                    const now = d.normalized_load;
                    return (
                      <>
                        <LineChart
                          title={`${d.name}: normalized load at each model run`}
                          series={[{ name: 'N', points: timeSeries(pts, (p) => p.normalized_load) }]}
                          reference={now !== null && Number.isFinite(now) ? { value: now, label: `N now ${compact(now)}`, tone: 'now' } : undefined}
                          yLabel="N = ΣL / P"
                          emptyText={NO_RUNS}
                          testId="load-chart"
                        />
                        {runs.differs ? (
                          <p className="basil-help" data-testid="n-now-note">
                            N now ({compact(now)}) differs from the last model run ({compact(runs.lastN)}, <When t={runs.lastAt} fallback="—" />):
                            the disks on this datastore or their models changed since, for example a move just applied. The next
                            model run brings the chart up to date.
                          </p>
                        ) : (
                          <p className="basil-muted basil-help">
                            The line is N as each model run computed it; the dashed line is N now, with the disks where they are now.
                          </p>
                        )}
                      </>
                    );
                  }}
                </LoadGate>
              </Section>
              <DeviceModelPanel datastoreId={id} hours={hours} />
            </div>
            <DatastoreDisks datastoreId={d.id} />
            {d.pod ? (
              <RecommendationPanel pod={d.pod} datastores={pod.data?.datastores ?? [d]} focus={d.id} />
            ) : (
              <p className="basil-muted">This datastore is in no pod, so Basil does not balance it.</p>
            )}
          </>
        )}
      </LoadGate>
    </div>
  );
}

export function PodView({ name }: { name: string }) {
  const { api, open } = useApp();
  const [hours, setHours] = useState(6);
  const [selected, setSelected] = useState<string | null>(null);
  const pod = useLoad<PodDetail>(() => api.pod(name), `podv:${name}`, 30_000);
  const hist = useLoad<PodHistory>(() => api.podHistory(name, hours), `podh:${name}:${hours}`, 60_000);
  return (
    <div data-testid="pod-view">
      <LoadGate loaded={pod}>
        {(p) => {
          const focus = selected ?? [...p.datastores].sort((a, b) => (b.normalized_load ?? 0) - (a.normalized_load ?? 0))[0]?.id ?? null;
          return (
            <>
              <div className="basil-title-row">
                <h2 className="basil-h2" data-testid="view-title">
                  {p.name}
                </h2>
                <span className="label">{p.mode}</span>
                <span className="basil-status" data-testid="pod-status" data-status={imbalanceStatus(p.imbalance, p.threshold)}>
                  <span className={`basil-status-dot basil-status-${imbalanceStatus(p.imbalance, p.threshold)}`} aria-hidden="true" />
                  <span className="basil-status-text">{STATUS_TEXT[imbalanceStatus(p.imbalance, p.threshold)]}</span>
                </span>
                <HoursPicker hours={hours} onChange={setHours} />
              </div>
              <div className="basil-view-head">
                <ImbalanceBadge pod={p} />
              </div>
              <div className="basil-two-col">
                <Section title="Normalized load N at each model run" testId="load-chart-section">
                  <LoadGate loaded={hist}>
                    {(h) => (
                      <LineChart
                        title={`${p.name}: normalized load per datastore`}
                        series={historySeries(h.points, p.datastores).datastores.map((d) => ({ name: d.name, points: d.points }))}
                        yLabel="N"
                        emptyText={NO_RUNS}
                        testId="load-chart"
                      />
                    )}
                  </LoadGate>
                </Section>
                <Section title="Imbalance at each model run" testId="imbalance-section">
                  <LoadGate loaded={hist}>
                    {(h) => (
                      <LineChart
                        title={`${p.name}: imbalance`}
                        series={[{ name: 'imbalance', points: historySeries(h.points, p.datastores).imbalance }]}
                        reference={{ value: p.threshold, label: `threshold ${p.threshold}` }}
                        yLabel="σ/μ"
                        emptyText={NO_RUNS}
                        testId="imbalance-chart"
                      />
                    )}
                  </LoadGate>
                </Section>
              </div>
              <Section title="Datastores">
                <DatastoreTable datastores={p.datastores} selected={focus} onOpen={(ds) => setSelected(ds.id)} />
                {focus && (
                  <button type="button" className="btn btn-sm btn-link" onClick={() => open(`#/datastore/${encodeURIComponent(focus)}`)}>
                    Open datastore view
                  </button>
                )}
              </Section>
              {focus && <DeviceModelPanel datastoreId={focus} hours={hours} />}
              <RecommendationPanel pod={p.name} datastores={p.datastores} />
              <PredictionPanel pod={p.name} />
            </>
          );
        }}
      </LoadGate>
    </div>
  );
}
