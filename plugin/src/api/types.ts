// The shapes of Basil's REST API v1 (API-CONTRACT.md) as the plugin reads them. Fields the contract
// leaves open are optional here, and every view copes with their absence.

export type Role = 'viewer' | 'operator' | 'admin';

export interface Problem {
  field: string;
  message: string;
}

export interface ErrorBody {
  error: string;
  message: string;
  problems?: Problem[];
}

export interface Health {
  status: string;
  version: string;
  scheduler?: string;
  store?: string;
  vcenters: { name: string; connected: boolean; last_collection: string | null }[];
}

export interface VCenter {
  name: string;
  server?: string;
  connected: boolean;
  instance_uuid?: string | null;
  last_collection?: string | null;
}

export interface DatastoreSummary {
  id: string;
  name: string;
  pod: string | null;
  capacity_gb: number;
  free_gb: number;
  maintenance: boolean;
  accessible: boolean;
  P: number | null;
  model_status: string;
  load_sum_L: number | null;
  normalized_load: number | null;
  latency_ms: number | null;
  read_iops: number | null;
  write_iops: number | null;
  iops: number | null;
}

export interface Move {
  id?: string | number;
  disk: string;
  vm: string;
  vm_id: string;
  from: string;
  to: string;
  size_gb: number;
  reason_code: string;
  reason: string;
  from_N_before: number;
  from_N_after: number;
  to_N_before: number;
  to_N_after: number;
  imbalance_before: number;
  imbalance_after: number;
  state?: string;
  progress?: number | null;
  task?: string | null;
  message?: string | null;
  finished_at?: string | null;
}

export interface PodSummary {
  name: string;
  vcenter: string;
  mode: string;
  imbalance: number | null;
  threshold: number;
  datastores: DatastoreSummary[];
  pending_moves: number | Move[];
  last_recommendation: string | null | { id: string | number; created_at: string };
  storage_pod?: string | null;
}

export interface PodDetail extends PodSummary {
  recent_moves?: Move[];
}

export interface TimePoint {
  t: string;
  value: number;
}

export interface PodHistory {
  pod: string;
  imbalance: TimePoint[];
  datastores: { id: string; name: string; points: { t: string; N: number }[] }[];
}

export interface DeviceModel {
  status: string;
  P: number | null;
  slope_ms_per_oio: number | null;
  intercept_ms: number | null;
  r2: number | null;
  points_used: number | null;
  fitted_at: string | null;
}

export interface DatastoreDetail extends DatastoreSummary {
  model: DeviceModel | null;
}

export interface ModelPoint {
  oio: number;
  latency_ms: number;
  t: string;
}

export interface LoadPoint {
  t: string;
  N: number;
  latency_ms?: number | null;
  iops?: number | null;
}

export interface WorkloadParams {
  oio: number;
  io_size_kb: number;
  read_pct: number;
  random_pct: number;
  L?: number;
  status?: string;
}

export interface SrpSettings {
  reservation: number;
  limit: number;
  shares: number;
  entitlement: number | null;
  demand?: number | null;
}

export interface DiskDetail {
  id: string;
  instance: string;
  label?: string;
  datastore: string;
  datastore_name?: string;
  size_gb: number;
  pool: string | null;
  model: WorkloadParams | null;
  srp: SrpSettings | null;
}

export interface VmDetail {
  id: string;
  name: string;
  host?: string | null;
  power_state?: string | null;
  pools?: string[];
  disks: DiskDetail[];
}

export interface DiskModelSeries {
  disk: string;
  points: ({ t: string } & WorkloadParams)[];
  p90: ({ t: string } & WorkloadParams)[];
  current?: WorkloadParams | null;
}

export interface LoadState {
  imbalance: number;
  normalized_load: Record<string, number>;
}

export interface Recommendation {
  id: string | number;
  pod?: string;
  created_at: string;
  before: LoadState;
  after: LoadState;
  moves: Move[];
}

export type PlanState = 'proposed' | 'approved' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface Plan {
  id: string | number;
  pod: string;
  state: PlanState | string;
  created_at: string;
  updated_at?: string | null;
  recommendation_id?: string | number | null;
  progress?: number | null;
  moves: Move[];
  message?: string | null;
}

export interface Controls {
  reservation?: number | string;
  limit?: number | string;
  shares?: number | string;
}

export interface PoolNode extends Controls {
  name?: string;
  vm?: string;
  disk?: string;
  children?: PoolNode[];
}

export interface PoolTreeDoc {
  name: string;
  datastore: string;
  version?: number;
  root: Controls;
  pools: PoolNode[];
}

export interface Entitlement {
  reservation: number;
  limit: number;
  shares: number;
  entitlement: number | null;
  demand: number | null;
  applied?: { reservation: number; limit: number; shares: number; at: string } | null;
}

export interface VmEntitlement extends Entitlement {
  vm: string;
  vm_id?: string;
  pool?: string | null;
  disks: ({ disk: string } & Entitlement)[];
}

export interface Entitlements {
  pool: string;
  datastore: string;
  array_iops: number | null;
  vms: VmEntitlement[];
  hosts: { host: string; queue_depth: number }[];
}

export interface Job {
  id: string;
  name: string;
  trigger: string;
  next_run: string | null;
  last_run: { started: string; finished: string | null; outcome: string; message: string | null } | null;
}

export interface RebalanceWindow {
  cron: string;
  timezone: string;
  duration: string;
  max_moves: number;
  max_gb: number;
}

export interface Schedules {
  jobs?: Job[];
  rebalance?: RebalanceWindow;
  pods?: { pod: string; rebalance: RebalanceWindow }[];
}

export interface AuditEntry {
  at: string;
  who: string;
  action: string;
  target: string;
  from: string;
  outcome: string;
  detail: unknown;
}
