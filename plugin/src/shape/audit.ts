// Reading the audit log: how a caller came in, what a write changed (its message and details in
// words), the filters the API takes, and paging back through older entries.

import type { AuditEntry } from '../api/types';

/** The action groups the audit view filters on (the API takes an action prefix ending in '.'). */
export const AUDIT_ACTIONS: { value: string; label: string }[] = [
  { value: '', label: 'all actions' },
  { value: 'plan.', label: 'plans (create, approve, apply, cancel)' },
  { value: 'recommendation.', label: 'recommendations' },
  { value: 'pool.', label: 'resource pools' },
  { value: 'schedules.', label: 'rebalance window (changed, reset)' },
  { value: 'job.', label: 'jobs run by hand' },
  { value: 'srp.', label: 'SRP settings issued' },
  { value: 'placement', label: 'placement' },
  { value: 'token.', label: 'API tokens' },
];

export interface AuditFilter {
  actor: string;
  action: string;
}

/** The query string of one page of the log: newest first, older than `before` when paging. */
export function auditQuery(filter: AuditFilter, limit: number, before?: string | null): string {
  const q = new URLSearchParams({ limit: String(limit) });
  if (before) q.set('before', before);
  if (filter.actor.trim()) q.set('actor', filter.actor.trim());
  if (filter.action) q.set('action', filter.action);
  return q.toString();
}

const VIA: Record<string, string> = {
  token: 'API token',
  vcenter: 'vSphere Client session',
  cli: 'command line',
  system: 'Basil itself',
  anonymous: 'not signed in',
};

/** How the caller authenticated, in words. */
export function viaText(via: string | null | undefined): string {
  if (!via) return '';
  return VIA[via] ?? via;
}

function valueText(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(valueText).join(', ');
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** An entry's details as "key: value" pairs; empty lists and objects say nothing. */
export function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return '';
  if (typeof detail !== 'object' || Array.isArray(detail)) return valueText(detail);
  return Object.entries(detail as Record<string, unknown>)
    .filter(([, v]) => !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}: ${valueText(v)}`)
    .join(', ');
}

/** What a write did or why it was refused: its message, then the details not already said. */
export function whatText(entry: Pick<AuditEntry, 'message' | 'detail'>): string {
  const message = (entry.message ?? '').trim();
  const detail = detailText(entry.detail);
  if (!message) return detail;
  return detail ? `${message} (${detail})` : message;
}

/** Older entries appended to those shown, without repeating any (by id) if pages overlap. */
export function appendPage(shown: AuditEntry[], page: AuditEntry[]): AuditEntry[] {
  const seen = new Set(shown.map((e) => e.id).filter((id) => id !== undefined));
  return [...shown, ...page.filter((e) => e.id === undefined || !seen.has(e.id))];
}

/** Where the next page starts (the oldest entry shown), or null when the last page was not full. */
export function nextBefore(shown: AuditEntry[], lastPage: AuditEntry[], limit: number): string | null {
  if (lastPage.length < limit || shown.length === 0) return null;
  return shown[shown.length - 1].at;
}
