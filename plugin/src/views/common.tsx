// Building blocks the views share: loading the API with polling, Clarity alerts, labels, spinners,
// tabs and the confirmation modal.

import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, type ApiClient } from '../api/client';
import type { Host } from '../host/host';
import { stateTone } from '../shape/overview';

export interface AppContextValue {
  api: ApiClient;
  host: Host;
  /** Opens another view: inside the vSphere Client through its navigation where possible. */
  open(route: string): void;
}

export const AppContext = createContext<AppContextValue | null>(null);

export function useApp(): AppContextValue {
  const ctx = useContext(AppContext);
  if (!ctx) throw new Error('AppContext missing');
  return ctx;
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, 'client', err instanceof Error ? err.message : String(err));
}

/**
 * Loads with `load` when `key` changes, and again every `pollMs` while mounted (0: never). A failed
 * poll keeps the last data and shows the error.
 */
export function useLoad<T>(load: () => Promise<T>, key: string, pollMs = 0): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const keyRef = useRef(key);

  useEffect(() => {
    if (keyRef.current !== key) {
      keyRef.current = key;
      setData(undefined);
    }
    let live = true;
    setLoading(true);
    loadRef
      .current()
      .then((value) => {
        if (!live) return;
        setData(value);
        setError(null);
      })
      .catch((err: unknown) => {
        if (live) setError(asApiError(err));
      })
      .finally(() => {
        if (live) setLoading(false);
      });
    return () => {
      live = false;
    };
  }, [key, tick]);

  useEffect(() => {
    if (pollMs <= 0) return undefined;
    const timer = setInterval(() => setTick((t) => t + 1), pollMs);
    return () => clearInterval(timer);
  }, [pollMs, key]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <span className="basil-loading">
      <span className="spinner spinner-inline" aria-hidden="true" />
      <span>{label}</span>
    </span>
  );
}

export type AlertKind = 'danger' | 'warning' | 'info' | 'success';

export function Alert({ kind, children, testId }: { kind: AlertKind; children: ReactNode; testId?: string }) {
  return (
    <div className={`alert alert-${kind} alert-sm basil-alert`} role="alert" data-testid={testId}>
      <div className="alert-items">
        <div className="alert-item static">
          <span className="alert-text">{children}</span>
        </div>
      </div>
    </div>
  );
}

export function ErrorAlert({ error, testId }: { error: ApiError | null; testId?: string }) {
  if (!error) return null;
  return (
    <Alert kind="danger" testId={testId ?? 'error'}>
      {error.describe()}
      {error.problems.length > 0 && (
        <ul className="basil-problems">
          {error.problems.map((p, i) => (
            <li key={i}>
              <code>{p.field}</code>: {p.message}
            </li>
          ))}
        </ul>
      )}
    </Alert>
  );
}

/** The usual trio: spinner before the first answer, the error, then the content. */
export function LoadGate<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ReactNode }) {
  if (loaded.data === undefined) {
    return loaded.error ? <ErrorAlert error={loaded.error} /> : <Spinner />;
  }
  return (
    <>
      {loaded.error && <ErrorAlert error={loaded.error} />}
      {children(loaded.data)}
    </>
  );
}

export function StateLabel({ state }: { state: string | undefined }) {
  const tone = stateTone(state);
  const cls = tone === 'neutral' ? 'label' : `label label-${tone}`;
  return <span className={cls}>{state ?? 'unknown'}</span>;
}

export function Tabs<T extends string>({
  tabs,
  active,
  onSelect,
}: {
  tabs: { id: T; label: string }[];
  active: T;
  onSelect: (id: T) => void;
}) {
  return (
    <ul className="nav basil-tabs" role="tablist">
      {tabs.map((t) => (
        <li key={t.id} className="nav-item" role="presentation">
          <button
            type="button"
            role="tab"
            aria-selected={t.id === active}
            className={`btn btn-link nav-link${t.id === active ? ' active' : ''}`}
            onClick={() => onSelect(t.id)}
            data-testid={`tab-${t.id}`}
          >
            {t.label}
          </button>
        </li>
      ))}
    </ul>
  );
}

export function Modal({
  title,
  children,
  footer,
  onClose,
  testId,
}: {
  title: string;
  children: ReactNode;
  footer: ReactNode;
  onClose: () => void;
  testId?: string;
}) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <>
      <div className="modal basil-modal" data-testid={testId}>
        <div className="modal-dialog" role="dialog" aria-modal="true" aria-label={title}>
          <div className="modal-content">
            <div className="modal-header">
              <h3 className="modal-title">{title}</h3>
            </div>
            <div className="modal-body">{children}</div>
            <div className="modal-footer">{footer}</div>
          </div>
        </div>
      </div>
      <div className="modal-backdrop" aria-hidden="true" />
    </>
  );
}

/** A figure with its label above, for the summary strips ("N 1.23"); `hint` explains it on hover. */
export function Stat({ label, value, tone, testId, hint }: { label: string; value: ReactNode; tone?: string; testId?: string; hint?: string }) {
  return (
    <div className={`basil-stat${tone ? ` basil-stat-${tone}` : ''}`} data-testid={testId} title={hint}>
      <div className={`basil-stat-label${hint ? ' basil-has-hint' : ''}`}>{label}</div>
      <div className="basil-stat-value">{value}</div>
    </div>
  );
}

export function Section({ title, actions, children, testId }: { title: string; actions?: ReactNode; children: ReactNode; testId?: string }) {
  return (
    <section className="card basil-section" data-testid={testId}>
      <div className="card-header basil-section-header">
        <span>{title}</span>
        {actions && <span className="basil-section-actions">{actions}</span>}
      </div>
      <div className="card-block">{children}</div>
    </section>
  );
}

export const HOUR_CHOICES = [1, 6, 24, 72, 168];

export function HoursPicker({ hours, onChange }: { hours: number; onChange: (h: number) => void }) {
  return (
    <span className="btn-group btn-sm basil-hours" role="group" aria-label="time range">
      {HOUR_CHOICES.map((h) => (
        <button
          key={h}
          type="button"
          className={`btn btn-sm ${h === hours ? 'btn-primary' : 'btn-outline'}`}
          onClick={() => onChange(h)}
        >
          {h < 24 ? `${h} h` : `${h / 24} d`}
        </button>
      ))}
    </span>
  );
}
