import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '../src/api/types';
import { appendPage, auditQuery, detailText, nextBefore, viaText, whatText } from '../src/shape/audit';
import { fixture } from './helpers';

const AUDIT = fixture<AuditEntry[]>('audit.json');

function entry(id: number, at: string, extra: Partial<AuditEntry> = {}): AuditEntry {
  return { id, at, who: 'ops', via: 'token', action: 'plan.apply', target: `plan ${id}`, from: '10.0.0.1', outcome: 'ok', message: '', detail: {}, ...extra };
}

describe('audit query', () => {
  it('asks for a page, older than a time, filtered by who and an action prefix', () => {
    expect(auditQuery({ actor: '', action: '' }, 50)).toBe('limit=50');
    expect(auditQuery({ actor: ' e2e-admin ', action: 'schedules.' }, 50, '2026-11-22T03:12:06.848249+00:00')).toBe(
      'limit=50&before=2026-11-22T03%3A12%3A06.848249%2B00%3A00&actor=e2e-admin&action=schedules.',
    );
  });
});

describe('what an entry says', () => {
  it('names how the caller signed in', () => {
    expect(viaText('token')).toBe('API token');
    expect(viaText('vcenter')).toBe('vSphere Client session');
    expect(viaText('system')).toBe('Basil itself');
    expect(viaText('carrier-pigeon')).toBe('carrier-pigeon');
    expect(viaText(undefined)).toBe('');
  });

  it('turns the recorded window change into the fields it changed', () => {
    const change = AUDIT.find((e) => e.action === 'schedules.rebalance' && e.outcome === 'ok');
    expect(change).toBeDefined();
    expect(whatText(change as AuditEntry)).toBe('cron: 30 1 * * sun, max_moves: 12');
  });

  it('says a reset of the window, and a Run now refused because the job was running', () => {
    const reset = AUDIT.find((e) => e.action === 'schedules.rebalance.reset') as AuditEntry;
    expect(reset).toBeDefined();
    expect(reset.target).toBe('rebalance window');
    expect(whatText(reset)).toBe("the configuration's window");
    const refused = AUDIT.find((e) => e.action === 'job.run' && e.outcome !== 'ok') as AuditEntry;
    expect(whatText(refused)).toMatch(/^job collect is running already: run \d+$/);
  });

  it('gives a refusal’s message, every problem of it', () => {
    const refused = AUDIT.find((e) => e.action === 'schedules.rebalance' && e.outcome === 'invalid') as AuditEntry;
    expect(refused).toBeDefined();
    expect(whatText(refused)).toBe(refused.message);
    expect(whatText(refused)).toContain('hour: 25 is outside 0-23');
    // A refusal the web layer recorded carries the HTTP status in its details.
    expect(whatText({ message: 'token revoked', detail: { status: 401, error: 'unauthenticated' } })).toBe(
      'token revoked (status: 401, error: unauthenticated)',
    );
  });

  it('says a plan’s creation with its message and leaves empty details out', () => {
    const created = AUDIT.find((e) => e.action === 'plan.create') as AuditEntry;
    expect(whatText(created)).toMatch(/^plan \d+ with \d+ moves \(plan: \d+, moves: \d+\)$/);
    expect(whatText({ message: '', detail: {} })).toBe('');
    expect(detailText({ notes: [], trees: 1, ids: ['a', 'b'], nested: { k: 1 }, none: null })).toBe('trees: 1, ids: a, b, nested: {"k":1}, none: —');
    expect(detailText('plain')).toBe('plain');
  });
});

describe('paging back', () => {
  const page1 = [entry(5, '2026-11-22T10:05:00Z'), entry(4, '2026-11-22T10:04:00Z')];

  it('starts the next page at the oldest entry shown while pages come back full', () => {
    expect(nextBefore(page1, page1, 2)).toBe('2026-11-22T10:04:00Z');
    expect(nextBefore(page1, page1, 50)).toBeNull();
    expect(nextBefore([], [], 50)).toBeNull();
  });

  it('appends older entries without repeating one', () => {
    const page2 = [entry(4, '2026-11-22T10:04:00Z'), entry(3, '2026-11-22T10:03:00Z')];
    expect(appendPage(page1, page2).map((e) => e.id)).toEqual([5, 4, 3]);
  });
});
