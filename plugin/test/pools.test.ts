import { describe, expect, it } from 'vitest';
import type { Entitlements, PoolTreeDoc, Problem } from '../src/api/types';
import {
  addChild,
  childPath,
  diskEntitlement,
  docForSave,
  entitlementRows,
  flattenTree,
  getNode,
  parseControl,
  pathSteps,
  placeProblems,
  removeNode,
  updateNode,
} from '../src/shape/pools';
import { fixture } from './helpers';

// The service's own tree (recorded) for the shape, and a bigger one, written the way the SRP paper's
// examples are, for the edits.
const recorded = fixture<PoolTreeDoc[]>('pools.json')[0];
const tree: PoolTreeDoc = {
  name: 'pod-srp',
  datastore: '3diskLUN',
  version: 3,
  root: { reservation: 1500, limit: 'unlimited', shares: 1000 },
  pools: [
    { name: 'RP1', reservation: 600, shares: 'normal', children: [{ vm: 'oltp-1', reservation: 400 }, { vm: 'oltp-2' }] },
    { name: 'RP2', shares: 'high', children: [{ vm: 'ws-1', disk: 'scsi0:1', limit: 300 }, { tag: 'workload/web', limit: 200 }] },
  ],
};

describe('pool tree paths', () => {
  it('reads the paths the service names problems by', () => {
    expect(pathSteps('root')).toEqual([]);
    expect(pathSteps('pools[1]')).toEqual([1]);
    expect(pathSteps('pools[0].children[12]')).toEqual([0, 12]);
    expect(() => pathSteps('pools[0].name')).toThrow();
    expect(() => pathSteps('children[0]')).toThrow();
    expect(childPath('root', 2)).toBe('pools[2]');
    expect(childPath('pools[0]', 1)).toBe('pools[0].children[1]');
  });

  it('flattens the service’s tree', () => {
    const rows = flattenTree(recorded);
    expect(rows[0]).toMatchObject({ path: 'root', kind: 'root', label: recorded.name });
    expect(rows.map((r) => r.path)).toEqual(['root', 'pools[0]', 'pools[0].children[0]']);
    expect(rows[2].kind).toBe('vm');
  });

  it('flattens the tree depth-first with kinds and labels', () => {
    const rows = flattenTree(tree);
    expect(rows.map((r) => [r.path, r.depth, r.kind, r.label])).toEqual([
      ['root', 0, 'root', 'pod-srp'],
      ['pools[0]', 1, 'pool', 'RP1'],
      ['pools[0].children[0]', 2, 'vm', 'oltp-1'],
      ['pools[0].children[1]', 2, 'vm', 'oltp-2'],
      ['pools[1]', 1, 'pool', 'RP2'],
      ['pools[1].children[0]', 2, 'disk', 'ws-1 / scsi0:1'],
      ['pools[1].children[1]', 2, 'tag', 'workload/web'],
    ]);
  });
});

describe('editing', () => {
  it('changes one node without touching the original document', () => {
    const before = JSON.stringify(tree);
    const next = updateNode(tree, 'pools[0].children[0]', { reservation: 900, limit: 500 });
    expect(getNode(next, 'pools[0].children[0]')).toEqual({ vm: 'oltp-1', reservation: 900, limit: 500 });
    expect(JSON.stringify(tree)).toBe(before);
    expect(next.pools[1]).toBe(tree.pools[1]);
  });

  it('clears a field set to blank so the service default applies', () => {
    const next = updateNode(tree, 'root', { limit: undefined });
    expect(next.root).toEqual({ reservation: 1500, shares: 1000 });
  });

  it('adds and removes nodes', () => {
    const added = addChild(tree, 'pools[1]', { vm: 'ws-2' });
    expect(getNode(added, 'pools[1].children[2]')).toEqual({ vm: 'ws-2' });
    const top = addChild(tree, 'root', { name: 'RP3', children: [] });
    expect(top.pools).toHaveLength(3);
    const removed = removeNode(added, 'pools[0]');
    expect(removed.pools.map((p) => p.name)).toEqual(['RP2']);
    expect(() => removeNode(tree, 'root')).toThrow();
    expect(() => removeNode(tree, 'pools[7]')).toThrow();
  });

  it.each([
    ['', undefined],
    ['  400 ', 400],
    ['1e3', 1000],
    ['Unlimited', 'unlimited'],
    ['HIGH', 'high'],
    ['12abc', '12abc'],
    ['-5', -5],
  ])('reads %j as %j', (text, want) => {
    expect(parseControl(text)).toEqual(want);
  });

  it('sends a new tree without a version and an existing one with it, and nothing the service computed', () => {
    expect(docForSave({ ...tree, version: undefined })).not.toHaveProperty('version');
    expect(docForSave(tree).version).toBe(3);
    expect(Object.keys(docForSave(recorded)).sort()).toEqual(['datastore', 'name', 'pools', 'root', 'version']);
  });
});

describe('placing the service’s problems', () => {
  const problems = fixture<{ problems: Problem[] }>('pool_problems.json').problems;

  it('puts each problem on the node and field it names', () => {
    const placed = placeProblems(problems, tree);
    const at = (path: string) => (placed.byNode.get(path) ?? []).map((p) => p.field).sort();
    expect(at('pools[0].children[0]')).toEqual(['reservation', 'vm']);
    expect(at('pools[0]')).toEqual(['reservation']);
    expect(at('pools[1]')).toEqual(['name', 'shares']);
    expect(placed.general).toEqual([]);
    const placedCount = [...placed.byNode.values()].reduce((t, l) => t + l.length, 0);
    expect(placedCount).toBe(problems.length);
  });

  it('keeps problems without a node apart, and strips a file prefix', () => {
    const placed = placeProblems(
      [
        { field: 'datastore', message: "no datastore 'nope' in vCenter lab" },
        { field: 'POOLS.yaml:pools[1].shares', message: 'shares must be a number or low/normal/high' },
        { field: 'root.reservation', message: 'the roots reserve more than the datastore can' },
      ],
      tree,
    );
    expect(placed.general.map((p) => p.field)).toEqual(['datastore']);
    expect(placed.byNode.get('pools[1]')?.[0]).toEqual({ field: 'shares', message: 'shares must be a number or low/normal/high' });
    expect(placed.byNode.get('root')?.[0].field).toBe('reservation');
  });

  it('moves a problem of a node no longer in the tree up to its parent', () => {
    const placed = placeProblems([{ field: 'pools[0].children[5].limit', message: 'bad' }], tree);
    expect(placed.byNode.get('pools[0]')).toEqual([{ field: '', message: 'bad' }]);
  });
});

describe('entitlements', () => {
  const ent = fixture<Entitlements>('entitlements.json');

  it('lists pools, then each VM followed by its disks', () => {
    const rows = entitlementRows(ent);
    expect(rows.map((r) => r.kind)).toEqual([
      ...ent.pools.map(() => 'pool'),
      ...ent.vms.flatMap((vm) => ['vm', ...ent.disks.filter((d) => d.vm === vm.vm).map(() => 'disk')]),
    ]);
    const disk = rows.find((r) => r.kind === 'disk');
    expect(disk?.applied).toEqual(ent.disks[0].applied);
  });

  it('finds a disk’s entitlement among the VM’s trees', () => {
    const d = ent.disks[0];
    expect(diskEntitlement(d.disk, [ent])).toEqual({ tree: ent.name, ent: d, applied: d.applied });
    expect(diskEntitlement('vm-0:scsi9:9', [ent])).toBeNull();
  });
});
