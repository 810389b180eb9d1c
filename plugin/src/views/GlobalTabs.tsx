// The global view's other tabs: schedules (jobs and the rebalance window), history (imbalance and
// normalized load over time per pod) and the audit log.

import { useState } from 'react';
import { ApiError } from '../api/client';
import type { AuditEntry, PodHistory, PodSummary, RebalanceWindow, Schedules } from '../api/types';
import { LineChart } from '../charts/Charts';
import { timeSeries } from '../shape/charts';
import { dateTime } from '../shape/format';
import { Alert, ErrorAlert, HoursPicker, LoadGate, Section, StateLabel, useApp, useLoad } from './common';

function WindowForm({ window, pod, onSaved }: { window: RebalanceWindow; pod?: string; onSaved: () => void }) {
  const { api } = useApp();
  const [w, setW] = useState<RebalanceWindow>(window);
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState(false);
  const problem = (field: string) => error?.problems.filter((p) => p.field === field || p.field.endsWith(`.${field}`)).map((p) => p.message) ?? [];
  const input = (field: keyof RebalanceWindow, label: string, numeric = false) => (
    <div className={`clr-form-control basil-form-row${problem(field).length ? ' clr-error' : ''}`}>
      <label className="clr-control-label">{label}</label>
      <div className={`clr-control-container${problem(field).length ? ' clr-error' : ''}`}>
        <div className="clr-input-wrapper">
          <input
            className="clr-input"
            value={String(w[field] ?? '')}
            data-testid={`window-${field}`}
            onChange={(e) => {
              const v = e.target.value;
              setW({ ...w, [field]: numeric && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v });
              setSaved(false);
            }}
          />
        </div>
        {problem(field).map((m, i) => (
          <span key={i} className="clr-subtext">
            {m}
          </span>
        ))}
      </div>
    </div>
  );
  return (
    <form
      className="clr-form clr-form-horizontal basil-window-form"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          await api.setRebalanceWindow(pod ? { ...w, pod } : w);
          setSaved(true);
          onSaved();
        } catch (err) {
          setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
        }
      }}
    >
      {input('cron', 'Starts (cron)')}
      {input('timezone', 'Time zone')}
      {input('duration', 'Lasts')}
      {input('max_moves', 'At most moves', true)}
      {input('max_gb', 'At most GB', true)}
      <button type="submit" className="btn btn-sm btn-primary">
        Change window
      </button>
      {saved && <Alert kind="success">The rebalance window is changed.</Alert>}
      {error && error.problems.length === 0 && <ErrorAlert error={error} />}
      {error && error.problems.length > 0 && <Alert kind="danger">The service refused the window: see the fields above.</Alert>}
    </form>
  );
}

export function SchedulesTab() {
  const { api } = useApp();
  const sched = useLoad<Schedules>(() => api.schedules(), 'schedules', 60_000);
  return (
    <div data-testid="schedules-tab">
      <LoadGate loaded={sched}>
        {(s) => (
          <>
            <Section title="Scheduled jobs">
              {(s.jobs ?? []).length === 0 ? (
                <p className="basil-muted">No scheduled jobs reported.</p>
              ) : (
                <table className="table table-compact basil-table" data-testid="jobs-table">
                  <thead>
                    <tr>
                      <th className="left">Job</th>
                      <th className="left">Trigger</th>
                      <th className="left">Next run</th>
                      <th className="left">Last run</th>
                      <th className="left">Outcome</th>
                    </tr>
                  </thead>
                  <tbody>
                    {(s.jobs ?? []).map((j) => (
                      <tr key={j.id}>
                        <td className="left">{j.name}</td>
                        <td className="left">
                          <code>{j.trigger}</code>
                        </td>
                        <td className="left">{dateTime(j.next_run)}</td>
                        <td className="left">{j.last_run ? dateTime(j.last_run.started) : 'never'}</td>
                        <td className="left">
                          {j.last_run && <StateLabel state={j.last_run.outcome} />} <span className="basil-muted">{j.last_run?.message ?? ''}</span>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </Section>
            {s.rebalance && (
              <Section title="Rebalance window">
                <p className="basil-muted">
                  Approved plans and automatic pods are applied in this window, within its move and GB budget; it stops
                  starting moves when the window closes.
                </p>
                <WindowForm window={s.rebalance} onSaved={sched.reload} />
              </Section>
            )}
            {(s.pods ?? []).map((p) => (
              <Section key={p.pod} title={`Rebalance window: ${p.pod}`}>
                <WindowForm window={p.rebalance} pod={p.pod} onSaved={sched.reload} />
              </Section>
            ))}
          </>
        )}
      </LoadGate>
    </div>
  );
}

function PodHistoryChart({ pod, hours }: { pod: PodSummary; hours: number }) {
  const { api } = useApp();
  const hist = useLoad<PodHistory>(() => api.podHistory(pod.name, hours), `hist:${pod.name}:${hours}`, 60_000);
  return (
    <Section title={`${pod.name}`} testId={`history-${pod.name}`}>
      <LoadGate loaded={hist}>
        {(h) => (
          <div className="basil-two-col">
            <LineChart
              title={`${pod.name}: imbalance over time`}
              series={[{ name: 'imbalance', points: timeSeries(h.imbalance, (p) => p.value) }]}
              reference={{ value: pod.threshold, label: `threshold ${pod.threshold}` }}
              yLabel="imbalance σ/μ"
              testId="imbalance-chart"
            />
            <LineChart
              title={`${pod.name}: normalized load per datastore`}
              series={h.datastores.map((d) => ({ name: d.name, points: timeSeries(d.points, (p) => p.N) }))}
              yLabel="N"
              testId="load-history-chart"
            />
          </div>
        )}
      </LoadGate>
    </Section>
  );
}

export function HistoryTab() {
  const { api } = useApp();
  const [hours, setHours] = useState(24);
  const pods = useLoad<PodSummary[]>(() => api.pods(), 'pods-history');
  return (
    <div data-testid="history-tab">
      <div className="basil-toolbar">
        <span>Imbalance and normalized load over time</span>
        <HoursPicker hours={hours} onChange={setHours} />
      </div>
      <LoadGate loaded={pods}>{(list) => list.map((p) => <PodHistoryChart key={p.name} pod={p} hours={hours} />)}</LoadGate>
    </div>
  );
}

function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return '';
  if (typeof detail === 'string') return detail;
  try {
    return JSON.stringify(detail);
  } catch {
    return String(detail);
  }
}

export function AuditTab() {
  const { api } = useApp();
  const [older, setOlder] = useState<AuditEntry[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const first = useLoad<AuditEntry[]>(() => api.audit(50), 'audit', 30_000);
  const entries = [...(first.data ?? []), ...older];
  const more = async () => {
    const last = entries[entries.length - 1];
    if (!last) return;
    try {
      setOlder([...older, ...(await api.audit(50, last.at))]);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
    }
  };
  return (
    <div data-testid="audit-tab">
      <Section title="Audit log">
        <ErrorAlert error={error} />
        <LoadGate loaded={first}>
          {() => (
            <>
              <table className="table table-compact basil-table" data-testid="audit-table">
                <thead>
                  <tr>
                    <th className="left">When</th>
                    <th className="left">Who</th>
                    <th className="left">Action</th>
                    <th className="left">Target</th>
                    <th className="left">From</th>
                    <th className="left">Outcome</th>
                    <th className="left">Detail</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((e, i) => (
                    <tr key={`${e.at}-${i}`}>
                      <td className="left">{dateTime(e.at)}</td>
                      <td className="left">{e.who}</td>
                      <td className="left">
                        <code>{e.action}</code>
                      </td>
                      <td className="left">{e.target}</td>
                      <td className="left">{e.from}</td>
                      <td className="left">
                        <StateLabel state={e.outcome} />
                      </td>
                      <td className="left basil-muted basil-detail">{detailText(e.detail)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {entries.length > 0 && (
                <button type="button" className="btn btn-sm btn-outline" onClick={more}>
                  Older entries
                </button>
              )}
            </>
          )}
        </LoadGate>
      </Section>
    </div>
  );
}
