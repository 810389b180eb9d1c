import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../src/api/client';
import type { DatastoreDetail, LoadPoint, Plan, PodSummary, PoolTreeDoc, Problem, Recommendation, VCenter } from '../src/api/types';
import { compact } from '../src/shape/format';
import { imbalanceStatus } from '../src/shape/overview';
import { ClientHost, type HtmlClientSdk, StandaloneHost } from '../src/host/host';
import { LineChart } from '../src/charts/Charts';
import { App } from '../src/views/App';
import { AppContext } from '../src/views/common';
import { PoolTreeEditor } from '../src/views/PoolsEditor';
import { RecommendationPanel } from '../src/views/Recommendations';
import { type Call, fakeFetch, fixture, MemoryStore, type Responder } from './helpers';

const BASE = 'https://basil.test/api/v1';

const POD = fixture<PodSummary[]>('pods.json')[0];
const DS = fixture<DatastoreDetail>('datastore.json');
const VCENTER = fixture<VCenter[]>('vcenters.json')[0];
// The lab vCenter's instance uuid and the pod's datastore cluster, as the service reported them.
const GUID = VCENTER.instance_uuid as string;
const STORAGE_POD = POD.storage_pod as string;

const apiRoutes = (extra: Record<string, unknown | Responder> = {}) => ({
  'GET /vcenters': fixture('vcenters.json'),
  'GET /pods': fixture('pods.json'),
  [`GET /pods/${POD.name}`]: fixture('pod.json'),
  [`GET /pods/${POD.name}/history`]: fixture('pod_history.json'),
  [`GET /pods/${POD.name}/recommendations`]: fixture('recommendation.json'),
  'GET /plans': [],
  [`GET /datastores/${DS.id}`]: fixture('datastore.json'),
  [`GET /datastores/${DS.id}/model/points`]: fixture('datastore_points.json'),
  [`GET /datastores/${DS.id}/load`]: fixture('datastore_load.json'),
  ...extra,
});

beforeEach(() => {
  window.location.hash = '';
  document.body.removeAttribute('cds-theme');
});
afterEach(() => cleanup());

function clientSdk(context: string[], theme = 'light') {
  let themeCb: ((t: { name: string }) => void) | null = null;
  const navigations: unknown[] = [];
  const sdk: HtmlClientSdk = {
    initialize: (cb) => cb(),
    app: {
      getContextObjects: () => context.map((id) => ({ id })),
      getSessionInfo: (cb) => cb({ sessionToken: 'vc-session-1' }),
      getApiEndpoints: () => ({ uiApiEndpoint: { fullUrl: 'https://127.0.0.1:8989/api/ui' } }),
      getTheme: () => ({ name: theme }),
      navigateTo: (o) => navigations.push(o),
    },
    event: { onThemeChanged: (cb) => (themeCb = cb) },
  };
  return { sdk, navigations, setTheme: (name: string) => themeCb?.({ name }) };
}

describe('pool tree editor', () => {
  function renderEditor(routes: Record<string, unknown | Responder>) {
    const f = fakeFetch(routes);
    const host = new StandaloneHost(new MemoryStore(), null, false);
    const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
    const tree = fixture<PoolTreeDoc[]>('pools.json')[0];
    render(
      <AppContext.Provider value={{ api, host, open: () => undefined }}>
        <PoolTreeEditor initial={tree} isNew={false} onSaved={() => undefined} onDeleted={() => undefined} />
      </AppContext.Provider>,
    );
    return f;
  }

  it('shows each of the service’s validation problems on the field it names', async () => {
    const { problems } = fixture<{ problems: Problem[] }>('pool_problems.json');
    const f = renderEditor({ 'POST /pools/validate': fixture('pool_problems.json') });
    fireEvent.change(screen.getByTestId('pool-pools[0].children[0]-reservation'), { target: { value: '-1' } });
    fireEvent.change(screen.getByTestId('pool-pools[0]-limit'), { target: { value: '100' } });
    fireEvent.click(screen.getByTestId('pool-validate'));
    await screen.findByTestId('pool-problems');
    expect(screen.getByTestId('pool-problems').textContent).toContain(`${problems.length} problems`);
    for (const p of problems.filter((x) => x.field.startsWith('pools[0]'))) {
      const [, node, field] = /^(.*)\.(\w+)$/.exec(p.field) ?? [];
      const input = screen.getByTestId(`pool-${node}-${field}`);
      expect(input.getAttribute('aria-invalid')).toBe('true');
      expect(within(input.closest('td') as HTMLElement).getByText(p.message)).toBeTruthy();
    }
    expect(screen.getByTestId('pool-pools[0]-name').getAttribute('aria-invalid')).toBe('false');
    // Problems about nodes this tree does not have are listed on their own, with their fields.
    for (const p of problems.filter((x) => x.field.startsWith('pools[1]'))) {
      expect(screen.getByTestId('pool-problems').textContent).toContain(p.message);
    }
    // The edits went to the service as numbers, in the tree it validated, with its version.
    const sent = f.calls[0].body as PoolTreeDoc;
    expect(sent.pools[0].children?.[0].reservation).toBe(-1);
    expect(sent.pools[0].limit).toBe(100);
    expect(sent.version).toBe(fixture<PoolTreeDoc[]>('pools.json')[0].version);
  });

  it('says so when the tree is valid', async () => {
    renderEditor({ 'POST /pools/validate': { valid: true, problems: [] } });
    fireEvent.click(screen.getByTestId('pool-validate'));
    expect((await screen.findByTestId('pool-notice')).textContent).toContain('Valid');
  });

  it('explains a version conflict on save', async () => {
    const tree = fixture<PoolTreeDoc[]>('pools.json')[0];
    renderEditor({ [`PUT /pools/${tree.name}`]: () => ({ status: 409, body: { error: 'conflict', message: 'the tree changed (version 2).' } }) });
    fireEvent.change(screen.getByTestId('pool-pools[0]-shares'), { target: { value: 'low' } });
    fireEvent.click(screen.getByTestId('pool-save'));
    const err = await screen.findByTestId('pool-error');
    expect(err.textContent).toContain('the tree changed (version 2).');
    expect(err.textContent).toContain('reload it');
  });
});

describe('recommendation panel', () => {
  it('applies the recommendation after a confirmation and follows the plan until it is done', async () => {
    const rec = fixture<Recommendation>('recommendation.json');
    const proposed = fixture<Plan>('plan_proposed.json');
    let polls = 0;
    const f = fakeFetch({
      [`GET /pods/${POD.name}/recommendations`]: rec,
      'GET /plans': [],
      'POST /plans': () => ({ status: 201, body: proposed }),
      [`POST /plans/${proposed.id}/apply`]: fixture('plan_running.json'),
      [`GET /plans/${proposed.id}`]: () => {
        polls += 1;
        return { status: 200, body: fixture(polls < 2 ? 'plan_running.json' : 'plan_succeeded.json') };
      },
    });
    const host = new StandaloneHost(new MemoryStore(), null, false);
    const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
    render(
      <AppContext.Provider value={{ api, host, open: () => undefined }}>
        <RecommendationPanel pod={POD.name} datastores={POD.datastores} />
      </AppContext.Provider>,
    );
    fireEvent.click(await screen.findByTestId('apply'));
    const dialog = await screen.findByTestId('confirm');
    expect(dialog.textContent).toContain(`${rec.moves.length} disks`);
    expect(f.calls.some((c) => c.method === 'POST')).toBe(false); // nothing happens before the confirmation
    fireEvent.click(screen.getByTestId('confirm-ok'));
    await screen.findByTestId('already-planned');
    expect(f.calls.filter((c) => c.method === 'POST').map((c) => [c.path, c.body])).toEqual([
      ['/plans', { recommendation_id: rec.id }],
      [`/plans/${proposed.id}/apply`, {}],
    ]);
    expect(screen.queryByTestId('apply')).toBeNull();
    await waitFor(() => expect(screen.getByTestId('plan-state').textContent).toBe('succeeded'), { timeout: 6000 });
    expect(screen.getByTestId('plan-progress').getAttribute('data-value')).toBe('100');
  }, 10_000);

  it('labels both halves of a recommended swap as one swap', async () => {
    const rec = fixture<Recommendation>('recommendation.json');
    const moves = rec.moves.map((m, i) => (i < 2 ? { ...m, kind: 'swap', swap_group: 7 } : m));
    const f = fakeFetch({ [`GET /pods/${POD.name}/recommendations`]: { ...rec, moves }, 'GET /plans': [] });
    const host = new StandaloneHost(new MemoryStore(), null, false);
    const api = new ApiClient({ baseUrl: BASE, credentials: host.credentials, fetch: f.fetch });
    render(
      <AppContext.Provider value={{ api, host, open: () => undefined }}>
        <RecommendationPanel pod={POD.name} datastores={POD.datastores} />
      </AppContext.Provider>,
    );
    await screen.findByTestId('apply');
    const labels = [...document.querySelectorAll('.basil-swap')].map((e) => e.textContent);
    expect(labels).toEqual(['swap 7', 'swap 7']);
  });
});

describe('theme', () => {
  it('follows the vSphere Client’s theme and its changes', async () => {
    const c = clientSdk([`urn:vmomi:Datastore:${DS.id}:${GUID}`], 'dark');
    const host = await ClientHost.create(c.sdk);
    window.location.hash = '#/datastore';
    render(<App host={host} baseUrl={BASE} fetch={fakeFetch(apiRoutes()).fetch} />);
    expect(document.body.getAttribute('cds-theme')).toBe('dark');
    act(() => c.setTheme('light'));
    expect(document.body.getAttribute('cds-theme')).toBe('light');
    act(() => c.setTheme('DARK'));
    expect(document.body.getAttribute('cds-theme')).toBe('dark');
    act(() => c.setTheme('high-contrast-unknown'));
    expect(document.body.getAttribute('cds-theme')).toBe('light');
  });

  it('standalone, starts from the system preference and toggles, remembering the choice', async () => {
    const session = new MemoryStore();
    session.setItem('basil.apiToken', 'good');
    const prefs = new MemoryStore();
    const host = new StandaloneHost(session, prefs, true);
    render(<App host={host} baseUrl={BASE} fetch={fakeFetch(apiRoutes()).fetch} />);
    expect(document.body.getAttribute('cds-theme')).toBe('dark');
    fireEvent.click(await screen.findByTestId('theme-toggle'));
    expect(document.body.getAttribute('cds-theme')).toBe('light');
    expect(prefs.getItem('basil.theme')).toBe('light');
    expect(new StandaloneHost(new MemoryStore(), prefs, true).theme()).toBe('light');
  });
});

describe('standalone sign-in', () => {
  it('asks for a token, refuses a bad one, and shows the pods with a good one', async () => {
    const f = fakeFetch(
      apiRoutes({
        'GET /vcenters': (c: Call) =>
          c.headers.Authorization === 'Bearer good'
            ? { status: 200, body: fixture('vcenters.json') }
            : { status: 401, body: { error: 'unauthenticated', message: 'unknown or revoked token' } },
      }),
    );
    const session = new MemoryStore();
    render(<App host={new StandaloneHost(session, null, false)} baseUrl={BASE} fetch={f.fetch} />);
    fireEvent.change(screen.getByTestId('token-input'), { target: { value: 'bad' } });
    fireEvent.click(screen.getByTestId('token-submit'));
    expect((await screen.findByTestId('token-error')).textContent).toBe('unknown or revoked token');
    expect(session.getItem('basil.apiToken')).toBeNull();

    fireEvent.change(screen.getByTestId('token-input'), { target: { value: 'good' } });
    fireEvent.click(screen.getByTestId('token-submit'));
    const table = await screen.findByTestId(`datastores-${POD.name}`);
    expect(session.getItem('basil.apiToken')).toBe('good');
    const loads = within(table).getAllByTestId('normalized-load').map((e) => e.textContent);
    const expected = [...POD.datastores].sort((a, b) => (b.normalized_load ?? 0) - (a.normalized_load ?? 0));
    expect(loads).toEqual(expected.map((d) => compact(d.normalized_load)));
    expect(screen.getByTestId('imbalance').getAttribute('data-status')).toBe(imbalanceStatus(POD.imbalance, POD.threshold));
  });

  it('goes back to the token screen when the service stops accepting the token', async () => {
    const session = new MemoryStore();
    session.setItem('basil.apiToken', 'revoked');
    const f = fakeFetch({ 'GET /vcenters': () => ({ status: 401, body: { error: 'unauthenticated', message: 'token revoked' } }) });
    render(<App host={new StandaloneHost(session, null, false)} baseUrl={BASE} fetch={f.fetch} />);
    expect((await screen.findByTestId('token-error')).textContent).toBe('token revoked');
    expect(session.getItem('basil.apiToken')).toBeNull();
  });
});

describe('charts', () => {
  it('say why they are empty', () => {
    render(<LineChart title="N" series={[{ name: 'N', points: [] }]} emptyText="No model run in this time range yet" testId="c" />);
    const empty = screen.getByTestId('c');
    expect(empty.textContent).toBe('No model run in this time range yet');
    expect(empty.getAttribute('aria-label')).toBe('N: No model run in this time range yet');
  });
});

describe('datastore view', () => {
  async function renderDatastore(detail: DatastoreDetail) {
    const c = clientSdk([`urn:vmomi:Datastore:${DS.id}:${GUID}`]);
    window.location.hash = '#/datastore';
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={fakeFetch(apiRoutes({ [`GET /datastores/${DS.id}`]: detail })).fetch} />);
    return screen.findByTestId('load-chart');
  }

  it('says what N now is, and draws it against N at each model run', async () => {
    const chart = await renderDatastore(DS);
    const stat = screen.getByTestId('stat-N');
    expect(stat.textContent).toBe(`N now (current placement)${compact(DS.normalized_load)}`);
    expect(stat.getAttribute('title')).toMatch(/^N now = ΣL \/ P/);
    expect(within(chart).getByTestId('load-chart-reference').textContent).toBe(`N now ${compact(DS.normalized_load)}`);
    expect(screen.queryByTestId('n-now-note')).toBeNull(); // the recorded N now is the last run's
  });

  it('explains an N now that the model runs have not caught up with', async () => {
    const load = fixture<LoadPoint[]>('datastore_load.json');
    const last = load[load.length - 1].normalized_load as number;
    await renderDatastore({ ...DS, normalized_load: last / 4 });
    const note = await screen.findByTestId('n-now-note');
    expect(note.textContent).toContain(`N now (${compact(last / 4)}) differs from the last model run (${compact(last)}`);
    expect(note.textContent).toContain('a move just applied');
  });
});

describe('inside the vSphere Client', () => {
  it('shows the datastore of the context object, authenticated by the client session', async () => {
    const c = clientSdk([`urn:vmomi:Datastore:${DS.id}:${GUID}`]);
    const f = fakeFetch(apiRoutes());
    window.location.hash = '#/datastore';
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    expect((await screen.findByTestId('view-title')).textContent).toBe(DS.name);
    const call = f.calls.find((x) => x.path === `/datastores/${DS.id}`);
    expect(call?.headers['X-Basil-VC-Session']).toBe('vc-session-1');
    expect(call?.headers['X-Basil-VC-Server']).toBe('127.0.0.1:8989');
    expect(screen.queryByTestId('token-screen')).toBeNull();
  });

  it('reports the fields the client paths need', () => {
    expect(GUID).toMatch(/^[0-9a-f-]{36}$/);
    expect(STORAGE_POD).toMatch(/^group-p\d+$/);
  });

  it('finds the pod of a datastore cluster by its StoragePod id', async () => {
    const c = clientSdk([`urn:vmomi:StoragePod:${STORAGE_POD}:${GUID}`]);
    window.location.hash = '#/storagepod';
    const f = fakeFetch(apiRoutes());
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    expect((await screen.findByTestId('view-title')).textContent).toBe(POD.name);
    expect(f.calls.some((x) => x.path === `/pods/${POD.name}`)).toBe(true);
  });

  it('says when a datastore cluster is not a Basil pod', async () => {
    const c = clientSdk([`urn:vmomi:StoragePod:group-p999999:${GUID}`]);
    window.location.hash = '#/storagepod';
    const f = fakeFetch(apiRoutes());
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    await screen.findByTestId('not-a-pod');
  });

  it('opens another datastore in its own monitor tab through the client', async () => {
    const c = clientSdk([]);
    window.location.hash = '#/pods';
    const f = fakeFetch(apiRoutes());
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    const target = POD.datastores[POD.datastores.length - 1];
    fireEvent.click(await screen.findByRole('button', { name: target.name }));
    await waitFor(() => expect(c.navigations).toHaveLength(1));
    expect(c.navigations[0]).toEqual({
      targetViewId: 'basil.datastore.monitor',
      objectId: `urn:vmomi:Datastore:${target.id}:${GUID}`,
    });
  });
  it('opens a pod in its datastore cluster’s monitor tab through the client', async () => {
    const c = clientSdk([]);
    window.location.hash = '#/pods';
    const f = fakeFetch(apiRoutes());
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Open pod' }));
    await waitFor(() => expect(c.navigations).toHaveLength(1));
    expect(c.navigations[0]).toEqual({
      targetViewId: 'basil.storagepod.monitor',
      objectId: `urn:vmomi:StoragePod:${STORAGE_POD}:${GUID}`,
    });
    expect(window.location.hash).toBe('#/pods'); // the client navigates; the plugin's own route stays
  });

  it('opens a pod by name in the plugin when the service reports no datastore cluster for it', async () => {
    const c = clientSdk([]);
    window.location.hash = '#/pods';
    const f = fakeFetch(apiRoutes({ 'GET /pods': [{ ...POD, storage_pod: null }] }));
    render(<App host={await ClientHost.create(c.sdk)} baseUrl={BASE} fetch={f.fetch} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Open pod' }));
    await waitFor(() => expect(window.location.hash).toBe(`#/pod/${POD.name}`));
    expect(c.navigations).toHaveLength(0);
  });
});
