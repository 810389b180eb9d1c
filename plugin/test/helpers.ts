// Test helpers: a fetch that answers from the recorded API fixtures, and fixture loading.

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export function fixture<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(resolve(import.meta.dirname, 'fixtures', name), 'utf-8')) as T;
}

export interface Call {
  method: string;
  url: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

export type Responder = (call: Call) => { status: number; body?: unknown; text?: string } | undefined;

/** A fetch over a table of routes ("GET /pods" → fixture or function); records every call. */
export function fakeFetch(routes: Record<string, unknown | Responder>, base = 'https://basil.test/api/v1') {
  const calls: Call[] = [];
  const fetchImpl = async (input: string, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input);
    const method = (init.method ?? 'GET').toUpperCase();
    const path = url.pathname.replace(new URL(base).pathname, '') + url.search;
    const headers = { ...(init.headers as Record<string, string>) };
    const call: Call = { method, url: input, path, headers, body: init.body ? JSON.parse(String(init.body)) : undefined };
    calls.push(call);
    const key = `${method} ${url.pathname.replace(new URL(base).pathname, '')}`;
    const route = routes[key];
    let answer: { status: number; body?: unknown; text?: string } | undefined;
    if (typeof route === 'function') answer = (route as Responder)(call);
    else if (route !== undefined) answer = { status: 200, body: route };
    if (!answer) answer = { status: 404, body: { error: 'not_found', message: `no route ${key}` } };
    const text = answer.text ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
    // A 204 (a DELETE's answer) has no body at all, as the service sends it.
    return new Response(answer.status === 204 ? null : text, { status: answer.status, headers: { 'Content-Type': 'application/json' } });
  };
  return { fetch: fetchImpl, calls, base };
}

/** A Map-backed Storage for StandaloneHost. */
export class MemoryStore {
  readonly data = new Map<string, string>();
  getItem(k: string): string | null {
    return this.data.get(k) ?? null;
  }
  setItem(k: string, v: string): void {
    this.data.set(k, v);
  }
  removeItem(k: string): void {
    this.data.delete(k);
  }
}
