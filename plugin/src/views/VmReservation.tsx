// The VM view's reservation suggestion: the SRP reservation that meets the target of the VM's uploaded
// request trace (Lu's capacity for a fraction f of IOs within δ), beside the reservation its pool tree
// gives it now, with the trace's summary and age. Operators upload a trace file here, or remove it.

import { type FormEvent, useState } from 'react';
import { ApiError } from '../api/client';
import type { Me, VmReservation } from '../api/types';
import { compact, iops, limit } from '../shape/format';
import { Alert, ErrorAlert, LoadGate, Section, Stat, useApp, useLoad, When } from './common';

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, 'client', err instanceof Error ? err.message : String(err));
}

/** "95 %" or "99.9 %": a fraction as the percentage it was given as. */
export function fractionText(f: number): string {
  return `${Number((f * 100).toFixed(3)).toString()} %`;
}

/** A bound in ms as given: 10, 2.5, 0.25. */
export function boundText(ms: number): string {
  return `${Number(ms.toPrecision(4)).toString()} ms`;
}

type Suggestion = NonNullable<VmReservation['suggestion']>;

function traceText(t: Suggestion['trace']): string {
  let text = `${iops(t.requests)} requests`;
  if (t.duration_s !== undefined) text += ` over ${compact(t.duration_s)} s`;
  if (t.mean_iops !== undefined && t.mean_iops !== null) text += `, mean ${iops(t.mean_iops)} IO/s`;
  if (t.format) text += ` (${t.format.toUpperCase()})`;
  return text;
}

interface UploadForm {
  file: File | null;
  fraction: string;
  bound: string;
  format: '' | 'spc' | 'csv';
}

function readText(file: File): Promise<string> {
  if (typeof file.text === 'function') return file.text();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result ?? ''));
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'));
    reader.readAsText(file);
  });
}

/** Problems of the form found before sending (the service checks the same and the trace's lines). */
export function uploadProblems(form: { file: File | null; fraction: string; bound: string }): { field: string; message: string }[] {
  const found: { field: string; message: string }[] = [];
  if (!form.file) found.push({ field: 'trace', message: 'choose a trace file (SPC or CSV)' });
  const f = Number(form.fraction);
  if (form.fraction.trim() === '' || !Number.isFinite(f) || f <= 0 || f > 1) found.push({ field: 'fraction', message: 'must be in (0, 1], e.g. 0.95' });
  const b = Number(form.bound);
  if (form.bound.trim() === '' || !Number.isFinite(b) || b <= 0) found.push({ field: 'bound_ms', message: 'must be a number of ms above 0' });
  return found;
}

function TraceUpload({ id, initial, onDone, onCancel }: { id: string; initial: Suggestion | null; onDone: (r: VmReservation) => void; onCancel: () => void }) {
  const { api } = useApp();
  const [form, setForm] = useState<UploadForm>({
    file: null,
    fraction: String(initial?.fraction ?? 0.95),
    bound: String(initial?.bound_ms ?? 10),
    format: '',
  });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const problems = uploadProblems(form);
    if (problems.length > 0) {
      setError(new ApiError(400, 'invalid', 'The upload is not valid:', problems));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const trace = await readText(form.file as File);
      const answer = await api.uploadVmTrace(id, {
        trace,
        fraction: Number(form.fraction),
        bound_ms: Number(form.bound),
        ...(form.format ? { format: form.format } : {}),
      });
      onDone(answer);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="basil-trace-upload" onSubmit={submit} data-testid="trace-upload">
      <p className="basil-muted">
        A request trace of this VM, one IO a line: SPC (<code>ASU,LBA,size,opcode,timestamp</code>) or CSV (<code>timestamp[,size[,op]]</code>), at most 4 MiB.
        Basil keeps the capacity it needs for the target, not the trace.
      </p>
      <div className="clr-form-control basil-form-row">
        <label className="clr-control-label" htmlFor="trace-file">
          trace file
        </label>
        <input id="trace-file" type="file" data-testid="trace-file" onChange={(e) => setForm({ ...form, file: e.target.files?.[0] ?? null })} />
      </div>
      <div className="clr-form-control basil-form-row">
        <label className="clr-control-label" htmlFor="trace-fraction">
          fraction f of IOs
        </label>
        <input id="trace-fraction" className="clr-input" data-testid="trace-fraction" value={form.fraction} onChange={(e) => setForm({ ...form, fraction: e.target.value })} />
      </div>
      <div className="clr-form-control basil-form-row">
        <label className="clr-control-label" htmlFor="trace-bound">
          within δ (ms)
        </label>
        <input id="trace-bound" className="clr-input" data-testid="trace-bound" value={form.bound} onChange={(e) => setForm({ ...form, bound: e.target.value })} />
      </div>
      <div className="clr-form-control basil-form-row">
        <label className="clr-control-label" htmlFor="trace-format">
          format
        </label>
        <select id="trace-format" className="clr-select" data-testid="trace-format" value={form.format} onChange={(e) => setForm({ ...form, format: e.target.value as UploadForm['format'] })}>
          <option value="">guess from the first line</option>
          <option value="spc">SPC</option>
          <option value="csv">CSV</option>
        </select>
      </div>
      <ErrorAlert error={error} testId="trace-error" />
      <div className="basil-form-actions">
        <button type="submit" className="btn btn-sm btn-primary" disabled={busy} data-testid="trace-submit">
          {busy ? 'Planning…' : 'Upload'}
        </button>
        <button type="button" className="btn btn-sm btn-link" disabled={busy} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Suggested({ r }: { r: VmReservation }) {
  const s = r.suggestion;
  const srp = r.srp;
  if (!s) {
    return (
      <p className="basil-muted" data-testid="no-suggestion">
        No request trace has been uploaded for this VM: upload one with a target (a fraction of its IOs within a bound) to get the SRP reservation that meets it.
      </p>
    );
  }
  const where = srp ? `pool tree ${srp.pool_tree}${srp.pool ? `, pool ${srp.pool}` : ''}` : null;
  return (
    <>
      <div className="basil-stats" data-testid="reservation-stats">
        <Stat label="target" value={`${fractionText(s.fraction)} of IOs within ${boundText(s.bound_ms)}`} testId="res-target" />
        <Stat
          label="suggested reservation"
          value={`${iops(s.reservation_iops)} IOPS`}
          testId="res-suggested"
          hint={`The least capacity for the target (${compact(s.capacity_iops)} IOPS), rounded ${s.rounding}`}
        />
        <Stat label="for every IO" value={`${iops(s.capacity_full_iops)} IOPS`} testId="res-full" hint="The least capacity for 100 % of IOs within the bound" />
        <Stat label={where ? `reservation now (${where})` : 'reservation now'} value={srp ? `${iops(srp.reservation)} IOPS` : 'no pool tree'} testId="res-current" />
        <Stat
          label="meets the target"
          value={r.meets_target === null ? '—' : r.meets_target ? 'yes' : 'no'}
          tone={r.meets_target === null ? undefined : r.meets_target ? 'good' : 'bad'}
          testId="res-meets"
        />
        {srp && <Stat label="limit · shares" value={`${limit(srp.limit ?? -1)} · ${compact(srp.shares)}`} testId="res-limit" />}
        {srp?.dynamic && <Stat label="entitlement" value={`${iops(srp.dynamic.entitlement)} IOPS`} testId="res-entitlement" />}
        <Stat label="trace" value={traceText(s.trace)} testId="res-trace" />
        <Stat
          label="uploaded"
          value={
            <>
              <When t={s.uploaded_at} /> by {s.uploaded_by}
            </>
          }
          testId="res-uploaded"
        />
      </div>
      {srp && r.meets_target === false && (
        <Alert kind="warning" testId="res-advice">
          The pool tree {srp.pool_tree} reserves {iops(srp.reservation)} IOPS for {r.vm_name}: raise its reservation to {iops(s.reservation_iops)} IOPS for{' '}
          {fractionText(s.fraction)} of its IOs to finish within {boundText(s.bound_ms)}.
        </Alert>
      )}
      {!srp && <p className="basil-muted">No Storage Resource Pool tree holds this VM: add it to one with this reservation to have SRP keep it.</p>}
    </>
  );
}

export function VmReservationPanel({ id }: { id: string }) {
  const { api } = useApp();
  const res = useLoad<VmReservation>(() => api.vmReservation(id), `vm-res:${id}`, 60_000);
  const me = useLoad<Me | null>(() => api.me().catch(() => null), 'me');
  const canUpload = me.data?.role === 'operator' || me.data?.role === 'admin';
  const [uploading, setUploading] = useState(false);
  const [removeError, setRemoveError] = useState<ApiError | null>(null);
  const remove = async () => {
    setRemoveError(null);
    try {
      await api.deleteVmTrace(id);
      res.reload();
    } catch (err) {
      setRemoveError(asApiError(err));
    }
  };
  const actions = canUpload && !uploading && (
    <>
      <button type="button" className="btn btn-sm btn-outline" onClick={() => setUploading(true)} data-testid="trace-upload-open">
        Upload trace…
      </button>
      {res.data?.suggestion && (
        <button type="button" className="btn btn-sm btn-link" onClick={remove} data-testid="trace-remove">
          Remove
        </button>
      )}
    </>
  );
  return (
    <Section title="Reservation suggestion" actions={actions || undefined} testId="vm-reservation">
      <ErrorAlert error={removeError} />
      {uploading && (
        <TraceUpload
          id={id}
          initial={res.data?.suggestion ?? null}
          onCancel={() => setUploading(false)}
          onDone={() => {
            setUploading(false);
            res.reload();
          }}
        />
      )}
      <LoadGate loaded={res}>{(r) => <Suggested r={r} />}</LoadGate>
    </Section>
  );
}
