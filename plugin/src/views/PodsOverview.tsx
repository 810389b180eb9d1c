// The global view's first tab: every pod with its imbalance against the threshold, each datastore's
// normalized load, P, latency and IOPS, and the pod's pending and recent moves.

import type { DatastoreSummary, Move, PodDetail, PodSummary } from '../api/types';
import { InlineBar } from '../charts/Charts';
import { compact, gb, iops, ms, pct } from '../shape/format';
import { datastoreRows, imbalanceStatus, moveEnds, N_NOW_MEANING, pendingMoveCount, pendingMoves, type Status } from '../shape/overview';
import { LoadGate, Section, StateLabel, useApp, useLoad, VmLink, vmOfDisk, When } from './common';

export const STATUS_TEXT: Record<Status, string> = {
  ok: 'balanced',
  warn: 'near the threshold',
  over: 'over the threshold',
  unknown: 'no figures yet',
};

export function ImbalanceBadge({ pod }: { pod: Pick<PodSummary, 'imbalance' | 'threshold'> }) {
  const status = imbalanceStatus(pod.imbalance, pod.threshold);
  return (
    <span className={`basil-imbalance basil-imbalance-${status}`} data-testid="imbalance" data-status={status}>
      <strong>{compact(pod.imbalance)}</strong>
      <span className="basil-imbalance-detail">
        imbalance now (σ/μ of N), threshold {compact(pod.threshold)} — {STATUS_TEXT[status]}
      </span>
    </span>
  );
}

export function DatastoreTable({
  datastores,
  onOpen,
  selected,
  testId = 'datastore-table',
}: {
  datastores: DatastoreSummary[];
  onOpen?: (ds: DatastoreSummary) => void;
  selected?: string | null;
  testId?: string;
}) {
  const rows = datastoreRows(datastores);
  return (
    <table className="table table-compact basil-table" data-testid={testId}>
      <thead>
        <tr>
          <th className="left">Datastore</th>
          <th className="left basil-col-load" title={N_NOW_MEANING}>
            <span className="basil-has-hint">Normalized load N now</span>
          </th>
          <th>P</th>
          <th>Latency</th>
          <th>IOPS (read / write)</th>
          <th>Free</th>
          <th className="left">Notes</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(({ ds, share, flags, usedPct }) => (
          <tr key={ds.id} data-datastore={ds.name} className={selected === ds.id ? 'basil-selected' : undefined}>
            <td className="left">
              {onOpen ? (
                <button type="button" className="btn btn-link btn-sm basil-link" onClick={() => onOpen(ds)}>
                  {ds.name}
                </button>
              ) : (
                ds.name
              )}
            </td>
            <td className="left basil-col-load">
              <InlineBar share={share} tone={share > 0.999 && rows.length > 1 ? 'over' : 'info'} />
              <span className="basil-num" data-testid="normalized-load">
                {compact(ds.normalized_load)}
              </span>
            </td>
            <td data-testid="P">{compact(ds.P)}</td>
            <td>{ms(ds.latency_ms)}</td>
            <td>
              {iops(ds.iops)}
              <span className="basil-muted">
                {' '}
                ({iops(ds.read_iops)} / {iops(ds.write_iops)})
              </span>
            </td>
            <td title={usedPct !== null ? `${pct(usedPct)} used` : undefined}>{gb(ds.free_gb)}</td>
            <td className="left">
              {flags.map((f) => (
                <span key={f} className="label label-warning">
                  {f}
                </span>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function MovesTable({
  moves,
  datastores,
  testId,
  empty = 'None.',
}: {
  moves: Move[];
  datastores: DatastoreSummary[];
  testId?: string;
  /** What an empty list means, said instead of a bare "none". */
  empty?: string;
}) {
  if (moves.length === 0)
    return (
      <p className="basil-muted" data-testid={testId ? `${testId}-empty` : undefined}>
        {empty}
      </p>
    );
  return (
    <table className="table table-compact basil-table" data-testid={testId}>
      <thead>
        <tr>
          <th className="left">VM / disk</th>
          <th className="left">From → to</th>
          <th>Size</th>
          <th className="left">State</th>
          <th className="left">When / message</th>
        </tr>
      </thead>
      <tbody>
        {moves.map((m, i) => (
          <tr key={`${m.id ?? i}-${m.disk}`}>
            <td className="left">
              <VmLink id={m.vm_id || vmOfDisk(m.disk)} name={m.vm} /> <span className="basil-muted">{m.disk.split(':').slice(-2).join(':')}</span>
            </td>
            <td className="left">
              {moveEnds(m, datastores).from} → {moveEnds(m, datastores).to}
            </td>
            <td>{gb(m.size_gb)}</td>
            <td className="left">
              <StateLabel state={m.outcome ?? m.state ?? 'pending'} />
            </td>
            <td className="left basil-muted">
              <When t={m.finished_at} />
              {m.finished_at && m.message ? ' · ' : ''}
              {m.message ?? ''}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function pendingText(n: number): string {
  if (n === 0) return 'no pending moves';
  return n === 1 ? '1 pending move' : `${n} pending moves`;
}

function PodCard({ pod }: { pod: PodSummary }) {
  const { api, open } = useApp();
  const detail = useLoad<PodDetail>(() => api.pod(pod.name), `pod:${pod.name}`, 30_000);
  const pending = detail.data ? pendingMoves(detail.data) : [];
  const recent = detail.data?.recent_moves ?? [];
  const lastRec = pod.last_recommendation;
  const lastRecAt = typeof lastRec === 'object' && lastRec !== null ? lastRec.created_at : lastRec;
  return (
    <Section
      title={`${pod.name}`}
      testId={`pod-${pod.name}`}
      actions={
        <>
          <span className="label">{pod.mode}</span>
          <span className="basil-muted">vCenter {pod.vcenter}</span>
          <button type="button" className="btn btn-sm btn-outline" onClick={() => open(`#/pod/${encodeURIComponent(pod.name)}`)}>
            Open pod
          </button>
        </>
      }
    >
      <div className="basil-pod-head">
        <ImbalanceBadge pod={pod} />
        <span className="basil-muted" data-testid="pod-activity">
          {pendingText(pendingMoveCount(pod))} ·{' '}
          {lastRecAt ? <When t={lastRecAt} prefix="last recommendation " /> : 'no recommendation yet: open the pod to compute one'}
        </span>
      </div>
      <DatastoreTable
        datastores={pod.datastores}
        onOpen={(ds) => open(`#/datastore/${encodeURIComponent(ds.id)}`)}
        testId={`datastores-${pod.name}`}
      />
      <div className="basil-two-col">
        <div>
          <h4 className="basil-h4">Pending moves</h4>
          <MovesTable
            moves={pending}
            datastores={pod.datastores}
            testId={`pending-${pod.name}`}
            empty="None: no approved or running plan has moves left to make."
          />
        </div>
        <div>
          <h4 className="basil-h4">Recent moves</h4>
          <MovesTable
            moves={recent.slice(0, 8)}
            datastores={pod.datastores}
            testId={`recent-${pod.name}`}
            empty="None yet: no plan has moved a disk in this pod."
          />
        </div>
      </div>
    </Section>
  );
}

export function PodsOverview() {
  const { api } = useApp();
  const pods = useLoad<PodSummary[]>(() => api.pods(), 'pods', 30_000);
  return (
    <div data-testid="pods-overview">
      <LoadGate loaded={pods}>
        {(list) =>
          list.length === 0 ? (
            <p className="basil-muted">No pods are configured. Add one under pods: in basil.yaml.</p>
          ) : (
            list.map((pod) => <PodCard key={pod.name} pod={pod} />)
          )
        }
      </LoadGate>
    </div>
  );
}
