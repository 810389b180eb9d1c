// The SRP pool tree as the editor sees it: rows addressed by the same paths the service's validation
// names (`pools[0].children[1].limit`), immutable edits, and the service's problems placed on their rows.

import type { AppliedSetting, Controls, Entitlement, Entitlements, PoolNode, PoolTreeDoc, Problem } from '../api/types';

/** A node's address: 'root', or 'pools[i]' followed by '.children[j]' steps. */
export type NodePath = string;

export interface PoolRow {
  path: NodePath;
  depth: number;
  kind: 'root' | 'pool' | 'vm' | 'disk' | 'tag';
  label: string;
  node: PoolNode | Controls;
}

export function pathSteps(path: NodePath): number[] {
  if (path === 'root') return [];
  const steps: number[] = [];
  const re = /(?:^pools|\.children)\[(\d+)\]/g;
  let consumed = 0;
  for (let m = re.exec(path); m !== null; m = re.exec(path)) {
    if (m.index !== consumed) throw new Error(`not a pool path: ${path}`);
    steps.push(Number(m[1]));
    consumed = m.index + m[0].length;
  }
  if (consumed !== path.length || steps.length === 0) throw new Error(`not a pool path: ${path}`);
  return steps;
}

export function childPath(parent: NodePath, index: number): NodePath {
  return parent === 'root' ? `pools[${index}]` : `${parent}.children[${index}]`;
}

function kindOf(node: PoolNode): PoolRow['kind'] {
  if (node.vm !== undefined) return node.disk ? 'disk' : 'vm';
  if (node.tag !== undefined) return 'tag';
  return 'pool';
}

function labelOf(node: PoolNode): string {
  if (node.vm !== undefined) return node.disk ? `${node.vm} / ${node.disk}` : node.vm;
  if (node.tag !== undefined) return node.tag;
  return node.name ?? '(unnamed pool)';
}

/** The tree in display order: root, then each pool followed by its children, depth-first. */
export function flattenTree(doc: PoolTreeDoc): PoolRow[] {
  const rows: PoolRow[] = [{ path: 'root', depth: 0, kind: 'root', label: doc.name, node: doc.root ?? {} }];
  const walk = (nodes: PoolNode[] | undefined, parent: NodePath, depth: number) => {
    (nodes ?? []).forEach((node, i) => {
      const path = childPath(parent, i);
      rows.push({ path, depth, kind: kindOf(node), label: labelOf(node), node });
      if (kindOf(node) === 'pool') walk(node.children, path, depth + 1);
    });
  };
  walk(doc.pools, 'root', 1);
  return rows;
}

export function getNode(doc: PoolTreeDoc, path: NodePath): PoolNode | Controls | undefined {
  if (path === 'root') return doc.root;
  let list: PoolNode[] | undefined = doc.pools;
  let node: PoolNode | undefined;
  for (const i of pathSteps(path)) {
    node = list?.[i];
    if (!node) return undefined;
    list = node.children;
  }
  return node;
}

/** A copy of the list with the node at `steps` replaced by `fn(node)` (or removed when fn returns null). */
function rewrite(list: PoolNode[], steps: number[], fn: (node: PoolNode) => PoolNode | null): PoolNode[] {
  const [i, ...rest] = steps;
  if (i === undefined || i < 0 || i >= list.length) throw new Error('no such pool node');
  const out = list.slice();
  if (rest.length === 0) {
    const replaced = fn(list[i]);
    if (replaced === null) out.splice(i, 1);
    else out[i] = replaced;
    return out;
  }
  out[i] = { ...list[i], children: rewrite(list[i].children ?? [], rest, fn) };
  return out;
}

/** Sets (or, with an empty value, clears) fields of a node. */
export function updateNode(doc: PoolTreeDoc, path: NodePath, patch: Partial<PoolNode>): PoolTreeDoc {
  const apply = <T extends object>(node: T): T => {
    const next = { ...node } as Record<string, unknown>;
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined || v === '') delete next[k];
      else next[k] = v;
    }
    return next as T;
  };
  if (path === 'root') return { ...doc, root: apply(doc.root ?? {}) };
  return { ...doc, pools: rewrite(doc.pools ?? [], pathSteps(path), (n) => apply(n)) };
}

export function addChild(doc: PoolTreeDoc, parent: NodePath, child: PoolNode): PoolTreeDoc {
  if (parent === 'root') return { ...doc, pools: [...(doc.pools ?? []), child] };
  return {
    ...doc,
    pools: rewrite(doc.pools ?? [], pathSteps(parent), (n) => ({ ...n, children: [...(n.children ?? []), child] })),
  };
}

export function removeNode(doc: PoolTreeDoc, path: NodePath): PoolTreeDoc {
  if (path === 'root') throw new Error('the root of a pool tree cannot be removed');
  return { ...doc, pools: rewrite(doc.pools ?? [], pathSteps(path), () => null) };
}

/**
 * Turns what was typed into a control's value: blank clears it (the service's default applies),
 * 'unlimited' and share levels stay words, numbers become numbers, anything else is sent as typed so
 * that the service names the problem.
 */
export function parseControl(text: string): number | string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const lower = t.toLowerCase();
  if (['unlimited', 'low', 'normal', 'high'].includes(lower)) return lower;
  const n = Number(t);
  return Number.isFinite(n) && /^[-+]?\d*\.?\d+(e[-+]?\d+)?$/i.test(t) ? n : t;
}

export function controlText(v: number | string | undefined): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'number' && v < 0) return 'unlimited';
  return String(v);
}

export interface PlacedProblems {
  /** Problems per node path, each with the field inside the node ('limit', 'name', '' for the node). */
  byNode: Map<NodePath, { field: string; message: string }[]>;
  /** Problems that name no node of the tree (the document as a whole, the datastore, the name...). */
  general: Problem[];
}

// A problem field may carry a source prefix ("POOLS.yaml:pools[0].limit"); the node path is the longest
// run of pools[..] / .children[..] steps, and what follows it names the field in that node.
const NODE_PATH = /^(?:[^:]*:)?(root|pools\[\d+\](?:\.children\[\d+\])*)(?:\.(.+))?$/;

export function placeProblems(problems: Problem[], doc: PoolTreeDoc | null = null): PlacedProblems {
  const byNode = new Map<NodePath, { field: string; message: string }[]>();
  const general: Problem[] = [];
  const known = doc ? new Set(flattenTree(doc).map((r) => r.path)) : null;
  for (const p of problems) {
    const m = NODE_PATH.exec(p.field ?? '');
    let path = m?.[1];
    let field = m?.[2] ?? '';
    // A problem under a node that is not in the tree (it was just removed) falls back to its parent.
    while (path && known && !known.has(path)) {
      const cut = path.lastIndexOf('.children[');
      field = '';
      path = cut < 0 ? undefined : path.slice(0, cut);
    }
    if (!path) {
      general.push(p);
      continue;
    }
    const list = byNode.get(path) ?? [];
    list.push({ field, message: p.message });
    byNode.set(path, list);
  }
  return { byNode, general };
}

/** A new, empty pool tree for a datastore. */
export function emptyTree(name: string, datastore: string): PoolTreeDoc {
  return { name, datastore, root: {}, pools: [] };
}

/** The document as the API takes it (no version for a new tree). */
export function docForSave(doc: PoolTreeDoc): PoolTreeDoc {
  const out: PoolTreeDoc = { name: doc.name, datastore: doc.datastore, root: doc.root ?? {}, pools: doc.pools ?? [] };
  if (doc.sioc !== undefined) out.sioc = doc.sioc;
  if (doc.version !== undefined) out.version = doc.version;
  return out;
}

export interface EntitlementRow {
  kind: 'pool' | 'vm' | 'disk';
  label: string;
  ent: Entitlement;
  applied: AppliedSetting | null;
}

/** The live entitlements as table rows: the pools, then each VM followed by its disks. */
export function entitlementRows(e: Entitlements): EntitlementRow[] {
  const rows: EntitlementRow[] = (e.pools ?? []).map((p) => ({ kind: 'pool', label: p.pool, ent: p, applied: null }));
  const seen = new Set<string>();
  for (const vm of e.vms ?? []) {
    rows.push({ kind: 'vm', label: vm.vm, ent: vm, applied: null });
    for (const d of (e.disks ?? []).filter((x) => x.vm === vm.vm)) {
      seen.add(d.disk);
      rows.push({ kind: 'disk', label: d.disk, ent: d, applied: d.applied ?? null });
    }
  }
  // Disks of a VM the service did not list on its own still show.
  for (const d of (e.disks ?? []).filter((x) => !seen.has(x.disk))) {
    rows.push({ kind: 'disk', label: d.disk, ent: d, applied: d.applied ?? null });
  }
  return rows;
}

/** The entitlement of one disk (vm-17:scsi0:1) in a set of trees' entitlements, or null. */
export function diskEntitlement(
  disk: string,
  all: Entitlements[],
): { tree: string; ent: Entitlement; applied: AppliedSetting | null } | null {
  for (const e of all) {
    const d = (e.disks ?? []).find((x) => x.disk === disk);
    if (d) return { tree: e.name, ent: d, applied: d.applied ?? null };
  }
  return null;
}

export interface EntitlementTreeRow {
  kind: 'pool' | 'vm' | 'disk' | 'tag';
  label: string;
  depth: number;
  /** The entitlement SRP computed for the row; null where it computed none (a tag row, or before its first run). */
  ent: Entitlement | null;
  applied: AppliedSetting | null;
  /** The VM's id for a link to its view (VM and disk rows). */
  vmId: string | null;
}

type VmEnt = Entitlements['vms'][number];
type DiskEnt = Entitlements['disks'][number];

function leafMatches(leaf: string, vm: VmEnt): boolean {
  return vm.vm === leaf || vm.vm_id === leaf || (vm.vm_id ?? '').endsWith(`:${leaf}`);
}

/**
 * The live entitlements as the tree they are: each pool with its pools and VMs nested under it (a VM
 * under the pool whose leaf names it), each VM with its disks. VMs reached through a tag sit under that
 * tag's row when the tree has one tag leaf; otherwise, and for any VM no leaf names, under "other VMs".
 */
export function entitlementTree(doc: PoolTreeDoc, e: Entitlements): EntitlementTreeRow[] {
  const rows: EntitlementTreeRow[] = [];
  const vms = e.vms ?? [];
  const disks = e.disks ?? [];
  const placed = new Set<string>();
  const pushVm = (vm: VmEnt, depth: number, only?: string) => {
    placed.add(vm.vm);
    const id = vm.vm_id ?? null;
    rows.push({ kind: 'vm', label: vm.vm, depth, ent: vm, applied: null, vmId: id });
    const own = disks.filter((d: DiskEnt) => d.vm === vm.vm && (only === undefined || d.disk.endsWith(`:${only}`)));
    for (const d of own) rows.push({ kind: 'disk', label: d.disk, depth: depth + 1, ent: d, applied: d.applied ?? null, vmId: id });
  };
  const tagRows: number[] = [];
  const walk = (nodes: PoolNode[] | undefined, depth: number) => {
    for (const node of nodes ?? []) {
      if (node.vm !== undefined) {
        const vm = vms.find((v) => !placed.has(v.vm) && leafMatches(node.vm ?? '', v));
        if (vm) pushVm(vm, depth, node.disk || undefined);
      } else if (node.tag !== undefined) {
        tagRows.push(rows.length);
        rows.push({ kind: 'tag', label: node.tag, depth, ent: null, applied: null, vmId: null });
      } else {
        const name = node.name ?? '';
        const ent = (e.pools ?? []).find((p) => p.pool === name) ?? null;
        rows.push({ kind: 'pool', label: name || '(unnamed pool)', depth, ent, applied: null, vmId: null });
        walk(node.children, depth + 1);
      }
    }
  };
  walk(doc.pools, 0);
  const rest = vms.filter((v) => !placed.has(v.vm));
  if (rest.length > 0) {
    if (tagRows.length === 1) {
      // Insert after the tag's row: build the VM rows apart, then splice them in.
      const at = tagRows[0];
      const depth = rows[at].depth + 1;
      const before = rows.splice(at + 1);
      for (const vm of rest) pushVm(vm, depth);
      rows.push(...before);
    } else {
      rows.push({ kind: 'pool', label: tagRows.length > 1 ? 'VMs reached through tags' : 'other VMs', depth: 0, ent: null, applied: null, vmId: null });
      for (const vm of rest) pushVm(vm, 1);
    }
  }
  // Disks of a VM the service did not list on its own still show, at the end.
  const shown = new Set(rows.filter((r) => r.kind === 'disk').map((r) => r.label));
  for (const d of disks.filter((x) => !shown.has(x.disk))) {
    rows.push({ kind: 'disk', label: d.disk, depth: 1, ent: d, applied: d.applied ?? null, vmId: null });
  }
  return rows;
}
