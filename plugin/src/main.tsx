// Starts the plugin: inside the vSphere Client when its htmlClientSdk is on the page (client.html
// loads it), otherwise standalone against the service that served the page.

import '@clr/ui/clr-ui.min.css';
import './styles.css';
import { createRoot } from 'react-dom/client';
import { apiBaseFor } from './api/client';
import { ClientHost, type Host, type HtmlClientSdk, StandaloneHost } from './host/host';
import { App } from './views/App';

async function createHost(): Promise<Host> {
  const sdk = (window as unknown as { htmlClientSdk?: HtmlClientSdk }).htmlClientSdk;
  if (sdk) return ClientHost.create(sdk);
  const prefersDark = typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;
  return new StandaloneHost(window.sessionStorage, window.localStorage, prefersDark);
}

const rootElement = document.getElementById('root');
if (rootElement) {
  const root = createRoot(rootElement);
  void createHost().then((host) => root.render(<App host={host} baseUrl={apiBaseFor(window.location.href)} />));
}
