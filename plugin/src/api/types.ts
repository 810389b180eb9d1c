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
  /** `now`: the vCenter's clock now (the clock the service's times are on), when the service reports it. */
  vcenters: { name: string; connected: boolean; last_collection: string | null; now?: string | null }[];
  /** The service's "now" on the clock of the times it sends (vCenter's), when it reports one. */
  now?: string | null;
}

/** The caller as the service sees it (GET /me). */
export interface Me {
  name: string;
  role: Role | string;
  via: string;
}

export interface VCenter {
  name: string;
  server?: string;
  connected?: boolean;
  instance_uuid?: string | null;
  last_collection?: string | null;
  last_error?: string | null;
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
  from_name?: string;
  to_name?: string;
  size_gb: number;
  reason_code: string;
  reason: string;
  from_N_before: number;
  from_N_after: number;
  to_N_before: number;
  to_N_after: number;
  imbalance_before: number;
  imbalance_after: number;
  /** In a recommendation: open until a plan takes the move. */
  status?: string | null;
  state?: string;
  progress?: number | null;
  task?: string | null;
  message?: string | null;
  finished_at?: string | null;
  /** What happened, as the service words it: moved, already_there, failed, skipped, cancelled, pending, running. */
  outcome?: string;
  started_at?: string | null;
  /** "swap": one half of a swap; both halves share swap_group and are applied together. */
  kind?: string;
  swap_group?: number | null;
  /** Goal slo only: the move's predicted effect per group. */
  slo?: SloMoveEffect;
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
  /** The newest applied plan's prediction error, measured an hour later (null until one is). */
  prediction_error?: PredictionError | null;
}

export interface PodDetail extends PodSummary {
  /** Moves not started yet (the service's name; `pending_moves` is their count). */
  pending?: Move[];
  recent_moves?: Move[];
}

/** One modelling round of a pod: its imbalance and each datastore's normalized load N. */
export interface HistoryPoint {
  t: string;
  imbalance: number | null;
  normalized_load: Record<string, number | null>;
}

export interface PodHistory {
  pod: string;
  hours?: number;
  points: HistoryPoint[];
}

export interface DeviceModel {
  status: string;
  P: number | null;
  slope_ms_per_oio: number | null;
  intercept_ms: number | null;
  r2: number | null;
  points_used: number | null;
  points_filtered?: number | null;
  summary?: string | null;
  fitted_at: string | null;
}

export interface DatastoreDetail extends DatastoreSummary {
  model: DeviceModel | null;
}

export interface ModelPoint {
  oio: number;
  latency_ms: number;
  iops?: number | null;
  t: string;
}

export interface LoadPoint {
  t: string;
  normalized_load: number | null;
  load_sum_L?: number | null;
}

/** BASIL's workload model of a disk: the four parameters (90th percentiles) and the load L (eq. 1). */
export interface WorkloadParams {
  oio: number;
  io_size_kb: number;
  read_pct: number;
  random_pct: number;
  L?: number | null;
  samples?: number;
  flags?: string[];
  fitted_at?: string | null;
}

/** A disk's storageIOAllocation: limit -1 is unlimited. */
export interface IoAllocation {
  reservation: number;
  limit: number;
  shares: number;
  shares_level?: string;
}

export interface AppliedSetting {
  reservation: number;
  limit: number;
  shares: number;
  issued_at?: string | null;
  outcome?: string;
  message?: string | null;
}

export interface DiskDetail {
  id: string;
  instance: string;
  label?: string;
  datastore: string;
  datastore_name?: string;
  size_gb: number;
  model: WorkloadParams | null;
  /** What vCenter has now. */
  io?: IoAllocation | null;
  /** What Basil's SRP loop last issued. */
  applied?: AppliedSetting | null;
  latest?: { t: string; iops: number | null; latency_ms: number | null; oio: number | null } | null;
}

export interface VmPoolRef {
  pool_tree: string;
  datastore: string;
}

export interface VmDetail {
  id: string;
  name: string;
  host?: string | null;
  host_name?: string | null;
  power_state?: string | null;
  pools?: VmPoolRef[];
  disks: DiskDetail[];
}

export interface DiskModelSeries {
  disk: string;
  percentile?: number;
  hours?: number;
  /** Successive fits of the workload model (each the 90th percentiles of its window). */
  points: ({ t: string } & WorkloadParams)[];
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
  threshold?: number;
  stop_reason?: string | null;
  notes?: string[];
  /** False once a move changed the placement it was computed from: it can no longer become a plan. */
  valid?: boolean;
  state?: 'current' | 'stale' | 'planned' | 'dismissed' | 'superseded';
  stale_reason?: string | null;
  models_changed?: boolean;
  /** Disks that would lower the imbalance had they been free to move (why the pod stays over its threshold). */
  pinned_blocking?: PinnedBlocking[];
  pinned_blocking_total?: number;
  /** Only for a pod with goal slo (docs/slo.md, OpenAPI SloRound). */
  slo?: SloRound;
}

/** One priority group of the SLO goal in one round; response times are reads, in ms. */
export interface SloGroup {
  name: string;
  drt_ms: number;
  /** How many disks the group has in the pod. */
  disks: number;
  iops: number;
  measured_ms: number | null;
  predicted_ms_before: number | null;
  predicted_ms_after: number | null;
  damage_before: number;
  damage_after: number;
  measured_damage: number;
  /** The share of the group's measured active disks within the DRT (0…1), null when none is measured. */
  measured_within_drt?: number | null;
  within_drt_after: boolean;
  miss_ms: number;
}

/** One priority group at one round of the pod's SLO series (GET /pods/{pod}/slo/history). */
export interface SloHistoryGroup {
  name: string;
  drt_ms: number;
  disks?: number;
  measured_ms: number | null;
  predicted_ms_before: number | null;
  predicted_ms_after: number | null;
  damage_before: number | null;
  damage_after: number | null;
  measured_damage: number | null;
  measured_within_drt: number | null;
}

export interface SloHistoryPoint {
  /** vCenter's clock. */
  at: string;
  round_id: string | null;
  damage_before: number;
  damage_after: number;
  measured_damage: number | null;
  groups: SloHistoryGroup[];
}

/** A pod's SLO series, one point per round, oldest first (docs/slo.md). */
export interface SloHistory {
  pod: string;
  goal: string;
  points: SloHistoryPoint[];
}

/** The SLO section of a round (a recommendation of a pod with goal slo). */
export interface SloRound {
  goal: 'slo';
  queue_model: 'priority' | 'fcfs' | string;
  utilisation_cap_pct: number;
  damage_before: number;
  damage_after: number;
  groups: SloGroup[];
  unmet: string[];
  priorities: Record<string, number>;
  datastores: Record<string, Record<string, unknown>>;
}

/** An SLO move's predicted effect on the groups with disks on its source or target. */
export interface SloMoveEffect {
  damage_before: number;
  damage_after: number;
  groups: { group: string; rt_ms_before: number | null; rt_ms_after: number | null }[];
}

export interface PinnedBlocking {
  vm: string;
  vm_name?: string;
  disks: string[];
  datastore?: string;
  datastore_name?: string;
  code: 'ping_pong' | 'excluded_vm' | 'anti_affinity' | string;
  reason: string;
  best_target?: string;
  best_target_name?: string;
  imbalance_if_moved?: number;
}

/** An applied plan's prediction error an hour later (vCenter time); fractions, e.g. 0.12 = 12 %. */
export interface PredictionError {
  plan?: number;
  due_at?: string | null;
  latency_median_abs: number | null;
  read_latency_median_abs?: number | null;
  iops_median_abs: number | null;
  imbalance_abs: number | null;
  imbalance_rel: number | null;
}

export interface PredictionFigures {
  latency_ms: number | null;
  read_latency_ms?: number | null;
  iops: number | null;
}

export interface PredictionCheck {
  plan: number;
  pod: string;
  state: 'waiting' | 'measured' | string;
  finished_at: string;
  due_at: string;
  measured_at?: string | null;
  moves?: number | null;
  imbalance: { predicted: number | null; predicted_by_round?: number | null; measured: number | null };
  error: PredictionError | null;
  datastores: {
    datastore: string;
    name: string;
    model?: string | null;
    predicted: PredictionFigures | null;
    measured: PredictionFigures | null;
    error: { latency: number | null; read_latency?: number | null; iops: number | null } | null;
  }[];
}

export type PlanState = 'proposed' | 'approved' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface Plan {
  id: string | number;
  pod: string;
  state: PlanState | string;
  created_at: string;
  created_by?: string | null;
  started_at?: string | null;
  finished_at?: string | null;
  updated_at?: string | null;
  recommendation_id?: string | number | null;
  progress?: number | null;
  size_gb?: number | null;
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
  /** A tag leaf: `category/name`, every VM carrying the vSphere tag (the service expands it). */
  tag?: string;
  children?: PoolNode[];
}

export interface PoolTreeDoc {
  name: string;
  /** The datastore's name (or id) the tree divides. */
  datastore: string;
  version?: number;
  root: Controls;
  pools: PoolNode[];
  sioc?: boolean;
  datastore_id?: string;
  vcenter?: string;
  updated_at?: string | null;
  updated_by?: string | null;
}

/** SRP's result for a pool, VM or disk: limit null is unlimited. */
export interface Entitlement {
  reservation: number;
  limit: number | null;
  shares: number;
  entitlement: number | null;
  demand: number | null;
}

export interface Entitlements {
  name: string;
  datastore: string;
  computed_at?: string | null;
  measured_at?: string | null;
  array_iops: number | null;
  queue_depth?: number | null;
  latency_threshold_ms?: number | null;
  hosts: { host: string; queue_depth: number }[];
  pools: ({ pool: string } & Entitlement)[];
  vms: ({ vm: string; vm_id?: string } & Entitlement)[];
  disks: ({ disk: string; vm: string; applied?: AppliedSetting | null } & Entitlement)[];
}

export interface Job {
  id: string;
  name: string;
  description?: string;
  enabled?: boolean;
  trigger: string;
  next_run: string | null;
  last_run: { started: string; finished: string | null; outcome: string; message: string | null } | null;
}

/** A run of a job: `running` until it ends (`succeeded`, `failed` or `skipped`). */
export interface JobRun {
  id?: number;
  job: string;
  started?: string | null;
  finished?: string | null;
  outcome: string;
  message?: string | null;
  details?: Record<string, unknown>;
}

export interface RebalanceWindow {
  enabled?: boolean;
  cron: string;
  timezone: string;
  duration: string;
  duration_s?: number;
  max_moves: number;
  max_gb: number;
  next_window?: { start: string; end: string } | null;
  /** The fields changed through `PUT /schedules/rebalance`, kept by Basil across restarts and applied over
   * basil.yaml's window; null while basil.yaml's window is in force. */
  changed?: { fields: Record<string, unknown>; at: string; by: string } | null;
}

export interface Schedules {
  collect_s?: number;
  model_s?: number;
  recommend_s?: number;
  srp_s?: number;
  rebalance?: RebalanceWindow;
  pods?: Record<string, { mode?: string; rebalance: RebalanceWindow }>;
}

export interface AuditEntry {
  id?: number;
  at: string;
  who: string;
  via?: string;
  action: string;
  target: string;
  from: string;
  outcome: string;
  message?: string | null;
  detail: unknown;
}

/** A page of a list endpoint (GET /datastores, /vms, /disks): `next_cursor` is null on the last page. */
export interface ListPage<T> {
  items: T[];
  next_cursor: string | null;
}

/** The filters, sort and paging of the list endpoints; every field is optional. */
export interface ListQuery {
  pod?: string;
  datastore?: string;
  vm?: string;
  /** A substring of the name. */
  q?: string;
  tag?: string;
  /** A field name, `-` in front for descending: `name`, `-name`. */
  sort?: string;
  limit?: number;
  cursor?: string | null;
}

export interface NamedRef {
  id: string;
  name: string;
}

export interface DatastoreItem {
  id: string;
  name: string;
  pod: string | null;
  vcenter?: string;
  capacity_gb?: number | null;
  free_gb?: number | null;
  latency_ms?: number | null;
  normalized_load?: number | null;
  P?: number | null;
  iops?: number | null;
}

export interface VmItem {
  id: string;
  name: string;
  pod?: string | null;
  vcenter?: string;
  datastores: NamedRef[];
  /** How many virtual disks the VM has. */
  disks: number;
  size_gb?: number | null;
  iops?: number | null;
  latency_ms?: number | null;
  power_state?: string | null;
}

export interface DiskItem {
  id: string;
  /** The controller and unit (`scsi0:1`). */
  unit?: string;
  label?: string;
  vm: NamedRef;
  datastore: NamedRef;
  pod?: string | null;
  size_gb?: number | null;
  iops?: number | null;
  read_iops?: number | null;
  write_iops?: number | null;
  latency_ms?: number | null;
  read_latency_ms?: number | null;
  write_latency_ms?: number | null;
}

/** One disk's predicted figures in a consolidation what-if; null where a figure is undefined. */
export interface WhatIfWorkload {
  name: string;
  group?: string;
  read_iops: number | null;
  write_iops: number | null;
  iops: number | null;
  read_latency_ms: number | null;
  write_latency_ms: number | null;
  /** Writes taken as acknowledged by a write-back cache: they keep their latency. */
  write_cached?: boolean;
  /** At most 25 % random IO. */
  sequential?: boolean;
  /** Δ: what interleaving with the other disks' streams adds to each of its IOs (ms). */
  positioning_added_ms?: number | null;
  /** What the change in the devices' destage load adds to its reads (ms). */
  destage_added_ms?: number | null;
  /** The write cache is full (`cache_full`): its cached writes wait `admission_wait_ms` for it, or go
   * through to the devices (`write_through`). */
  write_waits?: boolean;
  /** A disk measured with the cache full (`full_where_measured`) is beside it: its cached writes go
   * through to the devices, the RAID write penalty in the foreground. */
  write_through?: boolean;
  /** H(w): its reads split over w devices (its read size over the stripe unit) wait for the slowest,
   * this many times what a one-unit read adds (1: within one unit, or size unknown). */
  fork_join?: number | null;
  /** "measured alone", or "never measured alone: <why the estimate is weaker>". */
  confidence: string;
}

/** What the prediction started from: each disk's newest measurement where it runs now. */
export interface WhatIfInput {
  name: string;
  group?: string;
  read_iops: number;
  write_iops: number;
  read_latency_ms: number;
  write_latency_ms: number;
  read_oio?: number | null;
  write_oio?: number | null;
  oio_source?: string;
  alone?: boolean;
  /** Share of its IOs that seek (vscsiStats); null: unknown. */
  random_pct?: number | null;
  /** Mean read and write size (KB, virtualDisk.readIOSize/writeIOSize); null: unknown. */
  read_io_kb?: number | null;
  write_io_kb?: number | null;
}

/** POST /datastores/{id}/whatif: every disk on the datastore once the chosen ones moved there. */
export interface WhatIfAnswer {
  datastore: string;
  datastore_name?: string;
  moved: string[];
  max_conn_source: string;
  read_mix: number | null;
  write_mix: number | null;
  read_iops: number | null;
  write_iops: number | null;
  overhead_factor?: number | null;
  max_conn?: number | null;
  write_share?: number | null;
  /** Eq. 1–2 of the paper (the isolation throughputs' mix), beside the predicted mix. */
  paper_read_mix?: number | null;
  paper_write_mix?: number | null;
  /** Eq. 3–4 of the paper, beside the predicted read and write IOPS. */
  paper_read_iops?: number | null;
  paper_write_iops?: number | null;
  /** m: requests the device serves at once, and where it came from. */
  parallelism?: number | null;
  parallelism_source?: string;
  /** Writes at most this slow alone are taken as cached (null: never). */
  write_cache_ms?: number | null;
  /** t_pos: a lone random IO's latency, what an interleaved sequential IO pays; null: not corrected. */
  positioning_ms?: number | null;
  positioning_source?: string;
  /** k: device operations per destaged small write (RAID write penalty); null: cached writes free. */
  write_cost?: number | null;
  write_cost_source?: string;
  /** c: the devices' time (ms, per server) of one destaged write, from the device model with its
   * disks' destaging separated, given, a stand-in, or t_pos / m; null without t_pos. */
  destage_ms?: number | null;
  destage_source?: string;
  /** The RAID stripe unit taken (KB; 64 assumed: vCenter does not report it); null: IO sizes not used. */
  stripe_kb?: number | null;
  stripe_source?: string;
  /** ΔU: what interleaving adds to the devices' share of time destaging cached writes. */
  destage_util?: number | null;
  /** ΔU at its bound, or the cache full. */
  destage_saturated?: boolean;
  /** ΔU the cached writes would need with the cache keeping up (above the bound: it fills). */
  destage_demand?: number | null;
  /** The destage demand exceeds what the devices give it: the cache fills, and cached writes are
   * admitted at the rate the devices destage (ΔU at its bound). */
  cache_full?: boolean;
  /** Disks whose writes were slower than a cache hit where they ran: the cache was full there. */
  full_where_measured?: string[];
  /** Disks whose cached writes were slower than two cache hits where they ran: the cache was at its
   * limit there, and beside disks of another group it fills. */
  edge_where_measured?: string[];
  /** The write IOPS the full cache admits, of the disks whose writes wait (0 when it keeps up). */
  admitted_write_iops?: number | null;
  /** What a cached write waits for the full cache to take it (ms; 0 when it keeps up). */
  admission_wait_ms?: number | null;
  workloads: WhatIfWorkload[];
  inputs: WhatIfInput[];
}

/** The trace upload of `PUT /vms/{id}/trace`: the trace's text and the target it must meet. */
export interface VmTraceUpload {
  trace: string;
  format?: 'spc' | 'csv';
  /** f in (0, 1]: the fraction of IOs that must finish within the bound. */
  fraction: number;
  bound_ms: number;
}

/** `GET /vms/{id}/reservation`: the SRP reservation a VM's uploaded trace needs, beside its pool settings. */
export interface VmReservation {
  vm: string;
  vm_name: string;
  suggestion: {
    /** capacity_iops rounded up to a whole IOPS. */
    reservation_iops: number;
    rounding: string;
    fraction: number;
    bound_ms: number;
    capacity_iops: number;
    capacity_full_iops: number;
    overflow_fraction?: number | null;
    curve: { fraction: number; capacity_iops: number }[];
    trace: {
      requests?: number;
      duration_s?: number;
      mean_iops?: number | null;
      read_fraction?: number | null;
      mean_size_bytes?: number | null;
      reordered?: boolean;
      format?: string;
    };
    uploaded_at: string | null;
    uploaded_by: string;
  } | null;
  srp: {
    pool_tree: string;
    datastore: string;
    pool: string | null;
    reservation: number;
    limit: number | null;
    shares: number;
    leaves: { leaf: string; disk?: string | null; pool: string | null; reservation: number; limit: number | null; shares: number }[];
    dynamic: {
      reservation: number;
      limit: number | null;
      shares: number;
      entitlement: number;
      demand: number;
      computed_at?: string | null;
    } | null;
  } | null;
  /** Whether the tree's reservation is at least the capacity for the target (null without a trace or a tree). */
  meets_target: boolean | null;
}
