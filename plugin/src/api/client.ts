// The one door from the plugin to Basil's REST API: adds the credentials of the mode the plugin runs
// in, and turns every failure (HTTP error, unreadable body, network) into one ApiError type.

import type {
  AuditEntry,
  DatastoreDetail,
  DatastoreItem,
  DiskItem,
  DiskModelSeries,
  Entitlements,
  ErrorBody,
  Health,
  Job,
  JobRun,
  ListPage,
  ListQuery,
  LoadPoint,
  Me,
  ModelPoint,
  Plan,
  PodDetail,
  PodHistory,
  PodSummary,
  PredictionCheck,
  PoolTreeDoc,
  Problem,
  Recommendation,
  Schedules,
  SloHistory,
  VCenter,
  VmDetail,
  VmItem,
  VmReservation,
  VmTraceUpload,
  WhatIfAnswer,
} from './types';
import { type AuditFilter, auditQuery } from '../shape/audit';
import type { WindowChange } from '../shape/schedules';

/** Supplies the headers that authenticate a request (an API token, or the vSphere Client session). */
export interface Credentials {
  headers(): Promise<Record<string, string>>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problems: Problem[];

  constructor(status: number, code: string, message: string, problems: Problem[] = []) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.problems = problems;
  }

  /** One line for an alert: the service's message, with the problem count when there are several. */
  describe(): string {
    if (this.status === 0) return `Cannot reach the Basil service: ${this.message}`;
    return this.message || `${this.status} ${this.code}`;
  }
}

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

export interface ApiClientOptions {
  baseUrl: string;
  credentials: Credentials;
  fetch?: Fetch;
  /** Called on every 401, before the error is thrown (the standalone mode asks for a new token). */
  onUnauthorized?: (err: ApiError) => void;
}

function isErrorBody(value: unknown): value is ErrorBody {
  return typeof value === 'object' && value !== null && typeof (value as ErrorBody).error === 'string';
}

/** The API base URL for a page served at <base>/plugin/<page>: <base>/api/v1, relative to the page. */
export function apiBaseFor(pageUrl: string): string {
  return new URL('../api/v1', pageUrl).toString();
}

export function encodeId(id: string): string {
  return encodeURIComponent(id);
}

/**
 * The service's "now" on the clock of its timestamps, from /health: its own `now` if it gives one, else
 * the first vCenter's `now` (each vCenter's clock, on which its samples and Basil's times are shown);
 * null when the service reports none.
 */
export function serviceNow(h: Health | null | undefined): number | null {
  const candidates = [h?.now, ...(h?.vcenters ?? []).map((v) => v.now)];
  for (const t of candidates) {
    const v = typeof t === 'string' ? Date.parse(t) : Number.NaN;
    if (!Number.isNaN(v)) return v;
  }
  return null;
}

const LIST_PARAMS = ['pod', 'datastore', 'vm', 'q', 'tag', 'sort', 'limit', 'cursor'] as const;

/** The query string of a list request (`?q=db&sort=-name&limit=50`), empty values left out. */
export function listQuery(query: ListQuery): string {
  const q = new URLSearchParams();
  for (const key of LIST_PARAMS) {
    const v = query[key];
    if (v === undefined || v === null || v === '') continue;
    q.set(key, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export class ApiClient {
  private readonly baseUrl: string;
  private readonly credentials: Credentials;
  private readonly fetchImpl: Fetch;
  private readonly onUnauthorized?: (err: ApiError) => void;

  constructor(options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.credentials = options.credentials;
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.onUnauthorized = options.onUnauthorized;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...(await this.credentials.headers()),
    };
    const init: RequestInit = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, init);
    } catch (err) {
      throw new ApiError(0, 'network', err instanceof Error ? err.message : String(err));
    }
    const date = response.headers.get('Date');
    const at = date ? Date.parse(date) : Number.NaN;
    if (!Number.isNaN(at)) this.serverClockOffsetMs = at - Date.now();
    const text = await response.text();
    let parsed: unknown = undefined;
    if (text.trim() !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (response.ok) {
          throw new ApiError(response.status, 'bad_response', `${method} ${path}: the response is not JSON`);
        }
      }
    }
    if (!response.ok) {
      const err = isErrorBody(parsed)
        ? new ApiError(response.status, parsed.error, parsed.message ?? '', parsed.problems ?? [])
        : new ApiError(
            response.status,
            `http_${response.status}`,
            `${method} ${path} failed: ${response.status} ${response.statusText}`.trim(),
          );
      if (response.status === 401) this.onUnauthorized?.(err);
      throw err;
    }
    return parsed as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  /** The offset of the service's clock from this browser's, in ms, from the newest answer's Date header
   * (null before the first answer that had one). */
  serverClockOffsetMs: number | null = null;
  /** The offset of the clock the service's timestamps are on (vCenter's) from this browser's, from the
   * `now` that /health reports when the service sends one (null until then). */
  dataClockOffsetMs: number | null = null;

  /** "Now" on the clock of the times the service sends: its own `now` where /health gives one, else
   * the service's Date header, else this browser's clock. */
  serverNow(): number {
    return Date.now() + (this.dataClockOffsetMs ?? this.serverClockOffsetMs ?? 0);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  // --- the resources of API-CONTRACT.md ------------------------------------------------------------

  async health(): Promise<Health> {
    const h = await this.get<Health>('/health');
    const now = serviceNow(h);
    if (now !== null) this.dataClockOffsetMs = now - Date.now();
    return h;
  }
  vcenters(): Promise<VCenter[]> {
    return this.get('/vcenters');
  }
  pods(): Promise<PodSummary[]> {
    return this.get('/pods');
  }
  pod(name: string): Promise<PodDetail> {
    return this.get(`/pods/${encodeId(name)}`);
  }
  podHistory(name: string, hours: number): Promise<PodHistory> {
    return this.get(`/pods/${encodeId(name)}/history?hours=${hours}`);
  }
  datastore(id: string): Promise<DatastoreDetail> {
    return this.get(`/datastores/${encodeId(id)}`);
  }
  datastorePoints(id: string, hours: number): Promise<ModelPoint[]> {
    return this.get(`/datastores/${encodeId(id)}/model/points?hours=${hours}`);
  }
  datastoreLoad(id: string, hours: number): Promise<LoadPoint[]> {
    return this.get(`/datastores/${encodeId(id)}/load?hours=${hours}`);
  }
  /** One page of datastores, filtered and sorted by the service. */
  datastores(query: ListQuery = {}): Promise<ListPage<DatastoreItem>> {
    return this.get(`/datastores${listQuery(query)}`);
  }
  /** One page of VMs. */
  vms(query: ListQuery = {}): Promise<ListPage<VmItem>> {
    return this.get(`/vms${listQuery(query)}`);
  }
  /** One page of virtual disks. */
  disks(query: ListQuery = {}): Promise<ListPage<DiskItem>> {
    return this.get(`/disks${listQuery(query)}`);
  }
  /** Every disk on a datastore predicted once `disks` (disk ids) moved there; changes nothing. */
  datastoreWhatif(id: string, disks: string[]): Promise<WhatIfAnswer> {
    return this.post(`/datastores/${encodeId(id)}/whatif`, { disks });
  }
  vm(id: string): Promise<VmDetail> {
    return this.get(`/vms/${encodeId(id)}`);
  }
  /** The SRP reservation the VM's uploaded request trace needs, beside its pool settings. */
  vmReservation(id: string): Promise<VmReservation> {
    return this.get(`/vms/${encodeId(id)}/reservation`);
  }
  /** Plan a request trace of the VM for a target; the service keeps the answer (not the trace). */
  uploadVmTrace(id: string, upload: VmTraceUpload): Promise<VmReservation> {
    return this.request('PUT', `/vms/${encodeId(id)}/trace`, upload);
  }
  deleteVmTrace(id: string): Promise<void> {
    return this.request('DELETE', `/vms/${encodeId(id)}/trace`);
  }
  diskModel(id: string, hours: number): Promise<DiskModelSeries> {
    return this.get(`/disks/${encodeId(id)}/model?hours=${hours}`);
  }
  /** The latest recommendation of a pod, or null when it has none yet (404). */
  async latestRecommendation(pod: string): Promise<Recommendation | null> {
    try {
      return await this.get<Recommendation | null>(`/pods/${encodeId(pod)}/recommendations`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.code !== 'pod_not_found') return null;
      throw err;
    }
  }
  /** Each applied plan's prediction against what was measured an hour later, newest first. */
  predictions(pod: string): Promise<PredictionCheck[]> {
    return this.get<PredictionCheck[]>(`/pods/${encodeId(pod)}/predictions`);
  }
  /** The pod's SLO series (goal slo): per round each group's DRT, measured and predicted RT, damage. */
  sloHistory(pod: string, since?: string): Promise<SloHistory> {
    const query = since ? `?since=${encodeURIComponent(since)}` : '';
    return this.get<SloHistory>(`/pods/${encodeId(pod)}/slo/history${query}`);
  }
  recommendNow(pod: string): Promise<Recommendation> {
    return this.post(`/pods/${encodeId(pod)}/recommendations`);
  }
  createPlan(recommendationId: string | number): Promise<Plan> {
    return this.post('/plans', { recommendation_id: recommendationId });
  }
  plans(filter: { state?: string; pod?: string } = {}): Promise<Plan[]> {
    const q = new URLSearchParams();
    if (filter.state) q.set('state', filter.state);
    if (filter.pod) q.set('pod', filter.pod);
    const qs = q.toString();
    return this.get(`/plans${qs ? `?${qs}` : ''}`);
  }
  plan(id: string | number): Promise<Plan> {
    return this.get(`/plans/${encodeId(String(id))}`);
  }
  approvePlan(id: string | number): Promise<Plan> {
    return this.post(`/plans/${encodeId(String(id))}/approve`);
  }
  applyPlan(id: string | number): Promise<Plan> {
    return this.post(`/plans/${encodeId(String(id))}/apply`);
  }
  cancelPlan(id: string | number): Promise<Plan> {
    return this.post(`/plans/${encodeId(String(id))}/cancel`);
  }
  pools(): Promise<PoolTreeDoc[]> {
    return this.get('/pools');
  }
  pool(name: string): Promise<PoolTreeDoc> {
    return this.get(`/pools/${encodeId(name)}`);
  }
  createPool(doc: PoolTreeDoc): Promise<PoolTreeDoc> {
    return this.post('/pools', doc);
  }
  replacePool(doc: PoolTreeDoc): Promise<PoolTreeDoc> {
    return this.request('PUT', `/pools/${encodeId(doc.name)}`, doc);
  }
  deletePool(name: string): Promise<void> {
    return this.request('DELETE', `/pools/${encodeId(name)}`);
  }
  /** Problems of a pool tree without saving it; an empty list when it is valid. */
  async validatePool(doc: PoolTreeDoc): Promise<Problem[]> {
    try {
      const result = await this.post<{ valid?: boolean; problems?: Problem[] } | null>('/pools/validate', doc);
      return result?.problems ?? [];
    } catch (err) {
      if (err instanceof ApiError && err.status === 400 && err.problems.length > 0) return err.problems;
      throw err;
    }
  }
  entitlements(name: string): Promise<Entitlements> {
    return this.get(`/pools/${encodeId(name)}/entitlements`);
  }
  schedules(): Promise<Schedules> {
    return this.get('/schedules');
  }
  jobs(): Promise<Job[]> {
    return this.get('/jobs');
  }
  me(): Promise<Me> {
    return this.get('/me');
  }
  /** Changes the rebalance window (admin): only the fields given; answers the schedules after it. */
  setRebalanceWindow(change: WindowChange): Promise<Schedules> {
    return this.request('PUT', '/schedules/rebalance', change);
  }
  /** Goes back to the window configured in basil.yaml (admin): Basil forgets the changes it kept. */
  resetRebalanceWindow(): Promise<Schedules> {
    return this.request('DELETE', '/schedules/rebalance');
  }
  /** Asks the service's scheduler to run a job now (admin): 202 with the run, still `running`; 409 when
   * the job is running already. */
  runJob(id: string): Promise<JobRun> {
    return this.post(`/jobs/${encodeId(id)}/run`);
  }
  /** A job's latest runs, newest first. */
  jobRuns(id: string, limit = 20): Promise<JobRun[]> {
    return this.get(`/jobs/${encodeId(id)}/runs?limit=${limit}`);
  }
  /** One run of a job, to follow it until it ends. */
  jobRun(id: string, run: number): Promise<JobRun> {
    return this.get(`/jobs/${encodeId(id)}/runs/${run}`);
  }
  /** One page of the audit log, newest first: older than `before`, filtered by actor and action. */
  async audit(limit = 100, before?: string | null, filter: AuditFilter = { actor: '', action: '' }): Promise<AuditEntry[]> {
    const body = await this.get<AuditEntry[] | { entries: AuditEntry[] }>(`/audit?${auditQuery(filter, limit, before)}`);
    return Array.isArray(body) ? body : body.entries;
  }
}
