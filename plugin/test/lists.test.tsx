import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { ReactNode } from 'react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient, listQuery, serviceNow } from '../src/api/client';
import type { DatastoreDetail, Entitlements, ListPage, PodDetail, PoolTreeDoc, VmItem } from '../src/api/types';
import { LineChart } from '../src/charts/Charts';
import { StandaloneHost } from '../src/host/host';
import { parseRoute } from '../src/host/routes';
import { absolute, relative } from '../src/shape/format';
import { appendPage, nextSort, sortParam } from '../src/shape/lists';
import { entitlementTree } from '../src/shape/pools';
import { App } from '../src/views/App';
import { AppContext, ClockContext, Modal, When } from '../src/views/common';
import { DatastoreList, SEARCH_DELAY_MS, VmList } from '../src/views/Lists';
import { MovesTable } from '../src/views/PodsOverview';
import { PoolTreeEditor } from '../src/views/PoolsEditor';
import { PodView } from '../src/views/StorageViews';
import { VmView } from '../src/views/VmView';
import { type Call, fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';
const PAGE1 = fixture<ListPage<VmItem>>('vms_page1.json');
const PAGE2 = fixture<ListPage<VmItem>>('vms_page2.json');

beforeEach(() => {
  window.location.hash = '';
});
afterEach(() => cleanup());

function renderIn(node: ReactNode, routes: Record<string, unknown | Responder>) {
  const f = fakeFetch(routes);
  const host = new StandaloneHost(new MemoryStore(), null, false);
  const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
  const opened: string[] = [];
  render(<AppContext.Provider value={{ api, host, open: (h) => opened.push(h) }}>{node}</AppContext.Provider>);
  return { ...f, opened };
}

const query = (call: Call) => new URL(call.url).searchParams;

describe('list requests', () => {
  it('sends only the filters given, with sort, limit and cursor', () => {
    expect(listQuery({})).toBe('');
    expect(listQuery({ q: 'db 1', sort: '-name', limit: 50, cursor: null, pod: '' })).toBe('?q=db+1&sort=-name&limit=50');
    expect(listQuery({ pod: 'basil', datastore: 'datastore-28', vm: 'vm-38', tag: 'qos/gold', cursor: 'abc' })).toBe(
      '?pod=basil&datastore=datastore-28&vm=vm-38&tag=qos%2Fgold&cursor=abc',
    );
  });

  it('flips the direction of the same column and starts another ascending', () => {
    const s = nextSort({ key: 'name', desc: false }, 'name');
    expect(sortParam(s)).toBe('-name');
    expect(sortParam(nextSort(s, 'iops'))).toBe('iops');
  });

  it('appends a page without repeating rows already shown', () => {
    const shown = appendPage(PAGE1.items, { items: [PAGE1.items[1], ...PAGE2.items], next_cursor: null });
    expect(shown.map((v) => v.id)).toEqual(['vm-38', 'vm-41', 'vm-43']);
  });

  it('routes the two new tabs of the global view', () => {
    expect(parseRoute('#/vms')).toEqual({ view: 'global', tab: 'vms' });
    expect(parseRoute('#/datastores')).toEqual({ view: 'global', tab: 'datastores' });
  });
});

describe('VM list', () => {
  it('shows the first page, pages on with the cursor, searches and sorts through the service', async () => {
    const f = renderIn(<VmList />, {
      'GET /vms': (call: Call) => ({ status: 200, body: query(call).get('cursor') === PAGE1.next_cursor ? PAGE2 : PAGE1 }),
    });
    const table = await screen.findByTestId('vm-table');
    await waitFor(() => expect(within(table).getAllByTestId('vm-link')).toHaveLength(2));
    expect(query(f.calls[0]).get('sort')).toBe('name');
    expect(query(f.calls[0]).get('limit')).toBe('50');
    // Each row links to its VM's view, and names its datastores with links to theirs.
    const first = table.querySelector('tr[data-vm="vm-41"]') as HTMLElement;
    expect(within(first).getByTestId('vm-link').getAttribute('href')).toBe('#/vm/vm-41');
    expect(within(first).getAllByTestId('datastore-link').map((a) => a.textContent)).toEqual(['ds-a', 'ds-b']);
    fireEvent.click(within(first).getByTestId('vm-link'));
    expect(f.opened).toEqual(['#/vm/vm-41']);

    fireEvent.click(screen.getByTestId('list-more'));
    await waitFor(() => expect(within(table).getAllByTestId('vm-link')).toHaveLength(3));
    expect(query(f.calls[1]).get('cursor')).toBe(PAGE1.next_cursor);
    expect(screen.queryByTestId('list-more')).toBeNull(); // the last page has no cursor

    fireEvent.change(screen.getByTestId('vm-search'), { target: { value: ' oltp ' } });
    await waitFor(() => expect(f.calls.length).toBe(3), { timeout: SEARCH_DELAY_MS * 8 });
    expect(query(f.calls[2]).get('q')).toBe('oltp');
    expect(query(f.calls[2]).get('cursor')).toBeNull(); // a new query starts at the first page

    fireEvent.click(screen.getByTestId('sort-name'));
    await waitFor(() => expect(f.calls.length).toBe(4));
    expect(query(f.calls[3]).get('sort')).toBe('-name');
    expect(screen.getByTestId('sort-name').closest('th')?.getAttribute('aria-sort')).toBe('descending');
  });

  it('says what an empty search found and shows the service’s refusal', async () => {
    renderIn(<VmList />, {
      'GET /vms': (call: Call) =>
        query(call).get('q')
          ? { status: 200, body: { items: [], next_cursor: null } }
          : { status: 400, body: { error: 'invalid', message: 'query: 1 problem', problems: [{ field: 'query.sort', message: 'unknown key' }] } },
    });
    expect((await screen.findByTestId('error')).textContent).toContain('query.sort');
    fireEvent.change(screen.getByTestId('vm-search'), { target: { value: 'nothing' } });
    expect((await screen.findByTestId('vm-list-empty', {}, { timeout: 3000 })).textContent).toContain('nothing');
  });
});

describe('datastore list', () => {
  it('links each datastore and its pod, and sorts by a figure', async () => {
    const f = renderIn(<DatastoreList />, { 'GET /datastores': fixture('datastores_page.json') });
    const table = await screen.findByTestId('datastore-table');
    await waitFor(() => expect(within(table).getAllByTestId('datastore-link')).toHaveLength(3));
    expect(within(table).getAllByTestId('datastore-link')[0].getAttribute('href')).toBe('#/datastore/datastore-28');
    expect(within(table).getAllByTestId('pod-link').map((a) => a.textContent)).toEqual(['basil', 'basil']);
    fireEvent.click(screen.getByTestId('sort-latency_ms'));
    await waitFor(() => expect(f.calls.length).toBe(2));
    expect(query(f.calls[1]).get('sort')).toBe('latency_ms');
  });
});

describe('unknown objects', () => {
  it('a VM the service does not know has a way back to the VM list', async () => {
    renderIn(<VmView id="vm-999" />, {
      'GET /vms/vm-999': () => ({ status: 404, body: { error: 'not_found', message: "no VM 'vm-999'" } }),
    });
    const nf = await screen.findByTestId('not-found');
    expect(nf.textContent).toContain('vm-999');
    expect(screen.getByTestId('back-link').getAttribute('href')).toBe('#/vms');
  });

  it('a datastore the service does not know links back to the datastore list', async () => {
    const f = fakeFetch({ 'GET /vcenters': fixture('vcenters.json') });
    const session = new MemoryStore();
    session.setItem('basil.apiToken', 't');
    window.location.hash = '#/datastore/datastore-999';
    render(<App host={new StandaloneHost(session, null, false)} baseUrl={BASE} fetch={f.fetch} />);
    await screen.findByTestId('not-found');
    expect(screen.getByTestId('back-link').getAttribute('href')).toBe('#/datastores');
  });
});

describe('SRP entitlements as a tree', () => {
  const doc = fixture<PoolTreeDoc>('pool_tiers.json');
  const ent = fixture<Entitlements>('entitlements_tiers.json');

  it('nests each VM under the pool whose leaf names it, its disks under it, tag VMs under the tag', () => {
    const rows = entitlementTree(doc, ent).map((r) => `${'  '.repeat(r.depth)}${r.kind} ${r.label}`);
    expect(rows).toEqual([
      'pool gold',
      '  vm oltp-2',
      '    disk vm-38:scsi0:1',
      'pool bronze',
      '  vm web-1', // the leaf names it by id
      '    disk vm-43:scsi0:1',
      '  tag qos/batch',
      '    vm batch-9', // no leaf names it: reached through the tree's one tag
      '      disk vm-50:scsi0:1',
    ]);
    const gold = entitlementTree(doc, ent)[0];
    expect(gold.ent?.entitlement).toBe(936.3);
    expect(entitlementTree(doc, ent)[1].vmId).toBe('vm-38');
  });

  it('puts VMs no leaf names under "other VMs" when the tree has no tag leaf', () => {
    const noTag: PoolTreeDoc = { ...doc, pools: [doc.pools[0]] };
    const rows = entitlementTree(noTag, ent);
    const other = rows.findIndex((r) => r.label === 'other VMs');
    expect(other).toBeGreaterThan(0);
    expect(rows.slice(other + 1).filter((r) => r.kind === 'vm').map((r) => r.label)).toEqual(['batch-9', 'web-1']);
  });
});

describe('confirmation dialog', () => {
  it('has a backdrop, takes the focus, keeps Tab inside and gives the focus back on closing', async () => {
    const outside = document.createElement('button');
    document.body.appendChild(outside);
    outside.focus();
    let closed = 0;
    const { unmount } = render(
      <Modal
        title="Apply?"
        onClose={() => (closed += 1)}
        testId="confirm"
        footer={
          <>
            <button type="button">Cancel</button>
            <button type="button">OK</button>
          </>
        }
      >
        body
      </Modal>,
    );
    expect(screen.getByTestId('confirm-backdrop')).toBeTruthy();
    const [cancel, ok] = screen.getAllByRole('button', { hidden: false }).filter((b) => b !== outside);
    expect(document.activeElement).toBe(cancel);
    ok.focus();
    fireEvent.keyDown(document, { key: 'Tab' });
    expect(document.activeElement).toBe(cancel);
    fireEvent.keyDown(document, { key: 'Tab', shiftKey: true });
    expect(document.activeElement).toBe(ok);
    fireEvent.keyDown(document, { key: 'Escape' });
    expect(closed).toBe(1);
    unmount();
    expect(document.activeElement).toBe(outside);
    outside.remove();
  });
});

describe('times', () => {
  const NOW = Date.parse('2026-11-25T12:00:00Z');

  it('says how far a time is, both ways', () => {
    expect(relative('2026-11-25T11:59:55Z', NOW)).toBe('just now');
    expect(relative('2026-11-25T11:55:00Z', NOW)).toBe('5 min ago');
    expect(relative('2026-11-25T09:00:00Z', NOW)).toBe('3 h ago');
    expect(relative('2026-11-25T12:30:00Z', NOW)).toBe('in 30 min');
    expect(relative(null, NOW)).toBe('—');
    expect(absolute('2026-11-25T11:55:00Z')).toMatch(/^2026-11-25 \d\d:55:00 UTC[+-]\d\d:\d\d$/);
  });

  it('shows a time relative to the service’s clock, the absolute on hover', () => {
    render(
      <ClockContext.Provider value={() => NOW}>
        <When t="2026-11-25T11:55:00Z" prefix="last " testId="when" />
      </ClockContext.Provider>,
    );
    const el = screen.getByTestId('when');
    expect(el.textContent).toBe('last 5 min ago');
    expect(el.getAttribute('title')).toBe(absolute('2026-11-25T11:55:00Z'));
  });

  it('finds the service’s now in /health: its own, else the first vCenter’s', () => {
    expect(serviceNow({ status: 'ok', version: '1', vcenters: [{ name: 'lab', connected: true, last_collection: null, now: '2026-11-25T12:00:00Z' }] })).toBe(NOW);
    expect(serviceNow({ status: 'ok', version: '1', now: '2026-11-25T12:00:00Z', vcenters: [] })).toBe(NOW);
    expect(serviceNow({ status: 'ok', version: '1', vcenters: [{ name: 'lab', connected: false, last_collection: null }] })).toBeNull();
  });

  it('takes "now" from the service: its /health now, else its Date header', async () => {
    const ahead = 30 * 60_000; // a lab running fast: vCenter's clock half an hour ahead of this browser
    const api = new ApiClient({
      baseUrl: BASE,
      credentials: { headers: async () => ({}) },
      fetch: async () =>
        new Response(JSON.stringify({ status: 'ok', version: '1', vcenters: [], now: new Date(Date.now() + ahead).toISOString() }), {
          status: 200,
          headers: { 'Content-Type': 'application/json', Date: new Date(Date.now() - 120_000).toUTCString() },
        }),
    });
    await api.health();
    expect(Math.abs(api.serverNow() - (Date.now() + ahead))).toBeLessThan(5_000);
    api.dataClockOffsetMs = null; // a service that sends no `now`: its Date header
    expect(Math.abs(api.serverNow() - (Date.now() - 120_000))).toBeLessThan(5_000);
  });
});

describe('pool leaves', () => {
  it('a VM leaf links to the VM it names, found by name in the VM list', async () => {
    const tree = fixture<PoolTreeDoc[]>('pools.json')[0];
    const f = renderIn(<PoolTreeEditor initial={tree} isNew={false} onSaved={() => undefined} onDeleted={() => undefined} />, {
      'GET /vms': PAGE1,
    });
    fireEvent.click(screen.getByTestId('pool-pools[0].children[0]-open-vm'));
    await waitFor(() => expect(f.opened).toEqual(['#/vm/vm-38']));
    expect(query(f.calls[0]).get('q')).toBe('oltp-2');
  });

  it('says so when no VM has the leaf’s name', async () => {
    const tree = fixture<PoolTreeDoc[]>('pools.json')[0];
    const f = renderIn(<PoolTreeEditor initial={tree} isNew={false} onSaved={() => undefined} onDeleted={() => undefined} />, {
      'GET /vms': { items: [], next_cursor: null },
    });
    fireEvent.click(screen.getByTestId('pool-pools[0].children[0]-open-vm'));
    expect((await screen.findByText('no VM named oltp-2')).textContent).toBe('no VM named oltp-2');
    expect(f.opened).toEqual([]);
  });
});

describe('recent moves', () => {
  it('say what happened, link the VM and tell when, the time in full on hover', async () => {
    const pod = fixture<PodDetail>('pod.json');
    const base = (pod.recent_moves ?? [])[0] ?? fixture<{ moves: PodDetail['pending'] }>('recommendation.json').moves?.[0];
    expect(base).toBeDefined();
    const moves = [
      { ...base!, state: 'succeeded', outcome: 'already_there', finished_at: '2026-11-25T11:55:00Z', message: null },
      { ...base!, id: 'x2', state: 'succeeded', outcome: 'moved', finished_at: '2026-11-25T11:00:00Z', message: null },
    ];
    renderIn(
      <ClockContext.Provider value={() => Date.parse('2026-11-25T12:00:00Z')}>
        <MovesTable moves={moves} datastores={pod.datastores} testId="recent" />
      </ClockContext.Provider>,
      {},
    );
    const rows = within(screen.getByTestId('recent')).getAllByRole('row').slice(1);
    expect(rows.map((r) => r.querySelector('.label')?.textContent)).toEqual(['already there', 'moved']);
    expect(within(rows[0]).getByTestId('vm-link').getAttribute('href')).toBe(`#/vm/${base!.vm_id}`);
    const when = rows[0].querySelector('time') as HTMLElement;
    expect(when.textContent).toBe('5 min ago');
    expect(when.getAttribute('title')).toBe(absolute('2026-11-25T11:55:00Z'));
  });
});

describe('labels', () => {
  it('the pod page names its status beside the dot', async () => {
    const pod = fixture<PodDetail>('pod.json');
    renderIn(<PodView name={pod.name} />, {
      [`GET /pods/${pod.name}`]: pod,
      [`GET /pods/${pod.name}/history`]: fixture('pod_history.json'),
      [`GET /pods/${pod.name}/recommendations`]: fixture('recommendation.json'),
      'GET /plans': [],
      [`GET /pods/${pod.name}/predictions`]: [],
      [`GET /datastores/${fixture<DatastoreDetail>('datastore.json').id}`]: fixture('datastore.json'),
    });
    const status = await screen.findByTestId('pod-status');
    expect(status.textContent).toMatch(/balanced|near the threshold|over the threshold|no figures yet/);
    expect(status.getAttribute('data-status')).not.toBeNull();
  });

  it('small charts write their y title level, not rotated', () => {
    render(<LineChart title="t" height={150} yLabel="IO size (90th percentile, KB) over time" series={[{ name: 's', points: [{ x: 1, y: 2 }, { x: 2, y: 3 }] }]} testId="c" />);
    const title = screen.getByTestId('c-ytitle');
    expect(title.textContent).toBe('IO size (90th percentile, KB) over time');
    expect(title.getAttribute('transform')).toBeNull();
    expect(screen.getByTestId('c').querySelector('[transform*="rotate"]')).toBeNull();
  });
});
