// A pod's latest recommendation (moves with their reasons and predicted effect), Approve / Apply now
// behind a confirmation, and the plans in flight with their progress, polled while they run.

import { useState } from 'react';
import { ApiError } from '../api/client';
import type { DatastoreSummary, Move, PinnedBlocking, Plan, PredictionCheck, Recommendation, SloHistory } from '../api/types';
import { BeforeAfterBars, LineChart } from '../charts/Charts';
import { compact, gb, ms } from '../shape/format';
import { hasOpenMoves, isPlanFinal, moveEffect, moveEnds, movesSummary, planProgress, recommendationBars, swapLabel } from '../shape/overview';
import { otherUnmet, sloGroupRows, sloHistoryGroups, sloMoveLine, sloOf } from '../shape/slo';
import { imbalanceLine, isStale, pinnedSummary, predictionErrorLine, predictionRows } from '../shape/recommendation';
import { Alert, ErrorAlert, LoadGate, Modal, Section, Spinner, StateLabel, useApp, useLoad, VmLink, vmOfDisk, When } from './common';

/** The disks that keep a pod over its threshold because they may not move, with the reason for each. */
function PinnedBlock({ rec }: { rec: Recommendation }) {
  const entries: PinnedBlocking[] = rec.pinned_blocking ?? [];
  if (entries.length === 0) return null;
  return (
    <div data-testid="pinned-blocking">
      <Alert kind="warning">{pinnedSummary(entries, rec.pinned_blocking_total)}.</Alert>
      <table className="table table-compact basil-table">
        <thead>
          <tr>
            <th className="left">VM / disks</th>
            <th className="left">On</th>
            <th className="left">Why it cannot move</th>
            <th>Imbalance if moved</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={`${e.vm}-${e.disks.join(',')}`} data-code={e.code}>
              <td className="left">
                <div className="basil-nowrap">
                  <VmLink id={e.vm} name={e.vm_name ?? e.vm} />
                </div>
                <div className="basil-muted basil-nowrap">{e.disks.join(', ')}</div>
              </td>
              <td className="left">{e.datastore_name ?? e.datastore}</td>
              <td className="left">{e.reason}</td>
              <td>
                {compact(e.imbalance_if_moved)}
                {e.best_target_name ? ` (to ${e.best_target_name})` : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Goal slo over time: per group its measured and predicted RT against the DRT line, and its damage. */
export function SloHistoryCharts({ pod, round }: { pod: string; round: string | number }) {
  const { api } = useApp();
  // Keyed by the round shown, so a new round (Recompute, the scheduled job) adds its point.
  const history = useLoad<SloHistory>(() => api.sloHistory(pod), `slo-history:${pod}:${round}`, 300_000);
  return (
    <div data-testid="slo-history">
      <LoadGate loaded={history}>
        {(h) =>
          sloHistoryGroups(h).map((g) => (
            <div key={g.name} data-testid="slo-history-group" data-group={g.name}>
              <h4>
                {g.name}: DRT {ms(g.drtMs)}, {g.withinNow} of its measured disks within it at the latest round
              </h4>
              <div className="basil-two-col">
                <LineChart
                  title={`${g.name}: read response time over time`}
                  series={g.rt}
                  reference={{ value: g.drtMs, label: `DRT ${ms(g.drtMs)}` }}
                  yLabel="ms"
                  emptyText="No round of this pod yet"
                  testId="slo-rt-chart"
                />
                <LineChart
                  title={`${g.name}: damage over time`}
                  series={g.damage}
                  yLabel="damage Σ(RT − DRT)²/DRT"
                  emptyText="No round of this pod yet"
                  testId="slo-damage-chart"
                />
              </div>
            </div>
          ))
        }
      </LoadGate>
    </div>
  );
}

/** Goal slo: per priority group its DRT, measured and predicted RT, damage before → after, met or not. */
export function SloPanel({ rec, pod }: { rec: Recommendation; pod?: string }) {
  const slo = sloOf(rec);
  if (!slo) return null;
  const rows = sloGroupRows(slo);
  return (
    <div data-testid="slo-panel">
      <p data-testid="slo-summary">
        Goal <strong>slo</strong> ({slo.queue_model} queues, utilisation cap {compact(slo.utilisation_cap_pct)} %): predicted damage{' '}
        <strong>{compact(slo.damage_before)}</strong> → <strong data-testid="slo-damage-after">{compact(slo.damage_after)}</strong>.
      </p>
      {otherUnmet(slo).map((u, i) => (
        <Alert key={i} kind="warning">
          {u}
        </Alert>
      ))}
      <table className="table table-compact basil-table" data-testid="slo-groups">
        <thead>
          <tr>
            <th className="left">Group</th>
            <th>DRT</th>
            <th>Measured RT</th>
            <th>Predicted now</th>
            <th>after the moves</th>
            <th>Damage before → after</th>
            <th className="left">DRT met after</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((g) => (
            <tr key={g.name} data-group={g.name}>
              <td className="left">{g.name}</td>
              <td>{g.drt}</td>
              <td>{g.measured}</td>
              <td>{g.predictedNow}</td>
              <td>{g.predictedAfter}</td>
              <td>{g.damage}</td>
              <td className="left">
                {g.met ? (
                  <span className="label label-success">met</span>
                ) : (
                  <>
                    <span className="label label-danger">unmet</span>
                    <div className="basil-reason" data-testid="slo-unmet">
                      {g.unmet}
                    </div>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {pod && <SloHistoryCharts pod={pod} round={rec.id} />}
    </div>
  );
}

/** Each applied plan's prediction against what was measured an hour later (vCenter time), newest first. */
export function PredictionPanel({ pod }: { pod: string }) {
  const { api } = useApp();
  const checks = useLoad<PredictionCheck[]>(() => api.predictions(pod), `predictions:${pod}`, 60_000);
  return (
    <Section title="Predicted against measured, an hour after each plan" testId="predictions">
      <LoadGate loaded={checks}>
        {(list) =>
          list.length === 0 ? (
            <p className="basil-muted">No plan has moved disks of {pod} yet.</p>
          ) : (
            <>
              <p data-testid="prediction-error">
                Plan {list[0].plan}: {list[0].state === 'measured' ? predictionErrorLine(list[0].error) : 'waiting for the hour to pass'};{' '}
                {imbalanceLine(list[0])}.
              </p>
              <table className="table table-compact basil-table" data-testid="prediction-table">
                <thead>
                  <tr>
                    <th className="left">Datastore</th>
                    <th>Latency predicted</th>
                    <th>measured</th>
                    <th>error</th>
                    <th>IOPS predicted</th>
                    <th>measured</th>
                    <th>error</th>
                  </tr>
                </thead>
                <tbody>
                  {predictionRows(list[0]).map((row) => (
                    <tr key={row.name} data-datastore={row.name}>
                      <td className="left">
                        {row.name} <span className="basil-muted">{row.model}</span>
                      </td>
                      <td>{row.latency.predicted}</td>
                      <td>{row.latency.measured}</td>
                      <td>{row.latency.error}</td>
                      <td>{row.iops.predicted}</td>
                      <td>{row.iops.measured}</td>
                      <td>{row.iops.error}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )
        }
      </LoadGate>
    </Section>
  );
}

/** Both halves of a swap carry the same label: they are judged and applied together. */
function SwapTag({ move }: { move: Move }) {
  const label = swapLabel(move);
  return label ? (
    <span className="label label-purple basil-swap" title="one half of a swap: both halves are applied together">
      {label}
    </span>
  ) : null;
}

function MoveRows({ moves, datastores, focus }: { moves: Move[]; datastores: DatastoreSummary[]; focus?: string | null }) {
  const touches = (m: Move) => focus !== null && focus !== undefined && (m.from === focus || m.to === focus);
  // Highlighting every row would single none out: only when some moves leave the focused datastore alone.
  const highlight = moves.some(touches) && !moves.every(touches);
  return (
    <table className="table table-compact basil-table" data-testid="moves-table">
      <thead>
        <tr>
          <th className="left">VM / disk</th>
          <th className="left">From → to</th>
          <th>Size</th>
          <th className="left">Reason</th>
          <th className="left">Predicted effect</th>
        </tr>
      </thead>
      <tbody>
        {moves.map((m, i) => (
          <tr key={`${m.disk}-${i}`} className={highlight && touches(m) ? 'basil-selected' : undefined} data-move={m.disk}>
            <td className="left">
              <div className="basil-nowrap">
                <VmLink id={m.vm_id || vmOfDisk(m.disk)} name={m.vm} />
              </div>
              <div className="basil-muted basil-nowrap">{m.disk}</div>
            </td>
            <td className="left">
              {moveEnds(m, datastores).from} → <strong>{moveEnds(m, datastores).to}</strong>
              <SwapTag move={m} />
            </td>
            <td>{gb(m.size_gb)}</td>
            <td className="left">
              <span className="label label-info" title={m.reason_code}>
                {m.reason_code}
              </span>
              <div className="basil-reason">{m.reason}</div>
            </td>
            <td className="left basil-effect">
              {moveEffect(m, datastores)}
              {m.slo && (
                <div className="basil-reason" data-testid="slo-move">
                  {sloMoveLine(m)}
                </div>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A plan's progress, polled every two seconds until it is final. */
export function PlanProgress({ planId, datastores, onFinished }: { planId: string | number; datastores: DatastoreSummary[]; onFinished?: (p: Plan) => void }) {
  const { api } = useApp();
  const [final, setFinal] = useState(false);
  const [acting, setActing] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const plan = useLoad<Plan>(
    async () => {
      const p = await api.plan(planId);
      if (isPlanFinal(p) && !final) {
        setFinal(true);
        onFinished?.(p);
      }
      return p;
    },
    `plan:${planId}`,
    final ? 0 : 2_000,
  );
  const act = async (what: 'approve' | 'apply' | 'cancel') => {
    setActing(true);
    setError(null);
    try {
      if (what === 'approve') await api.approvePlan(planId);
      else if (what === 'apply') await api.applyPlan(planId);
      else await api.cancelPlan(planId);
      plan.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
    } finally {
      setActing(false);
    }
  };
  return (
    <div className="basil-plan" data-testid={`plan-${planId}`}>
      <LoadGate loaded={plan}>
        {(p) => {
          const progress = planProgress(p);
          return (
            <>
              <div className="basil-plan-head">
                <span>
                  Plan <strong>{String(p.id)}</strong> for {p.pod}
                </span>
                <span data-testid="plan-state">
                  <StateLabel state={p.state} />
                </span>
                <div className="progress-block basil-progress" data-testid="plan-progress" data-value={progress}>
                  <div className="progress">
                    <progress max={100} value={progress} aria-label="plan progress" />
                  </div>
                  <span>{progress}%</span>
                </div>
                {p.state === 'proposed' && (
                  <button type="button" className="btn btn-sm btn-outline" disabled={acting} onClick={() => act('approve')}>
                    Approve
                  </button>
                )}
                {(p.state === 'proposed' || p.state === 'approved') && (
                  <button type="button" className="btn btn-sm btn-outline" disabled={acting} onClick={() => act('apply')}>
                    Apply now
                  </button>
                )}
                {!isPlanFinal(p) && (
                  <button type="button" className="btn btn-sm btn-link basil-danger-link" disabled={acting} onClick={() => act('cancel')}>
                    Cancel
                  </button>
                )}
              </div>
              {p.message && <p className="basil-muted">{p.message}</p>}
              <ErrorAlert error={error} />
              <table className="table table-compact basil-table" data-testid="plan-moves">
                <thead>
                  <tr>
                    <th className="left">VM / disk</th>
                    <th className="left">From → to</th>
                    <th className="left">State</th>
                    <th className="left">Progress</th>
                    <th className="left">vCenter task / message</th>
                  </tr>
                </thead>
                <tbody>
                  {p.moves.map((m, i) => (
                    <tr key={`${m.id ?? i}`} data-move={m.disk} data-state={m.state}>
                      <td className="left">
                        <VmLink id={m.vm_id || vmOfDisk(m.disk)} name={m.vm} /> <span className="basil-muted">{m.disk}</span>
                      </td>
                      <td className="left">
                        {moveEnds(m, datastores).from} → {moveEnds(m, datastores).to}
                        <SwapTag move={m} />
                      </td>
                      <td className="left">
                        <StateLabel state={m.state ?? 'pending'} />
                      </td>
                      <td className="left">{typeof m.progress === 'number' ? `${Math.round(m.progress)}%` : ''}</td>
                      <td className="left basil-muted">
                        {m.task ? <code>{m.task}</code> : null} {m.message ?? ''}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          );
        }}
      </LoadGate>
    </div>
  );
}

type Decision = 'approve' | 'apply';

export function RecommendationPanel({ pod, datastores, focus = null }: { pod: string; datastores: DatastoreSummary[]; focus?: string | null }) {
  const { api } = useApp();
  const rec = useLoad<Recommendation | null>(() => api.latestRecommendation(pod), `rec:${pod}`, 60_000);
  const open = useLoad<Plan[]>(
    async () => (await api.plans({ pod })).filter((p) => !isPlanFinal(p)),
    `open-plans:${pod}`,
    10_000,
  );
  const [confirm, setConfirm] = useState<Decision | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [watching, setWatching] = useState<(string | number)[]>([]);
  // Recommendations already turned into a plan here: their buttons give way to the plan's number.
  const [planned, setPlanned] = useState<Record<string, string | number>>({});
  const [notice, setNotice] = useState<string | null>(null);

  const recompute = async () => {
    setBusy('Computing a recommendation…');
    setError(null);
    try {
      await api.recommendNow(pod);
      rec.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
    } finally {
      setBusy(null);
    }
  };

  const decide = async (r: Recommendation, what: Decision) => {
    setConfirm(null);
    setBusy(what === 'apply' ? 'Starting the moves…' : 'Approving…');
    setError(null);
    try {
      const plan = await api.createPlan(r.id);
      const after = what === 'apply' ? await api.applyPlan(plan.id) : await api.approvePlan(plan.id);
      setWatching((w) => [after?.id ?? plan.id, ...w.filter((id) => id !== plan.id)]);
      setPlanned((p) => ({ ...p, [String(r.id)]: plan.id }));
      setNotice(
        what === 'apply'
          ? `Plan ${String(plan.id)} started: its progress shows below.`
          : `Plan ${String(plan.id)} is approved: the next rebalance window applies it.`,
      );
      open.reload();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
    } finally {
      setBusy(null);
    }
  };

  const openIds = (open.data ?? []).map((p) => p.id);
  const shown = [...watching, ...openIds.filter((id) => !watching.includes(id))];

  return (
    <>
      <Section
        title="Recommendation"
        testId="recommendation"
        actions={
          <button type="button" className="btn btn-sm btn-outline" onClick={recompute} disabled={busy !== null} data-testid="recompute">
            Recompute now
          </button>
        }
      >
        {busy && <Spinner label={busy} />}
        {notice && <Alert kind="success" testId="plan-notice">{notice}</Alert>}
        <ErrorAlert error={error} testId="recommendation-error" />
        <LoadGate loaded={rec}>
          {(r) =>
            !r ? (
              <p className="basil-muted">No recommendation yet for {pod}. Recompute to get one.</p>
            ) : r.moves.length === 0 ? (
              <>
                <p data-testid="balanced">
                  No moves recommended for {pod} <When t={r.created_at} />: {r.stop_reason ?? `imbalance ${compact(r.before?.imbalance)}`}.
                </p>
                <PinnedBlock rec={r} />
                <SloPanel rec={r} pod={pod} />
              </>
            ) : (
              <>
                <p>
                  Computed <When t={r.created_at} />: {movesSummary(r.moves)}. Imbalance{' '}
                  <strong>{compact(r.before?.imbalance)}</strong> → <strong data-testid="imbalance-after">{compact(r.after?.imbalance)}</strong>
                  {r.stop_reason ? ` (${r.stop_reason})` : ''}.
                </p>
                {(r.notes ?? []).map((n, i) => (
                  <Alert key={i} kind="info">
                    {n}
                  </Alert>
                ))}
                {isStale(r) && (
                  <Alert kind="warning" testId="stale">
                    Stale: {r.stale_reason ?? 'the placement it was computed from has changed'}. It can no longer become a plan.
                  </Alert>
                )}
                <PinnedBlock rec={r} />
                <SloPanel rec={r} pod={pod} />
                <BeforeAfterBars title="Normalized load now and after the moves" bars={recommendationBars(r, datastores)} testId="effect-bars" />
                <MoveRows moves={r.moves} datastores={datastores} focus={focus} />
                <div className="basil-actions">
                  {isStale(r) ? (
                    <span className="basil-muted" data-testid="stale-hint">
                      Recompute for a recommendation on the current placement.
                    </span>
                  ) : planned[String(r.id)] !== undefined || !hasOpenMoves(r) ? (
                    <span className="basil-muted" data-testid="already-planned">
                      {planned[String(r.id)] !== undefined
                        ? `These moves are plan ${String(planned[String(r.id)])}; recompute for a new recommendation.`
                        : 'These moves are already in a plan; recompute for a new recommendation.'}
                    </span>
                  ) : (
                    <>
                      <button type="button" className="btn btn-outline" disabled={busy !== null} onClick={() => setConfirm('approve')} data-testid="approve">
                        Approve
                      </button>
                      <button type="button" className="btn btn-primary" disabled={busy !== null} onClick={() => setConfirm('apply')} data-testid="apply">
                        Apply now
                      </button>
                    </>
                  )}
                </div>
                {confirm && (
                  <Modal
                    title={confirm === 'apply' ? 'Apply these moves now?' : 'Approve these moves?'}
                    onClose={() => setConfirm(null)}
                    testId="confirm"
                    footer={
                      <>
                        <button type="button" className="btn btn-outline" onClick={() => setConfirm(null)}>
                          Cancel
                        </button>
                        <button type="button" className="btn btn-primary" onClick={() => decide(r, confirm)} data-testid="confirm-ok">
                          {confirm === 'apply' ? 'Apply now' : 'Approve'}
                        </button>
                      </>
                    }
                  >
                    <p>
                      {confirm === 'apply'
                        ? 'Storage vMotion starts now for:'
                        : 'The next rebalance window will move, within its budget:'}{' '}
                      {movesSummary(r.moves)}.
                    </p>
                    <ul className="basil-confirm-list">
                      {r.moves.map((m, i) => (
                        <li key={i}>
                          {m.vm} {m.disk}: {moveEnds(m, datastores).from} → {moveEnds(m, datastores).to} ({gb(m.size_gb)})
                        </li>
                      ))}
                    </ul>
                    <p>
                      Predicted imbalance {compact(r.before?.imbalance)} → {compact(r.after?.imbalance)}.
                    </p>
                  </Modal>
                )}
              </>
            )
          }
        </LoadGate>
      </Section>
      {shown.length > 0 && (
        <Section title="Plans" testId="plans">
          {shown.map((id) => (
            <PlanProgress key={String(id)} planId={id} datastores={datastores} onFinished={() => rec.reload()} />
          ))}
        </Section>
      )}
    </>
  );
}
