import { describe, expect, it, vi } from 'vitest';
import { ApiClient, ApiError, apiBaseFor } from '../src/api/client';
import type { PoolTreeDoc, Problem } from '../src/api/types';
import { ClientHost, type HtmlClientSdk, StandaloneHost } from '../src/host/host';
import { type Call, fakeFetch, fixture, MemoryStore } from './helpers';

const token = { headers: async () => ({ Authorization: 'Bearer t0k3n' }) };

describe('apiBaseFor', () => {
  it('puts the API beside the plugin directory, so a proxy prefix is kept', () => {
    expect(apiBaseFor('https://basil.example:8443/plugin/index.html#/pods')).toBe('https://basil.example:8443/api/v1');
    expect(apiBaseFor('https://vc.example/plugins/abc/def/plugin/client.html')).toBe('https://vc.example/plugins/abc/def/api/v1');
  });
});

describe('ApiClient', () => {
  it('sends the credentials and JSON headers, and parses the answer', async () => {
    const f = fakeFetch({ 'GET /pods': fixture('pods.json') });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    const pods = await api.pods();
    expect(pods[0].name).toBe(fixture<{ name: string }[]>('pods.json')[0].name);
    expect(f.calls[0].headers.Authorization).toBe('Bearer t0k3n');
    expect(f.calls[0].headers.Accept).toBe('application/json');
    expect(f.calls[0].headers['Content-Type']).toBeUndefined();
  });

  it('encodes disk ids with colons in the path', async () => {
    const disk = fixture<{ disk: string }>('disk_model.json').disk; // vm-NN:scsi0:1
    const f = fakeFetch({ [`GET /disks/${encodeURIComponent(disk)}/model`]: fixture('disk_model.json') });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    const m = await api.diskModel(disk, 6);
    expect(m.disk).toBe(disk);
    expect(f.calls[0].path).toBe(`/disks/${disk.replaceAll(':', '%3A')}/model?hours=6`);
  });

  it('posts JSON bodies', async () => {
    const f = fakeFetch({ 'POST /plans': fixture('plan_proposed.json') });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    await api.createPlan(12);
    expect(f.calls[0].body).toEqual({ recommendation_id: 12 });
    expect(f.calls[0].headers['Content-Type']).toBe('application/json');
  });

  it('turns an error body into an ApiError with code, message and every problem', async () => {
    const { problems } = fixture<{ problems: Problem[] }>('pool_problems.json');
    const body = { error: 'invalid', message: `pool tree: ${problems.length} problems`, problems };
    const f = fakeFetch({ 'POST /pools': () => ({ status: 400, body }) });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    const err = await api.createPool(fixture<PoolTreeDoc[]>('pools.json')[0]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    const e = err as ApiError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid');
    expect(e.problems).toEqual(problems);
    expect(e.problems.length).toBeGreaterThan(2);
  });

  it('reports a non-JSON error page by its status', async () => {
    const f = fakeFetch({ 'GET /pods': () => ({ status: 502, text: '<html>Bad gateway</html>' }) });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    const e = (await api.pods().catch((x: unknown) => x)) as ApiError;
    expect(e.status).toBe(502);
    expect(e.code).toBe('http_502');
    expect(e.describe()).toContain('502');
  });

  it('refuses a successful answer that is not JSON', async () => {
    const f = fakeFetch({ 'GET /pods': () => ({ status: 200, text: 'not json' }) });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    const e = (await api.pods().catch((x: unknown) => x)) as ApiError;
    expect(e.code).toBe('bad_response');
  });

  it('reports a network failure as status 0 with a readable message', async () => {
    const api = new ApiClient({
      baseUrl: 'https://basil.test/api/v1',
      credentials: token,
      fetch: async () => {
        throw new TypeError('Failed to fetch');
      },
    });
    const e = (await api.pods().catch((x: unknown) => x)) as ApiError;
    expect(e.status).toBe(0);
    expect(e.describe()).toBe('Cannot reach the Basil service: Failed to fetch');
  });

  it('calls onUnauthorized on 401 and still throws', async () => {
    const f = fakeFetch({ 'GET /pods': () => ({ status: 401, body: { error: 'unauthenticated', message: 'token revoked' } }) });
    const seen = vi.fn();
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch, onUnauthorized: seen });
    await expect(api.pods()).rejects.toMatchObject({ status: 401, message: 'token revoked' });
    expect(seen).toHaveBeenCalledOnce();
  });

  it('does not call onUnauthorized for 403', async () => {
    const f = fakeFetch({ 'POST /plans/5/apply': () => ({ status: 403, body: { error: 'forbidden', message: 'operator role required' } }) });
    const seen = vi.fn();
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch, onUnauthorized: seen });
    await expect(api.applyPlan(5)).rejects.toMatchObject({ status: 403 });
    expect(seen).not.toHaveBeenCalled();
  });

  it('reads a missing recommendation (404) as none, but not a missing pod', async () => {
    const f = fakeFetch({
      'GET /pods/basil-pod/recommendations': () => ({ status: 404, body: { error: 'not_found', message: 'no recommendation yet' } }),
      'GET /pods/nope/recommendations': () => ({ status: 404, body: { error: 'pod_not_found', message: 'no pod nope' } }),
    });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    expect(await api.latestRecommendation('basil-pod')).toBeNull();
    await expect(api.latestRecommendation('nope')).rejects.toMatchObject({ code: 'pod_not_found' });
  });

  it('returns validation problems from a 400 and from a 200 with problems, none when valid', async () => {
    const problems = fixture<{ problems: Problem[] }>('pool_problems.json').problems;
    const doc = fixture<PoolTreeDoc[]>('pools.json')[0];
    for (const answer of [
      { status: 400, body: { error: 'invalid', message: 'invalid pool tree', problems } },
      { status: 200, body: fixture('pool_problems.json') },
    ]) {
      const f = fakeFetch({ 'POST /pools/validate': () => answer });
      const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
      expect(await api.validatePool(doc)).toEqual(problems);
    }
    const ok = fakeFetch({ 'POST /pools/validate': () => ({ status: 200, body: { valid: true, problems: [] } }) });
    expect(await new ApiClient({ baseUrl: ok.base, credentials: token, fetch: ok.fetch }).validatePool(doc)).toEqual([]);
  });

  it('replaces a pool with PUT and its version for optimistic concurrency', async () => {
    const tree = fixture<PoolTreeDoc[]>('pools.json')[0];
    const f = fakeFetch({
      [`PUT /pools/${tree.name}`]: (c: Call) => ({
        status: 409,
        body: { error: 'conflict', message: `version ${(c.body as PoolTreeDoc).version} is stale` },
      }),
    });
    const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
    await expect(api.replacePool(tree)).rejects.toMatchObject({ status: 409, message: `version ${tree.version} is stale` });
  });

  it('accepts the audit log as a list or as {entries}', async () => {
    const entries = fixture<unknown[]>('audit.json');
    for (const body of [entries, { entries }]) {
      const f = fakeFetch({ 'GET /audit': body });
      const api = new ApiClient({ baseUrl: f.base, credentials: token, fetch: f.fetch });
      expect(await api.audit(10, '2026-11-22T09:00:00Z')).toHaveLength((entries as unknown[]).length);
      expect(f.calls[0].path).toBe('/audit?limit=10&before=2026-11-22T09%3A00%3A00Z');
    }
  });
});

function sdkStub(token: string, theme = 'light'): HtmlClientSdk & { fireTheme(name: string): void } {
  let themeCb: ((t: { name: string }) => void) | null = null;
  return {
    initialize: (cb) => setTimeout(cb, 0),
    app: {
      getContextObjects: () => [{ id: 'urn:vmomi:Datastore:datastore-101:5f2c3c1e-1111-4a4a-9e9e-000000000001' }],
      getSessionInfo: (cb) => setTimeout(() => cb({ sessionToken: token }), 0),
      getApiEndpoints: () => ({ uiApiEndpoint: { fullUrl: 'https://vc.lab:9443/api/ui' } }),
      getTheme: () => ({ name: theme }),
      navigateTo: () => undefined,
    },
    event: { onThemeChanged: (cb) => (themeCb = cb) },
    fireTheme(name: string) {
      themeCb?.({ name });
    },
  };
}

describe('credentials of the two modes', () => {
  it('in the vSphere Client, forwards the session token and the vCenter address', async () => {
    const host = await ClientHost.create(sdkStub('session-123'));
    const f = fakeFetch({ 'GET /vcenters': fixture('vcenters.json') });
    const api = new ApiClient({ baseUrl: f.base, credentials: host.credentials, fetch: f.fetch });
    await api.vcenters();
    expect(f.calls[0].headers['X-Basil-VC-Session']).toBe('session-123');
    expect(f.calls[0].headers['X-Basil-VC-Server']).toBe('vc.lab:9443');
    expect(f.calls[0].headers.Authorization).toBeUndefined();
  });

  it('standalone, sends the token from session storage, and nothing without one', async () => {
    const session = new MemoryStore();
    const prefs = new MemoryStore();
    const host = new StandaloneHost(session, prefs, false);
    expect(await host.credentials.headers()).toEqual({});
    host.setToken('  abc  ');
    expect(await host.credentials.headers()).toEqual({ Authorization: 'Bearer abc' });
    expect(session.getItem('basil.apiToken')).toBe('abc');
    expect([...prefs.data.values()]).not.toContain('abc');
    host.clearToken();
    expect(host.token()).toBeNull();
  });
});
