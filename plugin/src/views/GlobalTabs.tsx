// The global view's other tabs: schedules (jobs and the rebalance window), history (imbalance and
// normalized load over time per pod) and the audit log.

import { useState } from 'react';
import { ApiError } from '../api/client';
import type { AuditEntry, Job, PodHistory, PodSummary, RebalanceWindow, Schedules } from '../api/types';
import { LineChart } from '../charts/Charts';
import { historySeries } from '../shape/charts';
import { dateTime } from '../shape/format';
import { Alert, ErrorAlert, HoursPicker, LoadGate, Section, StateLabel, useApp, useLoad } from './common';

function WindowForm({ window, onSaved }: { window: RebalanceWindow; onSaved: () => void }) {
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
          const { cron, timezone, duration, max_moves, max_gb } = w;
          await api.setRebalanceWindow({ cron, timezone, duration, max_moves, max_gb });
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

function windowText(w: RebalanceWindow): string {
  const next = w.next_window ? `; next ${dateTime(w.next_window.start)} to ${dateTime(w.next_window.end)}` : '';
  return `${w.enabled === false ? 'off' : `cron ${w.cron} (${w.timezone}) for ${w.duration}`}, at most ${w.max_moves} moves and ${w.max_gb} GB${next}`;
}

export function SchedulesTab() {
  const { api } = useApp();
  const sched = useLoad<Schedules>(() => api.schedules(), 'schedules', 60_000);
  const jobs = useLoad<Job[]>(() => api.jobs(), 'jobs', 30_000);
  return (
    <div data-testid="schedules-tab">
      <Section title="Scheduled jobs">
        <LoadGate loaded={jobs}>
          {(list) => (
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
                {list.map((j) => (
                  <tr key={j.id} data-job={j.id}>
                    <td className="left">
                      {j.name}
                      {j.description && <div className="basil-muted basil-reason">{j.description}</div>}
                    </td>
                    <td className="left">
                      <code>{j.trigger}</code>
                    </td>
                    <td className="left">{j.enabled === false ? 'disabled' : dateTime(j.next_run)}</td>
                    <td className="left">{j.last_run ? dateTime(j.last_run.started) : 'never'}</td>
                    <td className="left">
                      {j.last_run && <StateLabel state={j.last_run.outcome} />}{' '}
                      <span className="basil-muted">{j.last_run?.message ?? ''}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </LoadGate>
      </Section>
      <LoadGate loaded={sched}>
        {(s) => (
          <>
            {s.rebalance && (
              <Section title="Rebalance window" testId="rebalance-window">
                <p className="basil-muted">
                  Approved plans, and pods in automatic mode, are applied in this window within its move and GB
                  budget; no move starts after the window closes. Now: {windowText(s.rebalance)}.
                </p>
                <WindowForm window={s.rebalance} onSaved={sched.reload} />
              </Section>
            )}
            {s.pods && Object.keys(s.pods).length > 0 && (
              <Section title="Pods">
                <table className="table table-compact basil-table">
                  <thead>
                    <tr>
                      <th className="left">Pod</th>
                      <th className="left">Mode</th>
                      <th className="left">Rebalance window</th>
                    </tr>
                  </thead>
                  <tbody>
                    {Object.entries(s.pods).map(([pod, p]) => (
                      <tr key={pod}>
                        <td className="left">{pod}</td>
                        <td className="left">
                          <span className="label">{p.mode ?? 'manual'}</span>
                        </td>
                        <td className="left">{windowText(p.rebalance)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </Section>
            )}
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
        {(h) => {
          const hs = historySeries(h.points, pod.datastores);
          return (
          <div className="basil-two-col">
            <LineChart
              title={`${pod.name}: imbalance over time`}
              series={[{ name: 'imbalance', points: hs.imbalance }]}
              reference={{ value: pod.threshold, label: `threshold ${pod.threshold}` }}
              yLabel="imbalance σ/μ"
              testId="imbalance-chart"
            />
            <LineChart
              title={`${pod.name}: normalized load per datastore`}
              series={hs.datastores.map((d) => ({ name: d.name, points: d.points }))}
              yLabel="N"
              testId="load-history-chart"
            />
          </div>
          );
        }}
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
                      <td className="left">
                        {e.who}
                        {e.via && <span className="basil-muted"> ({e.via})</span>}
                      </td>
                      <td className="left">
                        <code>{e.action}</code>
                      </td>
                      <td className="left">{e.target}</td>
                      <td className="left">{e.from}</td>
                      <td className="left">
                        <StateLabel state={e.outcome} />
                      </td>
                      <td className="left basil-muted basil-detail" title={detailText(e.detail)}>
                        {e.message || detailText(e.detail)}
                      </td>
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
