// Building blocks the views share: loading the API with polling, Clarity alerts, labels, spinners,
// tabs and the confirmation modal.

import { createContext, useCallback, useContext, useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, type ApiClient } from '../api/client';
import type { Host } from '../host/host';
import { absolute, relative } from '../shape/format';
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
  return <span className={cls}>{(state ?? 'unknown').replace(/_/g, ' ')}</span>;
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

const FOCUSABLE = 'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/**
 * A modal dialog over a backdrop that dims and blocks the page: focus moves into it on opening, Tab and
 * Shift+Tab stay inside it, Escape closes it, and focus goes back where it was on closing.
 */
export function Modal({
  title,
  children,
  footer,
  onClose,
  testId,
  size,
}: {
  title: string;
  children: ReactNode;
  footer: ReactNode;
  onClose: () => void;
  testId?: string;
  size?: 'lg' | 'xl';
}) {
  const dialog = useRef<HTMLDivElement | null>(null);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;
  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const box = dialog.current;
    const focusables = () => (box ? [...box.querySelectorAll<HTMLElement>(FOCUSABLE)] : []);
    (focusables()[0] ?? box)?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        closeRef.current();
        return;
      }
      if (e.key !== 'Tab' || !box) return;
      const items = focusables();
      if (items.length === 0) {
        e.preventDefault();
        box.focus();
        return;
      }
      const first = items[0];
      const last = items[items.length - 1];
      const active = document.activeElement;
      if (e.shiftKey && (active === first || !box.contains(active))) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && (active === last || !box.contains(active))) {
        e.preventDefault();
        first.focus();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      before?.focus();
    };
  }, []);
  return (
    <>
      {/* The backdrop is the fixed layer the dialog is centred in: it dims the page and takes its clicks. */}
      <div className="modal basil-modal basil-modal-backdrop" data-testid={testId ? `${testId}-backdrop` : undefined}>
        <div
          className={`modal-dialog${size ? ` modal-${size}` : ''}`}
          role="dialog"
          aria-modal="true"
          aria-label={title}
          ref={dialog}
          tabIndex={-1}
          data-testid={testId}
        >
          <div className="modal-content">
            <div className="modal-header">
              <h3 className="modal-title">{title}</h3>
            </div>
            {/* Clarity's wrapper scrolls a body taller than 70 % of the window; the footer stays in view. */}
            <div className="modal-body-wrapper">
              <div className="modal-body">{children}</div>
            </div>
            <div className="modal-footer">{footer}</div>
          </div>
        </div>
      </div>
    </>
  );
}

/** A figure with its label above, for the summary strips ("N 1.23"); `hint` explains it on hover. */
/** A row of Clarity labels, each with its meaning in a tooltip (flags of a disk, say); nothing when empty. */
export function Labels({ items, kind = 'info' }: { items: { key: string; text: string; title?: string }[]; kind?: 'info' | 'warning' | 'success' }) {
  if (items.length === 0) return null;
  return (
    <span className="basil-labels">
      {items.map((i) => (
        <span key={i.key} className={`label label-${kind}`} title={i.title} data-label={i.key}>
          {i.text}
        </span>
      ))}
    </span>
  );
}

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

/** "Now" on the clock of the service's timestamps (a new function each time the clock ticks). */
export const ClockContext = createContext<() => number>(() => Date.now());

export function useNow(): () => number {
  return useContext(ClockContext);
}

/** A timestamp as the plugin shows them all: relative to the service's now, the absolute on hover. */
export function When({ t, prefix = '', fallback, testId }: { t: string | null | undefined; prefix?: string; fallback?: string; testId?: string }) {
  const now = useNow();
  if (!t) return fallback !== undefined ? <>{fallback}</> : null;
  return (
    <time dateTime={t} title={absolute(t)} className="basil-when" data-testid={testId}>
      {prefix}
      {relative(t, now())}
    </time>
  );
}

/** The hash of an object's view in this plugin. */
export function vmHash(id: string): string {
  return `#/vm/${encodeURIComponent(id)}`;
}

export function datastoreHash(id: string): string {
  return `#/datastore/${encodeURIComponent(id)}`;
}

/** The VM id in a disk id (`vm-43:scsi0:1` → `vm-43`; with a vCenter prefix, `lab:vm-43:scsi0:1` → `lab:vm-43`). */
export function vmOfDisk(disk: string): string {
  const parts = disk.split(':');
  return parts.length >= 3 ? parts.slice(0, -2).join(':') : disk;
}

/** A link that opens an object's view (a VM, a datastore) through the app's navigation. */
export function ObjectLink({ hash, children, testId, title }: { hash: string; children: ReactNode; testId?: string; title?: string }) {
  const { open } = useApp();
  return (
    <a
      href={hash}
      className="basil-object-link"
      data-testid={testId}
      title={title}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
        e.preventDefault();
        open(hash);
      }}
    >
      {children}
    </a>
  );
}

/** A VM's name linking to its view, or the bare name when the VM's id is unknown. */
export function VmLink({ id, name, testId = 'vm-link' }: { id: string | null | undefined; name: ReactNode; testId?: string }) {
  if (!id) return <>{name}</>;
  return (
    <ObjectLink hash={vmHash(id)} testId={testId} title={`open VM ${id}`}>
      {name}
    </ObjectLink>
  );
}

/** Said where an object the URL names does not exist (404): what was asked for, and a way back. */
export function NotFound({ what, id, error, listHash, listLabel }: { what: string; id: string; error: ApiError; listHash: string; listLabel: string }) {
  return (
    <div data-testid="not-found">
      <Alert kind="warning">
        No {what} <code>{id}</code>: {error.describe()}
      </Alert>
      <p className="basil-back-links">
        <a href={listHash} data-testid="back-link">
          ← Back to {listLabel}
        </a>
        <a href="#/pods">Overview</a>
      </p>
    </div>
  );
}
