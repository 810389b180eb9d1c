// The plugin's views are addressed by the URL hash, so that plugin.json can point the vSphere Client at
// each of them (client.html#/datastore) and the standalone mode can link between them.

export type GlobalTab = 'pods' | 'vms' | 'datastores' | 'pools' | 'schedules' | 'history' | 'audit';

export type Route =
  | { view: 'global'; tab: GlobalTab }
  | { view: 'datastore'; id: string | null }
  | { view: 'pod'; name: string | null; storagePod: string | null }
  | { view: 'vm'; id: string | null };

const TABS: GlobalTab[] = ['pods', 'vms', 'datastores', 'pools', 'schedules', 'history', 'audit'];

function decode(s: string | undefined): string | null {
  if (s === undefined || s === '') return null;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/^\/+/, '');
  const [head, ...rest] = path.split('/');
  const arg = decode(rest.join('/'));
  switch (head) {
    case 'datastore':
      return { view: 'datastore', id: arg };
    case 'storagepod':
      return { view: 'pod', name: null, storagePod: arg };
    case 'pod':
      return { view: 'pod', name: arg, storagePod: null };
    case 'vm':
      return { view: 'vm', id: arg };
    default: {
      const tab = (TABS as string[]).includes(head) ? (head as GlobalTab) : 'pods';
      return { view: 'global', tab };
    }
  }
}

export function routeHash(route: Route): string {
  const enc = (s: string) => encodeURIComponent(s);
  switch (route.view) {
    case 'datastore':
      return route.id ? `#/datastore/${enc(route.id)}` : '#/datastore';
    case 'pod':
      if (route.name) return `#/pod/${enc(route.name)}`;
      return route.storagePod ? `#/storagepod/${enc(route.storagePod)}` : '#/storagepod';
    case 'vm':
      return route.id ? `#/vm/${enc(route.id)}` : '#/vm';
    default:
      return `#/${route.tab}`;
  }
}

/** The navigationIds of plugin.json's views, for htmlClientSdk.app.navigateTo. */
export const VIEW_IDS = {
  global: 'basil.global',
  datastore: 'basil.datastore.monitor',
  storagePod: 'basil.storagepod.monitor',
  vm: 'basil.vm.monitor',
} as const;
