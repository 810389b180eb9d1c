// The plugin's shell: theme from the host, the token screen in standalone mode, the route from the URL
// hash, and in the vSphere Client the object the view was opened for.

import { useCallback, useEffect, useMemo, useState } from 'react';
import { ApiClient, ApiError, type Fetch } from '../api/client';
import type { PodSummary, VCenter } from '../api/types';
import { applyTheme, type Host, StandaloneHost, type ThemeName } from '../host/host';
import { podForStoragePod, resolveContextId, storagePodOf, urnFor } from '../host/resolve';
import { type GlobalTab, parseRoute, type Route, routeHash, VIEW_IDS } from '../host/routes';
import { AppContext, type AppContextValue, ClockContext, ErrorAlert, LoadGate, Tabs, useApp, useLoad } from './common';
import { AuditTab, HistoryTab, SchedulesTab } from './GlobalTabs';
import { DatastoreList, VmList } from './Lists';
import { PodsOverview } from './PodsOverview';
import { PoolsTab } from './PoolsEditor';
import { DatastoreView, PodView } from './StorageViews';
import { TokenScreen } from './TokenScreen';
import { VmView } from './VmView';

const GLOBAL_TABS: { id: GlobalTab; label: string }[] = [
  { id: 'pods', label: 'Pods' },
  { id: 'vms', label: 'VMs' },
  { id: 'datastores', label: 'Datastores' },
  { id: 'pools', label: 'Resource pools' },
  { id: 'schedules', label: 'Schedules' },
  { id: 'history', label: 'History' },
  { id: 'audit', label: 'Audit' },
];

function GlobalView({ tab }: { tab: GlobalTab }) {
  const { open } = useApp();
  return (
    <div data-testid="global-view">
      <Tabs tabs={GLOBAL_TABS} active={tab} onSelect={(t) => open(`#/${t}`)} />
      <div className="basil-tab-body">
        {tab === 'pods' && <PodsOverview />}
        {tab === 'vms' && <VmList />}
        {tab === 'datastores' && <DatastoreList />}
        {tab === 'pools' && <PoolsTab />}
        {tab === 'schedules' && <SchedulesTab />}
        {tab === 'history' && <HistoryTab />}
        {tab === 'audit' && <AuditTab />}
      </div>
    </div>
  );
}

/** An object view opened by the vSphere Client without an id in the URL: the id is its context object. */
function ContextView({ route }: { route: Route }) {
  const { api, host } = useApp();
  const ctx = host.contextObject();
  const vcenters = useLoad<VCenter[]>(() => api.vcenters(), 'vcenters');
  const needPods = route.view === 'pod';
  const pods = useLoad<PodSummary[]>(() => (needPods ? api.pods() : Promise.resolve([])), `ctx-pods:${needPods}`);
  if (!ctx) {
    return <ErrorAlert error={new ApiError(0, 'context', 'The vSphere Client gave this view no object to show.')} />;
  }
  return (
    <LoadGate loaded={vcenters}>
      {(vcs) => {
        const id = resolveContextId(ctx, vcs);
        if (route.view === 'datastore') return <DatastoreView id={id} />;
        if (route.view === 'vm') return <VmView id={id} />;
        if (!pods.data) return <LoadGate loaded={pods}>{() => null}</LoadGate>;
        const pod = podForStoragePod(id, pods.data);
        return pod ? (
          <PodView name={pod.name} />
        ) : (
          <p className="basil-muted" data-testid="not-a-pod">
            This datastore cluster is not one of Basil&apos;s pods. Add it under pods: in basil.yaml to balance it.
          </p>
        );
      }}
    </LoadGate>
  );
}

function RouteView({ route }: { route: Route }) {
  switch (route.view) {
    case 'datastore':
      return route.id ? <DatastoreView id={route.id} /> : <ContextView route={route} />;
    case 'vm':
      return route.id ? <VmView id={route.id} /> : <ContextView route={route} />;
    case 'pod':
      if (route.name) return <PodView name={route.name} />;
      return <ContextView route={route} />;
    default:
      return <GlobalView tab={route.tab} />;
  }
}

function useHashRoute(): Route {
  const [hash, setHash] = useState(() => window.location.hash);
  useEffect(() => {
    const on = () => setHash(window.location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return parseRoute(hash);
}

/** How often relative times ("5 min ago") are redrawn, and how often the service's clock is asked. */
const CLOCK_TICK_MS = 30_000;
const CLOCK_ASK_MS = 300_000;

/**
 * "Now" on the service's clock, for relative times: the service's own `now` from /health when it sends
 * one (the clock of its timestamps, vCenter's), else its Date header, else this browser's clock. The
 * function changes every tick, so that every relative time is redrawn.
 */
function useServerClock(api: ApiClient, signedIn: boolean): () => number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!signedIn) return undefined;
    const ask = () => {
      api
        .health()
        .then(() => setTick((t) => t + 1))
        .catch(() => undefined); // the Date headers of the other answers still set the clock
    };
    ask();
    const asking = setInterval(ask, CLOCK_ASK_MS);
    const ticking = setInterval(() => setTick((t) => t + 1), CLOCK_TICK_MS);
    return () => {
      clearInterval(asking);
      clearInterval(ticking);
    };
  }, [api, signedIn]);
  return useMemo(() => {
    void tick;
    return () => api.serverNow();
  }, [api, tick]);
}

function useTheme(host: Host): ThemeName {
  const [theme, setTheme] = useState<ThemeName>(host.theme());
  useEffect(() => {
    applyTheme(document, host.theme());
    return host.onThemeChange((t) => {
      applyTheme(document, t);
      setTheme(t);
    });
  }, [host]);
  return theme;
}

export interface AppProps {
  host: Host;
  baseUrl: string;
  fetch?: Fetch;
}

export function App({ host, baseUrl, fetch }: AppProps) {
  const theme = useTheme(host);
  const route = useHashRoute();
  const standalone = host instanceof StandaloneHost ? host : null;
  const [signedIn, setSignedIn] = useState(() => standalone === null || standalone.token() !== null);
  const [signInError, setSignInError] = useState<string | null>(null);

  const onUnauthorized = useCallback(
    (err: ApiError) => {
      if (!standalone) return;
      standalone.clearToken();
      setSignInError(err.message || 'The service no longer accepts this token.');
      setSignedIn(false);
    },
    [standalone],
  );
  const api = useMemo(
    () => new ApiClient({ baseUrl, credentials: host.credentials, fetch, onUnauthorized }),
    [baseUrl, host, fetch, onUnauthorized],
  );

  const vcenters = useLoad<VCenter[]>(() => (signedIn ? api.vcenters() : Promise.resolve([])), `app-vcenters:${signedIn}`);
  const now = useServerClock(api, signedIn);

  const ctx: AppContextValue = useMemo(() => {
    // Inside the vSphere Client an object opens in its own monitor tab, like any object link: a datastore
    // or VM by its id, a pod by its datastore cluster (the pod's storage_pod, asked of the service at the
    // click, so a link clicked before anything loaded still goes there), all with the vCenter's uuid.
    const clientUrn = async (target: Route): Promise<[string, string] | null> => {
      const [type, viewId] =
        target.view === 'datastore'
          ? ['Datastore', VIEW_IDS.datastore]
          : target.view === 'vm'
            ? ['VirtualMachine', VIEW_IDS.vm]
            : ['StoragePod', VIEW_IDS.storagePod];
      let id: string | null = null;
      if (target.view === 'datastore' || target.view === 'vm') id = target.id;
      else if (target.view === 'pod') id = target.name ? storagePodOf(target.name, await api.pods()) : target.storagePod;
      if (!id) return null;
      const vcs = vcenters.data ?? (await api.vcenters());
      const urn = urnFor(type, id, vcs, host.contextObject()?.serverGuid ?? null);
      return urn ? [viewId, urn] : null;
    };
    return {
      api,
      host,
      open(hash: string) {
        const target = parseRoute(hash);
        const inPlugin = () => {
          window.location.hash = routeHash(target);
        };
        if (host.mode !== 'client' || target.view === 'global') {
          inPlugin();
          return;
        }
        clientUrn(target)
          .then((found) => {
            if (!found || !host.navigateToObject(found[0], found[1])) inPlugin();
          })
          .catch(inPlugin); // the service did not answer: open the plugin's own view of the object
      },
    };
  }, [api, host, vcenters.data]);

  if (standalone && !signedIn) {
    return (
      <TokenScreen
        error={signInError}
        onToken={async (token) => {
          standalone.setToken(token);
          try {
            await new ApiClient({ baseUrl, credentials: host.credentials, fetch }).vcenters();
            setSignInError(null);
            setSignedIn(true);
          } catch (err) {
            standalone.clearToken();
            setSignInError(err instanceof ApiError ? err.describe() : String(err));
          }
        }}
      />
    );
  }

  return (
    <AppContext.Provider value={ctx}>
      <ClockContext.Provider value={now}>
      <div className={`basil-app basil-mode-${host.mode}`} data-theme={theme}>
        {standalone && (
          <header className="header header-6 basil-header">
            <div className="branding">
              <a href="#/pods" className="nav-link">
                <span className="basil-logo" aria-hidden="true" />
                <span className="title">Basil</span>
              </a>
            </div>
            <div className="header-nav">
              <a href="#/pods" className={`nav-link${route.view === 'global' ? ' active' : ''}`}>
                <span className="nav-text">Storage balancing</span>
              </a>
            </div>
            <div className="header-actions">
              <button
                type="button"
                className="btn btn-sm btn-link basil-header-btn"
                data-testid="theme-toggle"
                onClick={() => standalone.setTheme(theme === 'dark' ? 'light' : 'dark')}
              >
                {theme === 'dark' ? 'Light theme' : 'Dark theme'}
              </button>
              <button
                type="button"
                className="btn btn-sm btn-link basil-header-btn"
                data-testid="sign-out"
                onClick={() => {
                  standalone.clearToken();
                  setSignInError(null);
                  setSignedIn(false);
                }}
              >
                Sign out
              </button>
            </div>
          </header>
        )}
        <main className="basil-content">
          <RouteView route={route} />
        </main>
      </div>
      </ClockContext.Provider>
    </AppContext.Provider>
  );
}
