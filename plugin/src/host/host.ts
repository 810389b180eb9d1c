// Where the plugin runs, behind one interface: inside the vSphere Client (htmlClientSdk gives the
// object, the session and the theme) or standalone against the service (an API token typed in once and
// kept in sessionStorage, a theme of the user's choosing).

import type { Credentials } from '../api/client';
import { type ContextObject, parseContextId } from './contextObject';

export type ThemeName = 'light' | 'dark';
export type Mode = 'client' | 'standalone';

/** The part of the vSphere Client's JavaScript API (htmlClientSdk) the plugin uses. */
export interface HtmlClientSdk {
  initialize(callback: () => void): void;
  isInitialized?(): boolean;
  app: {
    getContextObjects(): { id: string }[];
    getSessionInfo(callback: (info: { sessionToken: string }) => void): void;
    getApiEndpoints?(): { uiApiEndpoint: { fullUrl: string } };
    getTheme?(): { name: string };
    getClientLocale?(): string;
    navigateTo(options: { targetViewId: string; objectId?: string; customData?: unknown }): void;
    getNavigationData?(): unknown;
  };
  event?: {
    onThemeChanged?(callback: (theme: { name: string }) => void): void;
  };
}

export interface Host {
  readonly mode: Mode;
  readonly credentials: Credentials;
  /** The object an object view shows (in the client), or null. */
  contextObject(): ContextObject | null;
  /** The vCenter host[:port] the vSphere Client talks to (in the client), or null. */
  vcServer(): string | null;
  theme(): ThemeName;
  /** Calls back with every theme change; returns the unsubscribe function. */
  onThemeChange(callback: (theme: ThemeName) => void): () => void;
  /** Opens a plugin view of another object in the vSphere Client; false when the host cannot. */
  navigateToObject(viewId: string, objectUrn: string): boolean;
}

export function themeName(value: unknown): ThemeName {
  return typeof value === 'string' && value.toLowerCase() === 'dark' ? 'dark' : 'light';
}

class Listeners<T> {
  private readonly callbacks = new Set<(value: T) => void>();
  add(callback: (value: T) => void): () => void {
    this.callbacks.add(callback);
    return () => this.callbacks.delete(callback);
  }
  emit(value: T): void {
    for (const cb of [...this.callbacks]) cb(value);
  }
}

// --- inside the vSphere Client ------------------------------------------------------------------------

export class ClientHost implements Host {
  readonly mode = 'client' as const;
  readonly credentials: Credentials;
  private current: ThemeName;
  private readonly listeners = new Listeners<ThemeName>();

  constructor(private readonly sdk: HtmlClientSdk) {
    this.current = themeName(sdk.app.getTheme?.().name);
    sdk.event?.onThemeChanged?.((theme) => {
      this.current = themeName(theme?.name);
      this.listeners.emit(this.current);
    });
    this.credentials = { headers: () => this.sessionHeaders() };
  }

  /** Initializes the SDK (required before any other call) and resolves with the host. */
  static create(sdk: HtmlClientSdk): Promise<ClientHost> {
    return new Promise((resolve) => sdk.initialize(() => resolve(new ClientHost(sdk))));
  }

  private sessionHeaders(): Promise<Record<string, string>> {
    // The token is asked for on every request: the vSphere Client renews its session on its own.
    return new Promise((resolve, reject) => {
      try {
        this.sdk.app.getSessionInfo((info) => {
          const headers: Record<string, string> = { 'X-Basil-VC-Session': info?.sessionToken ?? '' };
          const server = this.vcServer();
          if (server) headers['X-Basil-VC-Server'] = server;
          resolve(headers);
        });
      } catch (err) {
        reject(err);
      }
    });
  }

  contextObject(): ContextObject | null {
    const objects = this.sdk.app.getContextObjects() ?? [];
    for (const o of objects) {
      const parsed = o && typeof o.id === 'string' ? parseContextId(o.id) : null;
      if (parsed) return parsed;
    }
    return null;
  }

  vcServer(): string | null {
    const url = this.sdk.app.getApiEndpoints?.()?.uiApiEndpoint?.fullUrl;
    if (!url) return null;
    try {
      return new URL(url).host;
    } catch {
      return null;
    }
  }

  theme(): ThemeName {
    return this.current;
  }

  onThemeChange(callback: (theme: ThemeName) => void): () => void {
    return this.listeners.add(callback);
  }

  navigateToObject(viewId: string, objectUrn: string): boolean {
    this.sdk.app.navigateTo({ targetViewId: viewId, objectId: objectUrn });
    return true;
  }
}

// --- standalone ---------------------------------------------------------------------------------------

export const TOKEN_KEY = 'basil.apiToken';
export const THEME_KEY = 'basil.theme';

/** A Storage-like store (sessionStorage in the browser, a Map in tests). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export class StandaloneHost implements Host {
  readonly mode = 'standalone' as const;
  readonly credentials: Credentials;
  private current: ThemeName;
  private readonly listeners = new Listeners<ThemeName>();

  /**
   * @param session where the API token lives: sessionStorage only, so it dies with the tab.
   * @param prefs where the theme choice lives (not a secret).
   */
  constructor(
    private readonly session: KeyValueStore,
    private readonly prefs: KeyValueStore | null,
    prefersDark: boolean,
  ) {
    const saved = prefs?.getItem(THEME_KEY);
    this.current = saved ? themeName(saved) : prefersDark ? 'dark' : 'light';
    this.credentials = {
      headers: async (): Promise<Record<string, string>> => {
        const token = this.token();
        return token ? { Authorization: `Bearer ${token}` } : {};
      },
    };
  }

  token(): string | null {
    const t = this.session.getItem(TOKEN_KEY);
    return t && t.trim() !== '' ? t : null;
  }

  setToken(token: string): void {
    this.session.setItem(TOKEN_KEY, token.trim());
  }

  clearToken(): void {
    this.session.removeItem(TOKEN_KEY);
  }

  contextObject(): ContextObject | null {
    return null;
  }

  vcServer(): string | null {
    return null;
  }

  theme(): ThemeName {
    return this.current;
  }

  setTheme(theme: ThemeName): void {
    this.current = theme;
    this.prefs?.setItem(THEME_KEY, theme);
    this.listeners.emit(theme);
  }

  onThemeChange(callback: (theme: ThemeName) => void): () => void {
    return this.listeners.add(callback);
  }

  navigateToObject(): boolean {
    return false;
  }
}

/** Applies a theme to the page the way Clarity expects it: the cds-theme attribute on body. */
export function applyTheme(doc: Document, theme: ThemeName): void {
  doc.body.setAttribute('cds-theme', theme);
  doc.documentElement.setAttribute('data-theme', theme);
  doc.documentElement.style.colorScheme = theme;
}
