// The Storage Resource Pools tab: each datastore's pool tree, edited in place, validated by the service
// (its problems shown on the rows and fields they name), saved with optimistic concurrency, and the
// live entitlements the SRP loop computes for it.

import { useEffect, useMemo, useState } from 'react';
import { ApiError } from '../api/client';
import type { AppliedSetting, Entitlements, PodSummary, PoolNode, PoolTreeDoc, Problem } from '../api/types';
import { compact, iops, limit } from '../shape/format';
import {
  addChild,
  controlText,
  docForSave,
  emptyTree,
  entitlementTree,
  flattenTree,
  type NodePath,
  parseControl,
  placeProblems,
  type PoolRow,
  removeNode,
  updateNode,
} from '../shape/pools';
import { Alert, ErrorAlert, LoadGate, Section, Spinner, useApp, useLoad, VmLink, vmHash, When } from './common';

type Field = 'name' | 'vm' | 'disk' | 'tag' | 'reservation' | 'limit' | 'shares';

function FieldInput({
  row,
  field,
  value,
  problems,
  onChange,
  placeholder,
  width = 9,
}: {
  row: PoolRow;
  field: Field;
  value: string;
  problems: string[];
  onChange: (text: string) => void;
  placeholder?: string;
  width?: number;
}) {
  const bad = problems.length > 0;
  return (
    <div className={`clr-control-container basil-field${bad ? ' clr-error' : ''}`}>
      <div className="clr-input-wrapper">
        <input
          className="clr-input"
          size={width}
          value={value}
          placeholder={placeholder}
          aria-label={`${row.label} ${field}`}
          aria-invalid={bad}
          data-testid={`pool-${row.path}-${field}`}
          onChange={(e) => onChange(e.target.value)}
        />
      </div>
      {problems.map((m, i) => (
        <span key={i} className="clr-subtext basil-field-error" data-testid="pool-problem">
          {m}
        </span>
      ))}
    </div>
  );
}

/**
 * A VM leaf's link to the VM's view: the leaf names the VM by name or by id, so the id is looked up in
 * the VM list (an exact name match) when the link is clicked.
 */
function LeafVmLink({ vm, testId }: { vm: string; testId: string }) {
  const { api, open } = useApp();
  const [missing, setMissing] = useState(false);
  const name = vm.trim();
  if (name === '') return null;
  const go = async () => {
    setMissing(false);
    try {
      const page = await api.vms({ q: name, limit: 50 });
      const hit = page.items.find((v) => v.name === name || v.id === name || v.id.endsWith(`:${name}`));
      if (hit) open(vmHash(hit.id));
      else setMissing(true);
    } catch {
      setMissing(true);
    }
  };
  return (
    <>
      <a
        href={vmHash(name)}
        className="basil-object-link basil-leaf-link"
        data-testid={testId}
        title={`open the view of VM ${name}`}
        onClick={(e) => {
          e.preventDefault();
          void go();
        }}
      >
        VM view
      </a>
      {missing && <span className="basil-field-error">no VM named {name}</span>}
    </>
  );
}

export function PoolTreeEditor({
  initial,
  isNew,
  onSaved,
  onDeleted,
}: {
  initial: PoolTreeDoc;
  isNew: boolean;
  onSaved: (doc: PoolTreeDoc) => void;
  onDeleted: () => void;
}) {
  const { api } = useApp();
  const [doc, setDoc] = useState<PoolTreeDoc>(initial);
  const [drafts, setDrafts] = useState<Record<string, string>>({});
  const [problems, setProblems] = useState<Problem[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);

  useEffect(() => {
    setDoc(initial);
    setDrafts({});
    setProblems(null);
    setError(null);
  }, [initial]);

  const rows = useMemo(() => flattenTree(doc), [doc]);
  const placed = useMemo(() => placeProblems(problems ?? [], doc), [problems, doc]);
  const dirty = JSON.stringify(docForSave(doc)) !== JSON.stringify(docForSave(initial));

  const edit = (path: NodePath, field: Field, text: string) => {
    setDrafts((d) => ({ ...d, [`${path}/${field}`]: text }));
    const value = field === 'name' || field === 'vm' || field === 'disk' || field === 'tag' ? text.trim() || undefined : parseControl(text);
    setDoc((d) => updateNode(d, path, { [field]: value } as Partial<PoolNode>));
    setNotice(null);
  };
  const restructure = (next: PoolTreeDoc) => {
    setDoc(next);
    setDrafts({});
    setNotice(null);
  };
  const textOf = (row: PoolRow, field: Field): string => {
    const draft = drafts[`${row.path}/${field}`];
    if (draft !== undefined) return draft;
    const v = (row.node as Record<string, unknown>)[field];
    return field === 'reservation' || field === 'limit' || field === 'shares'
      ? controlText(v as number | string | undefined)
      : ((v as string | undefined) ?? '');
  };
  const fieldProblems = (row: PoolRow, field: string) =>
    (placed.byNode.get(row.path) ?? []).filter((p) => p.field === field).map((p) => p.message);
  const nodeProblems = (row: PoolRow) =>
    (placed.byNode.get(row.path) ?? []).filter((p) => !['name', 'vm', 'disk', 'tag', 'reservation', 'limit', 'shares'].includes(p.field));

  const run = async (what: string, action: () => Promise<void>) => {
    setBusy(what);
    setError(null);
    setNotice(null);
    try {
      await action();
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'client', String(err));
      if (e.status === 400 && e.problems.length > 0) {
        setProblems(e.problems);
      } else if (e.status === 409) {
        setError(new ApiError(409, e.code, `${e.message || 'Conflict.'} Someone changed this pool tree since you opened it: reload it, then make your change again.`));
      } else {
        setError(e);
      }
    } finally {
      setBusy(null);
    }
  };

  const validate = () =>
    run('validate', async () => {
      const found = await api.validatePool(docForSave(doc));
      setProblems(found);
      if (found.length === 0) setNotice('Valid: the service found no problem in this tree.');
    });
  const save = () =>
    run('save', async () => {
      const saved = isNew ? await api.createPool(docForSave(doc)) : await api.replacePool(docForSave(doc));
      setProblems([]);
      setNotice(`Saved${saved?.version !== undefined ? ` (version ${saved.version})` : ''}. The SRP loop applies it at its next run.`);
      onSaved(saved ?? doc);
    });
  const remove = () =>
    run('delete', async () => {
      await api.deletePool(doc.name);
      setConfirmDelete(false);
      onDeleted();
    });

  return (
    <div className="basil-pool-editor" data-testid="pool-editor">
      <div className="basil-toolbar">
        <span>
          Tree <strong>{doc.name}</strong> on datastore <code>{doc.datastore}</code>
          {doc.version !== undefined && <span className="basil-muted"> · version {doc.version}</span>}
        </span>
        <span className="basil-toolbar-actions">
          <button type="button" className="btn btn-sm btn-outline" onClick={() => restructure(addChild(doc, 'root', { name: `pool-${(doc.pools ?? []).length + 1}`, children: [] }))}>
            Add pool
          </button>
          <button type="button" className="btn btn-sm btn-outline" onClick={validate} disabled={busy !== null} data-testid="pool-validate">
            Validate
          </button>
          <button type="button" className="btn btn-sm btn-primary" onClick={save} disabled={busy !== null || (!dirty && !isNew)} data-testid="pool-save">
            {isNew ? 'Create' : 'Save'}
          </button>
          <button type="button" className="btn btn-sm btn-outline" onClick={() => restructure(initial)} disabled={!dirty || busy !== null}>
            Revert
          </button>
          {!isNew && (
            <button type="button" className="btn btn-sm btn-danger-outline" onClick={() => setConfirmDelete(true)} disabled={busy !== null}>
              Delete tree
            </button>
          )}
        </span>
      </div>
      {busy && <Spinner label={busy === 'validate' ? 'Validating…' : busy === 'save' ? 'Saving…' : 'Deleting…'} />}
      {notice && <Alert kind="success" testId="pool-notice">{notice}</Alert>}
      <ErrorAlert error={error} testId="pool-error" />
      {problems && problems.length > 0 && (
        <Alert kind="danger" testId="pool-problems">
          The service found {problems.length} problem{problems.length === 1 ? '' : 's'}; each is shown on its row.
          {placed.general.length > 0 && (
            <ul className="basil-problems">
              {placed.general.map((p, i) => (
                <li key={i}>
                  <code>{p.field}</code>: {p.message}
                </li>
              ))}
            </ul>
          )}
        </Alert>
      )}
      {confirmDelete && (
        <Alert kind="warning">
          Delete pool tree <strong>{doc.name}</strong>? The disks keep their last settings until you change them.{' '}
          <button type="button" className="btn btn-sm btn-danger" onClick={remove}>
            Delete
          </button>
          <button type="button" className="btn btn-sm btn-link" onClick={() => setConfirmDelete(false)}>
            Keep it
          </button>
        </Alert>
      )}
      <table className="table table-compact basil-table basil-pool-table" data-testid="pool-table">
        <thead>
          <tr>
            <th className="left">Pool, VM or disk</th>
            <th className="left">Reservation (IOPS)</th>
            <th className="left">Limit (IOPS)</th>
            <th className="left">Shares</th>
            <th className="left" />
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.path} data-path={row.path} className={placed.byNode.has(row.path) ? 'basil-row-error' : undefined}>
              <td className="left">
                <div className="basil-node" style={{ paddingLeft: `${row.depth * 1.25}rem` }}>
                  <span className={`basil-node-kind basil-node-${row.kind}`}>{row.kind}</span>
                  {row.kind === 'root' && <strong>{doc.name}</strong>}
                  {row.kind === 'pool' && <FieldInput row={row} field="name" value={textOf(row, 'name')} problems={fieldProblems(row, 'name')} onChange={(t) => edit(row.path, 'name', t)} width={14} />}
                  {(row.kind === 'vm' || row.kind === 'disk') && (
                    <>
                      <FieldInput row={row} field="vm" value={textOf(row, 'vm')} problems={fieldProblems(row, 'vm')} onChange={(t) => edit(row.path, 'vm', t)} placeholder="VM" width={12} />
                      <FieldInput row={row} field="disk" value={textOf(row, 'disk')} problems={fieldProblems(row, 'disk')} onChange={(t) => edit(row.path, 'disk', t)} placeholder="all disks" width={8} />
                      <LeafVmLink vm={textOf(row, 'vm')} testId={`pool-${row.path}-open-vm`} />
                    </>
                  )}
                  {row.kind === 'tag' && <FieldInput row={row} field="tag" value={textOf(row, 'tag')} problems={fieldProblems(row, 'tag')} onChange={(t) => edit(row.path, 'tag', t)} placeholder="category/name" width={18} />}
                </div>
                {nodeProblems(row).map((p, i) => (
                  <div key={i} className="basil-field-error" data-testid="pool-problem">
                    {p.field ? <code>{p.field}</code> : null} {p.message}
                  </div>
                ))}
              </td>
              {(['reservation', 'limit', 'shares'] as const).map((f) => (
                <td key={f} className="left">
                  <FieldInput
                    row={row}
                    field={f}
                    value={textOf(row, f)}
                    problems={fieldProblems(row, f)}
                    onChange={(t) => edit(row.path, f, t)}
                    placeholder={f === 'reservation' ? '0' : f === 'limit' ? 'unlimited' : 'normal'}
                  />
                </td>
              ))}
              <td className="left basil-row-actions">
                {row.kind === 'pool' && (
                  <>
                    <button type="button" className="btn btn-sm btn-link" onClick={() => restructure(addChild(doc, row.path, { name: `${row.label}-child`, children: [] }))}>
                      + pool
                    </button>
                    <button type="button" className="btn btn-sm btn-link" onClick={() => restructure(addChild(doc, row.path, { vm: '' }))} data-testid={`pool-${row.path}-add-vm`}>
                      + VM
                    </button>
                    <button type="button" className="btn btn-sm btn-link" onClick={() => restructure(addChild(doc, row.path, { tag: '' }))} data-testid={`pool-${row.path}-add-tag`}>
                      + tag
                    </button>
                  </>
                )}
                {row.kind !== 'root' && (
                  <button type="button" className="btn btn-sm btn-link basil-danger-link" onClick={() => restructure(removeNode(doc, row.path))}>
                    remove
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="basil-muted basil-help">
        Reservation and limit in IOPS (limit blank or "unlimited" for none); shares a number or low / normal / high.
        A VM row covers all its disks on this datastore unless a disk (scsi0:1) is named. A tag row (category/name)
        stands for every VM carrying that vSphere tag, each with the row's settings; a VM is reached once, by name or by
        the tags of one pool.
      </p>
    </div>
  );
}

function AppliedText({ a }: { a: AppliedSetting | null }) {
  if (!a) return <>not yet</>;
  const outcome = a.outcome && a.outcome !== 'ok' ? ` ${a.outcome}: ${a.message ?? ''}` : '';
  return (
    <>
      R {iops(a.reservation)} · L {limit(a.limit)} · S {compact(a.shares)}
      {a.issued_at && (
        <>
          {' ('}
          <When t={a.issued_at} />)
        </>
      )}
      {outcome}
    </>
  );
}

function EntitlementsTable({ doc }: { doc: PoolTreeDoc }) {
  const { api } = useApp();
  const name = doc.name;
  const ent = useLoad<Entitlements>(() => api.entitlements(name), `ent:${name}`, 30_000);
  return (
    <LoadGate loaded={ent}>
      {(e) => (
        <div data-testid="entitlements">
          <p className="basil-muted">
            Array capacity {iops(e.array_iops)} IOPS
            {e.latency_threshold_ms != null && ` at ${compact(e.latency_threshold_ms)} ms`} ·{' '}
            {e.hosts.map((h) => `${h.host}: queue depth ${compact(h.queue_depth)}`).join(' · ') || 'no host figures yet'}
            {e.computed_at && (
              <>
                {' '}
                · <When t={e.computed_at} prefix="computed " />
              </>
            )}
          </p>
          <table className="table table-compact basil-table" data-testid="entitlements-tree">
            <thead>
              <tr>
                <th className="left">Pool, VM or disk</th>
                <th>Demand</th>
                <th>Entitlement</th>
                <th>Reservation</th>
                <th>Limit</th>
                <th>Shares</th>
                <th className="left">Last issued to vCenter</th>
              </tr>
            </thead>
            <tbody>
              {entitlementTree(doc, e).map((r, i) => (
                <tr
                  key={`${i}:${r.kind}:${r.label}`}
                  className={r.kind === 'pool' ? 'basil-vm-row' : undefined}
                  data-kind={r.kind}
                  data-depth={r.depth}
                  data-label={r.label}
                  data-disk={r.kind === 'disk' ? r.label : undefined}
                >
                  <td className="left">
                    <span className="basil-node" style={{ paddingLeft: `${r.depth * 1.25}rem` }}>
                      <span className={`basil-node-kind basil-node-${r.kind}`}>{r.kind}</span>{' '}
                      {r.kind === 'vm' ? (
                        <strong>
                          <VmLink id={r.vmId} name={r.label} />
                        </strong>
                      ) : r.kind === 'disk' ? (
                        <VmLink id={r.vmId} name={r.label} testId="disk-vm-link" />
                      ) : (
                        r.label
                      )}
                    </span>
                  </td>
                  <td>{r.ent ? iops(r.ent.demand) : ''}</td>
                  <td>{r.ent ? iops(r.ent.entitlement) : ''}</td>
                  <td>{r.ent ? iops(r.ent.reservation) : ''}</td>
                  <td>{r.ent ? (r.ent.limit === null ? 'unlimited' : limit(r.ent.limit)) : ''}</td>
                  <td>{r.ent ? compact(r.ent.shares) : ''}</td>
                  <td className="left basil-muted" data-testid={r.kind === 'disk' ? 'applied' : undefined}>
                    {r.kind === 'disk' ? <AppliedText a={r.applied} /> : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </LoadGate>
  );
}

function NewTreeForm({ onCreate }: { onCreate: (doc: PoolTreeDoc) => void }) {
  const { api } = useApp();
  const pods = useLoad<PodSummary[]>(() => api.pods(), 'pods-for-pools');
  const [name, setName] = useState('');
  const [datastore, setDatastore] = useState('');
  const datastores = (pods.data ?? []).flatMap((p) => p.datastores);
  return (
    <form
      className="basil-inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        onCreate(emptyTree(name.trim(), datastore));
      }}
    >
      <input className="clr-input" placeholder="tree name" value={name} onChange={(e) => setName(e.target.value)} aria-label="new tree name" />
      <div className="clr-select-wrapper">
        <select className="clr-select" value={datastore} onChange={(e) => setDatastore(e.target.value)} aria-label="datastore">
          <option value="">datastore…</option>
          {datastores.map((d) => (
            <option key={d.id} value={d.name}>
              {d.name}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="btn btn-sm btn-outline" disabled={name.trim() === '' || datastore === ''}>
        New tree
      </button>
    </form>
  );
}

export function PoolsTab() {
  const { api } = useApp();
  const trees = useLoad<PoolTreeDoc[]>(() => api.pools(), 'pools');
  const [selected, setSelected] = useState<string | null>(null);
  const [draftNew, setDraftNew] = useState<PoolTreeDoc | null>(null);
  // The tree just saved, shown until the reloaded list has it (so the editor and its notice stay).
  const [saved, setSaved] = useState<PoolTreeDoc | null>(null);
  const list = trees.data ?? [];
  const current =
    draftNew ??
    list.find((t) => t.name === selected) ??
    (saved && saved.name === selected ? saved : null) ??
    list[0] ??
    null;
  return (
    <div data-testid="pools-tab">
      <Section
        title="Storage Resource Pools"
        actions={
          <>
            {list.length > 0 && (
              <div className="clr-select-wrapper">
                <select
                  className="clr-select"
                  value={current?.name ?? ''}
                  aria-label="pool tree"
                  data-testid="pool-select"
                  onChange={(e) => {
                    setDraftNew(null);
                    setSelected(e.target.value);
                  }}
                >
                  {list.map((t) => (
                    <option key={t.name} value={t.name}>
                      {t.name} ({t.datastore})
                    </option>
                  ))}
                </select>
              </div>
            )}
            <NewTreeForm onCreate={(doc) => setDraftNew(doc)} />
          </>
        }
      >
        <LoadGate loaded={trees}>
          {() =>
            current ? (
              <PoolTreeEditor
                initial={current}
                isNew={draftNew !== null}
                onSaved={(doc) => {
                  setSaved(doc);
                  setSelected(doc.name);
                  setDraftNew(null);
                  trees.reload();
                }}
                onDeleted={() => {
                  setSelected(null);
                  trees.reload();
                }}
              />
            ) : (
              <p className="basil-muted">No pool trees yet: create one for a datastore.</p>
            )
          }
        </LoadGate>
      </Section>
      {current && !draftNew && (
        <Section title={`Live entitlements: ${current.name}`}>
          <EntitlementsTable doc={current} />
        </Section>
      )}
    </div>
  );
}
