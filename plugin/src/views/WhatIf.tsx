// A datastore's disks (each linking to its VM) and the "What if…" dialog: disks picked from other
// datastores, predicted on this one by the service (Casale et al.): per disk the figures now and
// predicted, what interleaving and destaging add, its flags and confidence; the datastore's mix and
// IOPS beside the paper's eq. 1–4 and the device parameters used; the inputs it started from.

import { useState } from 'react';
import { ApiError } from '../api/client';
import type { DiskItem, ListPage, WhatIfAnswer } from '../api/types';
import { compact, gb, iops, ms, pct } from '../shape/format';
import { destageWarning, diskUnit, signedMs, whatIfRows, whatIfSummary } from '../shape/whatif';
import { Alert, ErrorAlert, Labels, LoadGate, Modal, Section, Spinner, useApp, useLoad, VmLink, vmOfDisk } from './common';

const PICK_LIMIT = 200;

/** The virtual disks on a datastore, each with a link to its VM. */
export function DatastoreDisks({ datastoreId }: { datastoreId: string }) {
  const { api } = useApp();
  const disks = useLoad<ListPage<DiskItem>>(() => api.disks({ datastore: datastoreId, sort: 'name', limit: PICK_LIMIT }), `ds-disks:${datastoreId}`, 60_000);
  return (
    <Section title="Virtual disks on this datastore" testId="datastore-disks">
      <LoadGate loaded={disks}>
        {(page) =>
          page.items.length === 0 ? (
            <p className="basil-muted">No virtual disk is on this datastore.</p>
          ) : (
            <>
              <table className="table table-compact basil-table" data-testid="datastore-disks-table">
                <thead>
                  <tr>
                    <th className="left">VM</th>
                    <th className="left">Disk</th>
                    <th>Size</th>
                    <th>IOPS</th>
                    <th>Latency</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((d) => (
                    <tr key={d.id} data-disk={d.id}>
                      <td className="left">
                        <VmLink id={d.vm.id} name={d.vm.name} />
                      </td>
                      <td className="left basil-muted">{d.unit ?? diskUnit(d.id)}</td>
                      <td>{gb(d.size_gb)}</td>
                      <td>{iops(d.iops)}</td>
                      <td>{ms(d.latency_ms)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {page.next_cursor && <p className="basil-muted">The first {page.items.length} disks are shown.</p>}
            </>
          )
        }
      </LoadGate>
    </Section>
  );
}

/** The service's answer: the datastore's lines (a warning first when destaging would fill the cache, or the cache was full where a disk was measured),
 * per disk rows, and the inputs in a collapsible section; *names* gives each disk its VM's name. */
export function WhatIfResult({ answer, names }: { answer: WhatIfAnswer; names: Map<string, DiskItem> }) {
  const rows = whatIfRows(answer);
  const warning = destageWarning(answer);
  return (
    <div data-testid="whatif-answer">
      <p>
        On <strong>{answer.datastore_name ?? answer.datastore}</strong> with {answer.moved.length} disk{answer.moved.length === 1 ? '' : 's'} moved
        there: reads {pct(answer.read_mix === null ? null : answer.read_mix * 100)} of the IOs, writes{' '}
        {pct(answer.write_mix === null ? null : answer.write_mix * 100)}; {iops(answer.read_iops)} read and {iops(answer.write_iops)} write IOPS in
        all.
      </p>
      {warning && (
        <Alert kind="warning" testId="whatif-destage-saturated">
          {warning}
        </Alert>
      )}
      <table className="table table-compact basil-table basil-whatif-summary" data-testid="whatif-summary">
        <tbody>
          {whatIfSummary(answer).map((l) => (
            <tr key={l.key} data-line={l.key} className={l.warn ? 'basil-warn' : undefined}>
              <th className="left">{l.label}</th>
              <td className="left" data-testid="whatif-summary-value">
                <strong>{l.value}</strong>
              </td>
              <td className="left basil-muted" data-testid="whatif-summary-beside">
                {l.beside ?? ''}
              </td>
              <td className="left basil-muted" data-testid="whatif-summary-source">
                {l.source ?? ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <table className="table table-compact basil-table" data-testid="whatif-table">
        <thead>
          <tr>
            <th className="left">Disk</th>
            <th className="left">Now</th>
            <th>IOPS now → predicted</th>
            <th>Read latency now → predicted</th>
            <th>Write latency now → predicted</th>
            <th className="left">Added per IO</th>
            <th className="left">Flags</th>
            <th className="left">Confidence</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name} data-disk={r.name} data-moved={r.moved ? 'yes' : 'no'}>
              <td className="left">
                <VmLink id={names.get(r.name)?.vm.id ?? vmOfDisk(r.name)} name={names.get(r.name)?.vm.name ?? r.name} />{' '}
                <span className="basil-muted">{names.get(r.name)?.unit ?? diskUnit(r.name)}</span>
                {r.moved && <span className="label label-info basil-moved">moved</span>}
              </td>
              <td className="left basil-muted">{r.group ?? ''}</td>
              <td data-testid="whatif-iops">
                {iops(r.input?.iops)} → <strong>{iops(r.predicted.iops)}</strong>
              </td>
              <td data-testid="whatif-read-latency">
                {ms(r.input?.read_latency_ms)} → <strong>{ms(r.predicted.read_latency_ms)}</strong>
              </td>
              <td data-testid="whatif-write-latency">
                {ms(r.input?.write_latency_ms)} → <strong>{ms(r.predicted.write_latency_ms)}</strong>
              </td>
              <td className="left" data-testid="whatif-added">
                {r.added.map((a) => (
                  <div key={a.kind} data-added={a.kind} title={a.title}>
                    {signedMs(a.ms)} <span className="basil-muted">{a.kind}</span>
                  </div>
                ))}
              </td>
              <td className="left" data-testid="whatif-flags">
                <Labels items={r.flags.map((f) => ({ key: f.kind, text: f.label, title: f.title }))} />
              </td>
              <td className="left" data-testid="whatif-confidence" data-alone={r.confidence.alone ? 'yes' : 'no'}>
                <span className={`label ${r.confidence.alone ? 'label-success' : 'label-warning'}`} data-testid="whatif-confidence-level">
                  {r.confidence.level}
                </span>
                {r.confidence.reason && (
                  <div className="basil-muted basil-whatif-reason" data-testid="whatif-confidence-reason">
                    {r.confidence.reason}
                  </div>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <details className="basil-whatif-inputs" data-testid="whatif-inputs-section">
        <summary>Inputs: each disk's figures where it runs now (a moved disk's without its old neighbours' batches)</summary>
        <table className="table table-compact basil-table" data-testid="whatif-inputs">
          <thead>
            <tr>
              <th className="left">Disk</th>
              <th className="left">Group</th>
              <th>Read / write IOPS</th>
              <th>Read / write latency</th>
              <th>Read / write OIO</th>
              <th>Random</th>
              <th className="left">Measured alone</th>
            </tr>
          </thead>
          <tbody>
            {answer.inputs.map((i) => (
              <tr key={i.name} data-disk={i.name}>
                <td className="left">
                  {names.get(i.name)?.vm.name ?? i.name} <span className="basil-muted">{names.get(i.name)?.unit ?? diskUnit(i.name)}</span>
                </td>
                <td className="left basil-muted">{i.group ?? ''}</td>
                <td>
                  {iops(i.read_iops)} / {iops(i.write_iops)}
                </td>
                <td>
                  {ms(i.read_latency_ms)} / {ms(i.write_latency_ms)}
                </td>
                <td>
                  {compact(i.read_oio)} / {compact(i.write_oio)} <span className="basil-muted">{i.oio_source ?? ''}</span>
                </td>
                <td data-testid="whatif-input-random">{i.random_pct === undefined ? '' : pct(i.random_pct)}</td>
                <td className="left">{i.alone === undefined ? '' : i.alone ? 'yes' : 'no: shared its datastore'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

/** The "What if…" dialog of a datastore: pick disks now on other datastores, see them predicted here. */
export function WhatIfDialog({ datastoreId, datastoreName, pod, onClose }: { datastoreId: string; datastoreName: string; pod: string | null; onClose: () => void }) {
  const { api } = useApp();
  const [search, setSearch] = useState('');
  const [picked, setPicked] = useState<string[]>([]);
  const [answer, setAnswer] = useState<WhatIfAnswer | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [asking, setAsking] = useState(false);
  const candidates = useLoad<ListPage<DiskItem>>(
    () => api.disks({ pod: pod ?? undefined, q: search.trim() || undefined, sort: 'name', limit: PICK_LIMIT }),
    `whatif-candidates:${pod ?? ''}:${search.trim()}`,
  );
  // The disks already on the datastore, so that the answer names them too (the search may hide them).
  const here = useLoad<ListPage<DiskItem>>(() => api.disks({ datastore: datastoreId, limit: PICK_LIMIT }), `whatif-here:${datastoreId}`);
  const elsewhere = (candidates.data?.items ?? []).filter((d) => d.datastore.id !== datastoreId);
  const toggle = (id: string) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id]));
  const ask = () => {
    setAsking(true);
    setError(null);
    api
      .datastoreWhatif(datastoreId, picked)
      .then((a) => setAnswer(a))
      .catch((err: unknown) => {
        setAnswer(null);
        setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
      })
      .finally(() => setAsking(false));
  };
  return (
    <Modal
      title={`What if… disks moved to ${datastoreName}`}
      onClose={onClose}
      testId="whatif"
      size="xl"
      footer={
        <>
          <button type="button" className="btn btn-outline" onClick={onClose} data-testid="whatif-close">
            Close
          </button>
          <button type="button" className="btn btn-primary" disabled={picked.length === 0 || asking} onClick={ask} data-testid="whatif-ask">
            Predict
          </button>
        </>
      }
    >
      <div className="basil-whatif">
        <p className="basil-muted">
          Pick disks now on other datastores{pod ? ` of pod ${pod}` : ''}. Basil predicts every disk on {datastoreName} once they are there, from
          each disk's newest measurements; nothing moves and nothing is stored.
        </p>
        <input
          className="clr-input basil-search"
          type="search"
          value={search}
          placeholder="Filter by name"
          aria-label="filter disks by name"
          data-testid="whatif-search"
          onChange={(e) => setSearch(e.target.value)}
        />
        <ErrorAlert error={candidates.error} />
        {candidates.data === undefined && !candidates.error ? (
          <Spinner />
        ) : (
          <div className="basil-pick-list" data-testid="whatif-candidates">
            {elsewhere.length === 0 && <p className="basil-muted">No disk on another datastore matches.</p>}
            {elsewhere.map((d) => (
              <label key={d.id} className="basil-pick" data-disk={d.id}>
                <input type="checkbox" checked={picked.includes(d.id)} onChange={() => toggle(d.id)} data-testid="whatif-pick" />
                <span>
                  {d.vm.name} <span className="basil-muted">{d.unit ?? diskUnit(d.id)}</span> on {d.datastore.name}
                  <span className="basil-muted">
                    {' '}
                    · {iops(d.iops)} IOPS, {ms(d.latency_ms)}
                  </span>
                </span>
              </label>
            ))}
          </div>
        )}
        {asking && <Spinner label="Predicting…" />}
        <ErrorAlert error={error} testId="whatif-error" />
        {answer && <WhatIfResult answer={answer} names={new Map([...(here.data?.items ?? []), ...(candidates.data?.items ?? [])].map((d) => [d.id, d]))} />}
      </div>
    </Modal>
  );
}
