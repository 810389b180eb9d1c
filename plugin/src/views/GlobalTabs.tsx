// The global view's other tabs: schedules (jobs and the rebalance window), history (imbalance and
// normalized load over time per pod) and the audit log.

import { useEffect, useRef, useState } from 'react';
import { ApiError } from '../api/client';
import type { AuditEntry, Health, Job, JobRun, Me, PodHistory, PodSummary, RebalanceWindow, Schedules } from '../api/types';
import { LineChart } from '../charts/Charts';
import { AUDIT_ACTIONS, type AuditFilter, appendPage, nextBefore, viaText, whatText } from '../shape/audit';
import { historySeries } from '../shape/charts';
import {
  changedFieldsText,
  nextRunText,
  otherProblems,
  problemsFor,
  runDuration,
  runNotice,
  runPollDelay,
  type SchedulerState,
  schedulerState,
  triggerText,
  WINDOW_FIELDS,
  type WindowField,
  type WindowForm,
  windowChanges,
  windowForm,
  windowText,
} from '../shape/schedules';
import { Alert, ErrorAlert, HoursPicker, LoadGate, Modal, Section, Spinner, StateLabel, useApp, useLoad, When } from './common';

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, 'client', String(err));
}

const WINDOW_LABELS: Record<WindowField, string> = {
  enabled: 'Window on',
  cron: 'Starts (cron)',
  timezone: 'Time zone',
  duration: 'Lasts',
  max_moves: 'At most moves',
  max_gb: 'At most GB',
};

const WINDOW_HELP: Partial<Record<WindowField, string>> = {
  cron: 'minute hour day month weekday, e.g. 0 2 * * sat',
  timezone: 'IANA name, e.g. UTC or Europe/Berlin',
  duration: 'e.g. 3h or 90m (at most 7d)',
  max_gb: 'of disk copied by Storage vMotion per window',
};

/** The rebalance window's form (admin): only changed fields are sent; refusals land on their fields. */
function WindowEditor({ window, onSaved }: { window: RebalanceWindow; onSaved: (s: Schedules) => void }) {
  const { api } = useApp();
  const [form, setForm] = useState<WindowForm>(() => windowForm(window));
  const [error, setError] = useState<ApiError | null>(null);
  const [saving, setSaving] = useState(false);
  const changes = windowChanges(window, form);
  const changed = Object.keys(changes).length > 0;
  const problems = error?.problems ?? [];
  const set = (field: WindowField, value: string | boolean) => {
    setForm({ ...form, [field]: value });
  };
  return (
    <form
      className="clr-form clr-form-horizontal basil-window-form"
      data-testid="window-form"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        setSaving(true);
        try {
          onSaved(await api.setRebalanceWindow(changes));
        } catch (err) {
          setError(asApiError(err));
        } finally {
          setSaving(false);
        }
      }}
    >
      {WINDOW_FIELDS.map((field) => {
        const messages = problemsFor(problems, field);
        const id = `window-${field}`;
        return (
          <div key={field} className={`clr-form-control basil-form-row${messages.length ? ' clr-error' : ''}`}>
            <label className="clr-control-label" htmlFor={id}>
              {WINDOW_LABELS[field]}
            </label>
            <div className={`clr-control-container${messages.length ? ' clr-error' : ''}`}>
              {field === 'enabled' ? (
                <div className="clr-checkbox-wrapper">
                  <input
                    type="checkbox"
                    className="clr-checkbox"
                    id={id}
                    data-testid={id}
                    checked={form.enabled}
                    onChange={(e) => set('enabled', e.target.checked)}
                  />
                  <label htmlFor={id} className="clr-control-label">
                    {form.enabled ? 'on: approved plans are applied in this window' : 'off: nothing is moved on a schedule'}
                  </label>
                </div>
              ) : (
                <div className="clr-input-wrapper">
                  <input
                    className="clr-input basil-window-input"
                    id={id}
                    data-testid={id}
                    value={form[field]}
                    aria-invalid={messages.length > 0}
                    onChange={(e) => set(field, e.target.value)}
                  />
                </div>
              )}
              {messages.map((m, i) => (
                <span key={i} className="clr-subtext" data-testid={`${id}-problem`}>
                  {m}
                </span>
              ))}
              {messages.length === 0 && WINDOW_HELP[field] && <span className="clr-subtext basil-muted">{WINDOW_HELP[field]}</span>}
            </div>
          </div>
        );
      })}
      <div className="basil-form-actions">
        <button type="submit" className="btn btn-sm btn-primary" disabled={!changed || saving} data-testid="window-save">
          Change window
        </button>
        <button type="button" className="btn btn-sm btn-outline" disabled={!changed || saving} onClick={() => setForm(windowForm(window))}>
          Revert
        </button>
        {!changed && <span className="basil-muted">No changes to send.</span>}
      </div>
      {error && problems.length === 0 && <ErrorAlert error={error} testId="window-error" />}
      {problems.length > 0 && (
        <Alert kind="danger" testId="window-error">
          The service refused the window ({problems.length === 1 ? '1 problem' : `${problems.length} problems`}), nothing changed.
          {otherProblems(problems).map((p, i) => (
            <div key={i}>
              <code>{p.field}</code>: {p.message}
            </div>
          ))}
        </Alert>
      )}
    </form>
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A run asked for with "Run now", as far as the table has followed it. */
interface FollowedRun {
  name: string;
  run: JobRun | null;
  /** The service's 409: the job was running already, so no new run started. */
  conflict: string | null;
  error: ApiError | null;
  busy: boolean;
}

function RunNotices({ followed }: { followed: Record<string, FollowedRun> }) {
  return (
    <>
      {Object.entries(followed).map(([id, f]) => {
        const notice = f.run ? runNotice(f.name, f.run) : null;
        return (
          <div key={id} data-job={id} className="basil-run-notices">
            {f.conflict && (
              <Alert kind="warning" testId="job-conflict">
                {f.name} was not started again: {f.conflict}.
                {f.run ? ' Following the run in progress.' : ''}
              </Alert>
            )}
            {notice && (
              <Alert kind={notice.kind} testId="job-notice">
                {notice.text}
              </Alert>
            )}
            <ErrorAlert error={f.error} testId="job-error" />
          </div>
        );
      })}
    </>
  );
}

function JobsTable({ jobs, schedules, scheduler, canRun, onRan }: {
  jobs: Job[];
  schedules: Schedules | undefined;
  scheduler: SchedulerState | null;
  canRun: boolean;
  onRan: () => void;
}) {
  const { api } = useApp();
  const [followed, setFollowed] = useState<Record<string, FollowedRun>>({});
  const alive = useRef(true);
  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);
  const update = (id: string, patch: Partial<FollowedRun>) => {
    if (alive.current) setFollowed((prev) => ({ ...prev, [id]: { ...prev[id], ...patch } }));
  };
  // Asks the service again, sooner at first, until the run is no longer running.
  const follow = async (job: Job, started: JobRun) => {
    let run = started;
    for (let attempt = 0; run.outcome === 'running' && run.id !== undefined; attempt++) {
      await sleep(runPollDelay(attempt));
      if (!alive.current) return;
      run = await api.jobRun(job.id, run.id);
      update(job.id, { run });
    }
  };
  const run = async (job: Job) => {
    setFollowed((prev) => ({ ...prev, [job.id]: { name: job.name, run: null, conflict: null, error: null, busy: true } }));
    try {
      let started: JobRun | undefined;
      try {
        started = await api.runJob(job.id);
      } catch (err) {
        const e = asApiError(err);
        if (e.status !== 409) throw e;
        update(job.id, { conflict: e.describe() });
        // Running already: follow the run in progress instead, when the newest run is that one.
        const [latest] = await api.jobRuns(job.id, 1);
        started = latest?.outcome === 'running' ? latest : undefined;
      }
      if (started) {
        update(job.id, { run: started });
        onRan(); // the table shows the run as running
        await follow(job, started);
      }
    } catch (err) {
      update(job.id, { error: asApiError(err) });
    } finally {
      update(job.id, { busy: false });
      onRan();
    }
  };
  const busy = (id: string) => followed[id]?.busy === true;
  return (
    <>
      {scheduler === 'stopped' && (
        <Alert kind="info" testId="scheduler-stopped">
          This service&apos;s scheduler is stopped, so no job runs on its own and none has a next run.
          {canRun ? ' Run one now from this table.' : ' An admin can run one now from this table.'}
        </Alert>
      )}
      {scheduler === 'on-demand' && (
        <Alert kind="info" testId="scheduler-on-demand">
          This service&apos;s scheduler runs only the jobs asked for: none runs on its schedule (the periods below are the
          configured ones), so none has a next run.
          {canRun ? ' Run one now from this table.' : ' An admin can run one now from this table.'}
        </Alert>
      )}
      <RunNotices followed={followed} />
      <table className="table table-compact basil-table" data-testid="jobs-table">
        <thead>
          <tr>
            <th className="left">Job</th>
            <th className="left">Runs</th>
            <th className="left">Next run</th>
            <th className="left">Last run</th>
            <th className="left">Outcome</th>
            {canRun && <th />}
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => {
            const trig = j.id === 'rebalance' && schedules?.rebalance && j.enabled !== false
              ? { text: `window cron ${schedules.rebalance.cron} (${schedules.rebalance.timezone}) for ${schedules.rebalance.duration}`, raw: j.trigger }
              : triggerText(j.trigger);
            const took = runDuration(j.last_run);
            return (
              <tr key={j.id} data-job={j.id}>
                <td className="left">
                  {j.name}
                  {j.description && <div className="basil-muted basil-reason">{j.description}</div>}
                </td>
                <td className="left" title={trig.raw || undefined} data-testid="job-trigger">
                  {trig.text}
                </td>
                <td className="left" data-testid="job-next">
                  {nextRunText(j, scheduler)}
                </td>
                <td className="left" data-testid="job-last">
                  {j.last_run ? <When t={j.last_run.started} /> : 'never'}
                  {took && <div className="basil-muted basil-reason">took {took}</div>}
                </td>
                <td className="left" data-testid="job-outcome">
                  {j.last_run ? <StateLabel state={j.last_run.outcome} /> : <span className="basil-muted">—</span>}
                  {j.last_run?.message && <div className="basil-muted basil-reason">{j.last_run.message}</div>}
                </td>
                {canRun && (
                  <td>
                    <button
                      type="button"
                      className="btn btn-sm btn-link basil-link"
                      disabled={busy(j.id) || j.enabled === false}
                      onClick={() => run(j)}
                      data-testid={`run-${j.id}`}
                    >
                      {busy(j.id) ? 'Running…' : 'Run now'}
                    </button>
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

/** Where the window in force comes from: basil.yaml, or changes Basil keeps over it; admins may reset. */
function WindowOrigin({ window, isAdmin, onReset }: { window: RebalanceWindow; isAdmin: boolean; onReset: (s: Schedules) => void }) {
  const { api } = useApp();
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const changed = window.changed;
  if (!changed) {
    return (
      <p className="basil-muted" data-testid="window-origin">
        This is the window configured in basil.yaml.
      </p>
    );
  }
  const fields = changedFieldsText(changed.fields);
  const reset = async () => {
    setBusy(true);
    setError(null);
    try {
      const answer = await api.resetRebalanceWindow();
      setConfirm(false);
      onReset(answer);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Alert kind="warning" testId="window-changed">
        This window differs from the one in basil.yaml: {fields} (changed by {changed.by}, <When t={changed.at} />). Basil keeps
        these changes across restarts and applies them over basil.yaml, which it does not rewrite.
      </Alert>
      {isAdmin && (
        <div className="basil-form-actions">
          <button type="button" className="btn btn-sm btn-danger-outline" disabled={busy} onClick={() => setConfirm(true)} data-testid="window-reset">
            Reset to the configured window
          </button>
        </div>
      )}
      {confirm && (
        <Modal
          title="Reset the rebalance window?"
          onClose={() => setConfirm(false)}
          testId="window-reset-confirm"
          footer={
            <>
              <button type="button" className="btn btn-outline" onClick={() => setConfirm(false)} data-testid="window-reset-cancel">
                Cancel
              </button>
              <button type="button" className="btn btn-danger" disabled={busy} onClick={reset} data-testid="window-reset-ok">
                {busy ? 'Resetting…' : 'Reset to basil.yaml'}
              </button>
            </>
          }
        >
          <p>
            Basil forgets the changes made to the window ({fields}) and applies the window configured in basil.yaml again, now
            and after every restart.
          </p>
          <ErrorAlert error={error} testId="window-reset-error" />
        </Modal>
      )}
    </>
  );
}

const MODE_TEXT: Record<string, string> = {
  manual: 'plans wait for an approval',
  automatic: 'the window applies a fresh plan',
};

export function SchedulesTab() {
  const { api } = useApp();
  const sched = useLoad<Schedules>(() => api.schedules(), 'schedules', 60_000);
  const jobs = useLoad<Job[]>(() => api.jobs(), 'jobs', 30_000);
  const health = useLoad<Health | null>(() => api.health().catch(() => null), 'health', 60_000);
  const me = useLoad<Me | null>(() => api.me().catch(() => null), 'me');
  const [notice, setNotice] = useState<'changed' | 'reset' | null>(null);
  const isAdmin = me.data?.role === 'admin';
  const scheduler = schedulerState(health.data?.scheduler, jobs.data);
  const afterWrite = (kind: 'changed' | 'reset') => {
    setNotice(kind);
    sched.reload();
    jobs.reload();
  };
  return (
    <div data-testid="schedules-tab">
      <Section title="Scheduled jobs" testId="jobs">
        {/* Health and the caller first: without them a job with no next run could not say why, and an
            admin would see the table without its "Run now" column for a moment. */}
        {health.data === undefined || me.data === undefined ? (
          <Spinner />
        ) : (
          <LoadGate loaded={jobs}>
            {(list) =>
              list.length === 0 ? (
                <p className="basil-muted">The service reports no jobs.</p>
              ) : (
                <JobsTable jobs={list} schedules={sched.data} scheduler={scheduler} canRun={isAdmin} onRan={jobs.reload} />
              )
            }
          </LoadGate>
        )}
      </Section>
      <LoadGate loaded={sched}>
        {(s) => (
          <>
            {s.rebalance ? (
              <Section title="Rebalance window" testId="rebalance-window">
                <p>
                  Approved plans, and pods in automatic mode, are applied in this window within its move and GB budget; no
                  move starts after the window closes.
                </p>
                <p data-testid="window-now">
                  <strong>Now:</strong> {windowText(s.rebalance)}.
                </p>
                <WindowOrigin window={s.rebalance} isAdmin={isAdmin} onReset={() => afterWrite('reset')} />
                {notice === 'changed' && (
                  <Alert kind="success" testId="window-notice">
                    The rebalance window is changed, as shown above. Basil keeps the change across restarts: it applies over the
                    window in basil.yaml until an admin resets it.
                  </Alert>
                )}
                {notice === 'reset' && (
                  <Alert kind="success" testId="window-reset-notice">
                    The rebalance window is the one configured in basil.yaml again, as shown above.
                  </Alert>
                )}
                {me.data === undefined ? (
                  <Spinner />
                ) : isAdmin ? (
                  <WindowEditor
                    key={JSON.stringify({ ...s.rebalance, next_window: null })}
                    window={s.rebalance}
                    onSaved={() => afterWrite('changed')}
                  />
                ) : (
                  <p className="basil-muted" data-testid="window-readonly">
                    {me.data
                      ? `Changing the window takes an admin; you are ${me.data.name} (${me.data.role}).`
                      : 'Changing the window takes an admin.'}
                  </p>
                )}
              </Section>
            ) : (
              <Section title="Rebalance window" testId="rebalance-window">
                <p className="basil-muted">The service reports no rebalance window, so approved plans are applied only by hand.</p>
              </Section>
            )}
            {s.pods && Object.keys(s.pods).length > 0 && (
              <Section title="Pods" testId="schedule-pods">
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
                          <span className="label">{p.mode ?? 'manual'}</span>{' '}
                          <span className="basil-muted">{MODE_TEXT[p.mode ?? 'manual'] ?? ''}</span>
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

const NO_RUNS = 'No model run in this time range yet: imbalance and N are recorded each time the model job runs.';

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
              emptyText={NO_RUNS}
              testId="imbalance-chart"
            />
            <LineChart
              title={`${pod.name}: normalized load per datastore`}
              series={hs.datastores.map((d) => ({ name: d.name, points: d.points }))}
              yLabel="N"
              emptyText={NO_RUNS}
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

const PAGE = 50;

export function AuditTab() {
  const { api } = useApp();
  const [filter, setFilter] = useState<AuditFilter>({ actor: '', action: '' });
  const [applied, setApplied] = useState<AuditFilter>(filter);
  const [older, setOlder] = useState<{ entries: AuditEntry[]; last: AuditEntry[] } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const first = useLoad<AuditEntry[]>(() => api.audit(PAGE, null, applied), `audit:${applied.actor}:${applied.action}`, 30_000);
  const entries = appendPage(first.data ?? [], older?.entries ?? []);
  const before = nextBefore(entries, older ? older.last : (first.data ?? []), PAGE);
  const filtered = applied.actor.trim() !== '' || applied.action !== '';
  const more = async () => {
    if (!before) return;
    try {
      const page = await api.audit(PAGE, before, applied);
      setOlder({ entries: [...(older?.entries ?? []), ...page], last: page });
    } catch (err) {
      setError(asApiError(err));
    }
  };
  return (
    <div data-testid="audit-tab">
      <Section title="Audit log">
        <p className="basil-muted">
          Every change made through the API or this plugin, and every one Basil makes on its own, newest first: who, how they
          signed in, from where, and how it ended.
        </p>
        <form
          className="basil-inline-form basil-audit-filter"
          onSubmit={(e) => {
            e.preventDefault();
            setOlder(null);
            setApplied(filter);
          }}
        >
          <div className="clr-select-wrapper">
            <select
              className="clr-select"
              aria-label="action"
              data-testid="audit-action"
              value={filter.action}
              onChange={(e) => {
                const next = { ...filter, action: e.target.value };
                setFilter(next);
                setOlder(null);
                setApplied(next);
              }}
            >
              {AUDIT_ACTIONS.map((a) => (
                <option key={a.value} value={a.value}>
                  {a.label}
                </option>
              ))}
            </select>
          </div>
          <input
            className="clr-input"
            aria-label="who"
            placeholder="who (exact name)"
            data-testid="audit-actor"
            value={filter.actor}
            onChange={(e) => setFilter({ ...filter, actor: e.target.value })}
          />
          <button type="submit" className="btn btn-sm btn-outline">
            Filter
          </button>
        </form>
        <ErrorAlert error={error} />
        <LoadGate loaded={first}>
          {() =>
            entries.length === 0 ? (
              <p className="basil-muted" data-testid="audit-empty">
                {filtered
                  ? 'No entry matches this filter.'
                  : 'Nothing recorded yet: no change has been made through the API or this plugin, and Basil has changed nothing on its own.'}
              </p>
            ) : (
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
                      <th className="left">What</th>
                    </tr>
                  </thead>
                  <tbody>
                    {entries.map((e, i) => (
                      <tr key={e.id ?? `${e.at}-${i}`} data-action={e.action} data-testid="audit-row">
                        <td className="left basil-nowrap">
                          <When t={e.at} />
                        </td>
                        <td className="left basil-nowrap" data-testid="audit-who">
                          {e.who}
                          {e.via && <div className="basil-muted basil-reason">{viaText(e.via)}</div>}
                        </td>
                        <td className="left">
                          <code>{e.action}</code>
                        </td>
                        <td className="left" data-testid="audit-target">
                          {e.target}
                        </td>
                        <td className="left">{e.from}</td>
                        <td className="left" data-testid="audit-outcome">
                          <StateLabel state={e.outcome} />
                        </td>
                        <td className="left basil-detail" data-testid="audit-what">
                          {whatText(e)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {before ? (
                  <button type="button" className="btn btn-sm btn-outline" onClick={more} data-testid="audit-older">
                    Older entries
                  </button>
                ) : (
                  <p className="basil-muted" data-testid="audit-end">
                    {entries.length === 1 ? '1 entry' : `${entries.length} entries`}
                    {filtered ? ' match this filter' : ''}: nothing older is kept.
                  </p>
                )}
              </>
            )
          }
        </LoadGate>
      </Section>
    </div>
  );
}
